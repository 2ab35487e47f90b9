// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rdx-dev/rdx/operator/internal/benchreport"
)

// Keys of the Benchmark's results ConfigMap the plugin reads.
const (
	reportKey  = "report.html"
	resultsKey = "results.json"
)

// fieldManager names the plugin in managedFields of what it creates.
const fieldManager = "kubectl-rdx"

// benchRun creates every Benchmark in file and, with watch, follows each until it ends.
func (a *app) benchRun(ctx context.Context, file string, watch bool, timeout time.Duration) error {
	objs, err := a.readBenchmarks(file)
	if err != nil {
		return err
	}
	var created []*unstructured.Unstructured
	for _, obj := range objs {
		res, err := a.dyn.Resource(benchmarkGVR).Namespace(obj.GetNamespace()).Create(ctx, obj,
			metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("create benchmark.rdx.dev/%s in namespace %s: %w", displayName(obj), obj.GetNamespace(),
				err)
		}
		fmt.Fprintf(a.stdout, "benchmark.rdx.dev/%s created\n", res.GetName())
		created = append(created, res)
	}
	if !watch {
		return nil
	}
	var errs []error
	for _, b := range created {
		if len(created) > 1 {
			fmt.Fprintf(a.stdout, "--- %s\n", b.GetName())
		}
		if err := a.benchWatch(ctx, b.GetNamespace(), b.GetName(), timeout); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readBenchmarks decodes the YAML or JSON documents (or Lists) of file into Benchmarks in their namespace.
// Anything that is not an rdx.dev/v1alpha1 Benchmark is refused before anything is created.
func (a *app) readBenchmarks(file string) ([]*unstructured.Unstructured, error) {
	var r io.Reader = a.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if len(m) == 0 {
			continue // an empty document, e.g. after a trailing ---
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			if err := u.EachListItem(func(o runtime.Object) error {
				objs = append(objs, o.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
			}
			continue
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s holds no objects", file)
	}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != benchmarkGVR.Group || gvk.Kind != "Benchmark" {
			return nil, fmt.Errorf("%s: object %d is a %s (apiVersion %q); bench run creates only Benchmarks "+
				"(apiVersion %s, kind Benchmark)", file, i+1, orDash(gvk.Kind), o.GetAPIVersion(),
				benchmarkGVR.GroupVersion())
		}
		if gvk.Version != benchmarkGVR.Version {
			return nil, fmt.Errorf("%s: Benchmark %s has apiVersion %s; this plugin knows %s", file,
				displayName(o), o.GetAPIVersion(), benchmarkGVR.GroupVersion())
		}
		if o.GetName() == "" && o.GetGenerateName() == "" {
			return nil, fmt.Errorf("%s: Benchmark %d has neither metadata.name nor metadata.generateName", file, i+1)
		}
		switch ns := o.GetNamespace(); {
		case ns == "":
			o.SetNamespace(a.namespace)
		case ns != a.namespace && a.explicitNamespace:
			return nil, fmt.Errorf("%s: Benchmark %s names namespace %q but --namespace is %q", file,
				displayName(o), ns, a.namespace)
		}
	}
	return objs, nil
}

func displayName(o *unstructured.Unstructured) string {
	if o.GetName() != "" {
		return o.GetName()
	}
	return o.GetGenerateName() + "*"
}

// getFunc reads the object being watched; the watch loop takes it as a function so that scripted sequences of
// states and read errors can be played to it.
type getFunc func(ctx context.Context) (*unstructured.Unstructured, error)

func (a *app) benchWatch(ctx context.Context, namespace, name string, timeout time.Duration) error {
	get := func(ctx context.Context) (*unstructured.Unstructured, error) {
		return a.dyn.Resource(benchmarkGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	w := watcher{name: name, namespace: namespace, get: get, interval: a.pollInterval, now: a.now,
		stdout: a.stdout, stderr: a.stderr}
	return w.run(ctx, timeout)
}

// watcher follows one Benchmark by reading it every interval. Polling once a second costs the API server little,
// survives dropped connections and expired watches without relisting, and its one second of delay is nothing
// against runs that take minutes.
type watcher struct {
	name, namespace string
	get             getFunc
	interval        time.Duration
	now             func() time.Time
	stdout, stderr  io.Writer
}

// progress is what a watch line shows; a line is printed whenever it changes.
type progress struct {
	phase, progress, throughput, p99, verdict string
}

func progressOf(o *unstructured.Unstructured) progress {
	return progress{
		phase:      str(o, "status", "phase"),
		progress:   str(o, "status", "progress"),
		throughput: str(o, "status", "throughput"),
		p99:        str(o, "status", "p99"),
		verdict:    str(o, "status", "checker", "verdict"),
	}
}

func (p progress) line(t time.Time) string {
	return fmt.Sprintf("%s  %s  %s  %s  p99 %s  verdict %s", t.Format("15:04:05"), orDash(p.phase),
		orDash(p.progress), orDash(p.throughput), orDash(p.p99), orDash(p.verdict))
}

// run prints a line for the first state and for every change, and returns nil once the Benchmark Succeeded, an
// error once it Failed (with its Ready condition's message), disappeared or the timeout passed. Other errors
// reading it are reported once each and retried: an API server restart must not end a two-hour watch.
func (w *watcher) run(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	var last *progress
	lastErr := ""
	for {
		obj, err := w.get(ctx)
		switch {
		case err == nil:
			lastErr = ""
			p := progressOf(obj)
			if last == nil || p != *last {
				fmt.Fprintln(w.stdout, p.line(w.now()))
				last = &p
			}
			switch p.phase {
			case "Succeeded":
				return nil
			case "Failed":
				msg := readyMessage(obj)
				if msg == "" {
					msg = "no message in its Ready condition"
				}
				return fmt.Errorf("benchmark %s failed: %s", w.name, msg)
			}
		case apierrors.IsNotFound(err):
			if last != nil {
				return fmt.Errorf("benchmark %s was deleted while being watched", w.name)
			}
			return fmt.Errorf("benchmark.rdx.dev %q not found in namespace %q", w.name, w.namespace)
		case ctx.Err() == nil && err.Error() != lastErr:
			lastErr = err.Error()
			fmt.Fprintf(w.stderr, "warning: reading benchmark %s: %v (retrying)\n", w.name, err)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				phase := "unknown"
				if last != nil {
					phase = orDash(last.phase)
				}
				return fmt.Errorf("timed out after %s waiting for benchmark %s to finish (phase %s)", timeout,
					w.name, phase)
			}
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// readyMessage is the message of o's Ready condition.
func readyMessage(o *unstructured.Unstructured) string {
	for _, c := range conditions(o) {
		if c.typ == "Ready" {
			return c.message
		}
	}
	return ""
}

type condition struct{ typ, status, reason, message string }

func conditions(o *unstructured.Unstructured) []condition {
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []condition
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		out = append(out, condition{str(u, "type"), str(u, "status"), str(u, "reason"), str(u, "message")})
	}
	return out
}

// resultsConfigMap finds the Benchmark's results: the ConfigMap named in status.resultsConfigMap, else
// NAME-results. The garbage collector deletes the ConfigMap of a deleted Benchmark a little later, so a missing
// Benchmark is an error only when that ConfigMap is missing too.
func (a *app) resultsConfigMap(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cmName, phase := name+"-results", ""
	bench, err := a.dyn.Resource(benchmarkGVR).Namespace(a.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if n := str(bench, "status", "resultsConfigMap", "name"); n != "" {
			cmName = n
		}
		phase = str(bench, "status", "phase")
	case apierrors.IsNotFound(err):
		bench = nil
	default:
		return nil, fmt.Errorf("get benchmark.rdx.dev %q: %w", name, err)
	}
	cm, err := a.kube.CoreV1().ConfigMaps(a.namespace).Get(ctx, cmName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && bench == nil:
		return nil, fmt.Errorf("benchmark.rdx.dev %q not found in namespace %q", name, a.namespace)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("no results yet: the Benchmark is in phase %s (ConfigMap %s does not exist)",
			phaseOr(phase), cmName)
	case err != nil:
		return nil, fmt.Errorf("get ConfigMap %s: %w", cmName, err)
	}
	if _, ok := value(cm, reportKey); !ok {
		if _, ok := value(cm, resultsKey); !ok {
			return nil, fmt.Errorf("no results yet: the Benchmark is in phase %s (ConfigMap %s has neither %s "+
				"nor %s)", phaseOr(phase), cmName, reportKey, resultsKey)
		}
	}
	return cm, nil
}

func phaseOr(phase string) string {
	if phase == "" {
		return "Pending (no status yet)"
	}
	return phase
}

// value is key of cm's data or binaryData.
func value(cm *corev1.ConfigMap, key string) ([]byte, bool) {
	if v, ok := cm.Data[key]; ok {
		return []byte(v), true
	}
	v, ok := cm.BinaryData[key]
	return v, ok
}

// results decodes cm's results.json.
func results(cm *corev1.ConfigMap) (*benchreport.Results, error) {
	raw, ok := value(cm, resultsKey)
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s has no %s", cm.Name, resultsKey)
	}
	var r benchreport.Results
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: %s: %w", cm.Name, resultsKey, err)
	}
	return &r, nil
}

// benchReport writes the HTML report to stdout, or with out the report and every plot into that directory. When
// the ConfigMap has only results.json, the report is rendered here.
func (a *app) benchReport(ctx context.Context, name, out string) error {
	cm, err := a.resultsConfigMap(ctx, name)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	for k, v := range cm.BinaryData {
		if strings.HasSuffix(k, ".png") {
			files[k] = v
		}
	}
	html, ok := value(cm, reportKey)
	if !ok {
		r, err := results(cm)
		if err != nil {
			return err
		}
		rep, err := benchreport.Render(r)
		if err != nil {
			return fmt.Errorf("render the report from ConfigMap %s: %w", cm.Name, err)
		}
		html = rep.HTML
		for k, v := range rep.PNGs {
			if _, stored := files[k]; !stored {
				files[k] = v
			}
		}
	}
	if out == "" {
		_, err := a.stdout.Write(html)
		return err
	}
	files[reportKey] = html
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		// ConfigMap keys cannot hold a path separator; refuse anything that would still leave the directory.
		if k != filepath.Base(k) || strings.HasPrefix(k, ".") {
			return fmt.Errorf("ConfigMap %s: refusing to write key %q as a file", cm.Name, k)
		}
		path := filepath.Join(out, k)
		if err := os.WriteFile(path, files[k], 0o644); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, path)
	}
	return nil
}

// benchResults prints every run of results.json as aligned columns, then the checker's verdict.
func (a *app) benchResults(ctx context.Context, name string) error {
	cm, err := a.resultsConfigMap(ctx, name)
	if err != nil {
		return err
	}
	r, err := results(cm)
	if err != nil {
		return err
	}
	return writeResults(a.stdout, r)
}

func writeResults(w io.Writer, r *benchreport.Results) error {
	sweep := strings.ToUpper(r.SweepParameter)
	unit := r.Unit
	if unit == "" {
		unit = "?"
	}
	fmt.Fprintf(w, "benchmark %s/%s  workload %s  unit %s\n", r.Namespace, r.Benchmark, orDash(r.Workload), unit)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"TARGET", "THROUGHPUT", "P50(µs)", "P99(µs)", "P999(µs)", "COMMITTED", "ABORTED", "ABORT%",
		"ERRORS", "EMULATED-1S"}
	if sweep != "" {
		head = append([]string{head[0], sweep}, head[1:]...)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, p := range r.Points {
		row := []string{p.Target, benchreport.FormatThroughput(p.Throughput), benchreport.FormatMicros(p.P50us),
			benchreport.FormatMicros(p.P99us), benchreport.FormatMicros(p.P999us),
			benchreport.FormatCount(p.Committed), benchreport.FormatCount(p.Aborted),
			benchreport.FormatRate(p.AbortRate), benchreport.FormatCount(p.Errors),
			benchreport.FormatCount(p.EmulatedOneSided)}
		if sweep != "" {
			row = append([]string{row[0], orDash(p.SweepValue)}, row[1:]...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := r.Checker; c != nil {
		model := ""
		if c.Model != "" {
			model = " " + c.Model
		}
		fmt.Fprintf(w, "checker: %s%s, %s checked, %s violations", orDash(c.Verdict), model,
			benchreport.FormatCount(c.Checked), benchreport.FormatCount(c.Violations))
		if c.Message != "" {
			fmt.Fprintf(w, ": %s", c.Message)
		}
		fmt.Fprintln(w)
	}
	if hasEmulated(r) {
		fmt.Fprintln(w, "EMULATED-1S: one-sided operations the target's CPU executed because its transport (tcp) has "+
			"no RDMA.")
	}
	return nil
}

func hasEmulated(r *benchreport.Results) bool {
	for _, p := range r.Points {
		if p.EmulatedOneSided > 0 {
			return true
		}
	}
	return false
}

// str renders the field at path of o as text, whatever its JSON type; "" when absent.
func str(o *unstructured.Unstructured, path ...string) string {
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if !ok || err != nil || v == nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return benchreport.FormatCount(v)
	case float64:
		return benchreport.FormatThroughput(v)
	case bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
