// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"

	"github.com/rdx-dev/rdx/operator/internal/benchreport"
)

// benchmark is a Benchmark object as the API server would return it, with the given status.
func benchmark(ns, name string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rdx.dev/v1alpha1", "kind": "Benchmark",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"targets": []any{map[string]any{"name": "demo"}},
			"workload": map[string]any{"type": "smallbank"}},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// fakeDynamic serves Benchmarks and TxClusters from memory, with whatever status a test gives them (no controller
// runs here); TestBenchRunAPIServer covers the same commands against the real API server.
func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{benchmarkGVR: "BenchmarkList", txclusterGVR: "TxClusterList"}, objs...)
}

// script returns the objects (or errors) of steps one per call, repeating the last.
func script(steps ...any) getFunc {
	i := 0
	return func(context.Context) (*unstructured.Unstructured, error) {
		s := steps[min(i, len(steps)-1)]
		i++
		if err, ok := s.(error); ok {
			return nil, err
		}
		return s.(*unstructured.Unstructured), nil
	}
}

func testWatcher(get getFunc) (*watcher, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &watcher{name: "b", namespace: "ns", get: get, interval: time.Millisecond, now: fixedNow,
		stdout: &out, stderr: &errOut}, &out, &errOut
}

func TestWatchSucceeded(t *testing.T) {
	pending := benchmark("ns", "b", nil)
	running := benchmark("ns", "b", map[string]any{"phase": "Running", "progress": "run 1/3 (coroutines=1)"})
	running2 := benchmark("ns", "b", map[string]any{"phase": "Running", "progress": "run 2/3 (coroutines=2)",
		"throughput": "41000 tx/s", "p99": "350µs"})
	summary := benchmark("ns", "b", map[string]any{"phase": "Running", "progress": "run 2/3 (coroutines=2)",
		"throughput": "52000 tx/s", "p99": "410µs", "checker": map[string]any{"verdict": "Pass"}})
	done := benchmark("ns", "b", map[string]any{"phase": "Succeeded", "progress": "done",
		"throughput": "52000 tx/s", "p99": "410µs", "checker": map[string]any{"verdict": "Pass"}})
	transient := apierrors.NewServiceUnavailable("etcd is restarting")
	w, out, errOut := testWatcher(script(pending, pending, running, running, transient, transient, running2,
		summary, summary, done))
	if err := w.run(context.Background(), time.Minute); err != nil {
		t.Fatalf("watch: %v", err)
	}
	want := strings.Join([]string{
		"13:14:15  -  -  -  p99 -  verdict -",
		"13:14:15  Running  run 1/3 (coroutines=1)  -  p99 -  verdict -",
		"13:14:15  Running  run 2/3 (coroutines=2)  41000 tx/s  p99 350µs  verdict -",
		"13:14:15  Running  run 2/3 (coroutines=2)  52000 tx/s  p99 410µs  verdict Pass",
		"13:14:15  Succeeded  done  52000 tx/s  p99 410µs  verdict Pass",
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("watch printed:\n%s\nwant:\n%s", out.String(), want)
	}
	if n := strings.Count(errOut.String(), "etcd is restarting"); n != 1 {
		t.Errorf("a repeated read error should be reported once, got stderr:\n%s", errOut.String())
	}
}

func TestWatchFailed(t *testing.T) {
	failed := benchmark("ns", "b", map[string]any{"phase": "Failed", "conditions": []any{
		map[string]any{"type": "Progressing", "status": "False", "message": "stopped"},
		map[string]any{"type": "Ready", "status": "False", "reason": "JobFailed",
			"message": "job b-run-0 failed: rdx-bench exited 2"},
	}})
	w, out, _ := testWatcher(script(failed))
	err := w.run(context.Background(), time.Minute)
	if err == nil || err.Error() != "benchmark b failed: job b-run-0 failed: rdx-bench exited 2" {
		t.Errorf("watch of a failed Benchmark: %v", err)
	}
	if !strings.Contains(out.String(), "Failed") {
		t.Errorf("no line for the final state: %q", out.String())
	}
}

func TestWatchTimeoutAndNotFound(t *testing.T) {
	w, _, _ := testWatcher(script(benchmark("ns", "b", map[string]any{"phase": "Running"})))
	err := w.run(context.Background(), 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "timed out after 20ms waiting for benchmark b to finish (phase Running)") {
		t.Errorf("timeout: %v", err)
	}
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "rdx.dev", Resource: "benchmarks"}, "b")
	w, _, _ = testWatcher(script(gone))
	if err := w.run(context.Background(), time.Minute); err == nil ||
		err.Error() != `benchmark.rdx.dev "b" not found in namespace "ns"` {
		t.Errorf("missing: %v", err)
	}
	w, _, _ = testWatcher(script(benchmark("ns", "b", nil), gone))
	if err := w.run(context.Background(), time.Minute); err == nil || !strings.Contains(err.Error(), "was deleted") {
		t.Errorf("deleted: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, _, _ = testWatcher(script(benchmark("ns", "b", nil)))
	if err := w.run(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v", err)
	}
}

const twoBenchmarks = `
apiVersion: rdx.dev/v1alpha1
kind: Benchmark
metadata:
  name: first
spec:
  targets: [{name: demo}]
  workload: {type: smallbank}
---
apiVersion: rdx.dev/v1alpha1
kind: Benchmark
metadata:
  name: second
  namespace: elsewhere
spec:
  targets: [{name: demo}]
  workload: {type: ycsb}
status:
  phase: Succeeded
---
`

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bench.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBenchRun creates Benchmarks through a client that stores them in memory.
func TestBenchRun(t *testing.T) {
	a, out, _ := testApp(t, "default")
	fake := fakeDynamic()
	a.dyn = fake
	if err := a.benchRun(context.Background(), writeFile(t, twoBenchmarks), false, time.Minute); err != nil {
		t.Fatal(err)
	}
	if want := "benchmark.rdx.dev/first created\nbenchmark.rdx.dev/second created\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	for ns, name := range map[string]string{"default": "first", "elsewhere": "second"} {
		if _, err := fake.Resource(benchmarkGVR).Namespace(ns).Get(context.Background(), name,
			metav1.GetOptions{}); err != nil {
			t.Errorf("benchmark %s/%s: %v", ns, name, err)
		}
	}

	// --watch follows what it created; from stdin.
	a, out, _ = testApp(t, "elsewhere")
	a.dyn = fakeDynamic()
	a.stdin = strings.NewReader(twoBenchmarks[strings.Index(twoBenchmarks, "---"):])
	if err := a.benchRun(context.Background(), "-", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "benchmark.rdx.dev/second created\n13:14:15  Succeeded") {
		t.Errorf("run --watch printed %q", out.String())
	}

	// Refused before anything is created.
	for content, want := range map[string]string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n":         "object 1 is a ConfigMap",
		"apiVersion: rdx.dev/v2\nkind: Benchmark\nmetadata: {name: x}\n": "this plugin knows rdx.dev/v1alpha1",
		"apiVersion: rdx.dev/v1alpha1\nkind: Benchmark\nspec: {}\n":      "neither metadata.name nor",
		"# nothing\n":         "holds no objects",
		"kind: [unbalanced\n": "document 1",
	} {
		a, _, _ = testApp(t, "default")
		a.dyn = fakeDynamic()
		err := a.benchRun(context.Background(), writeFile(t, content), false, time.Minute)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", content, err, want)
		}
	}
	a, _, _ = testApp(t, "mine")
	a.explicitNamespace = true
	a.dyn = fakeDynamic()
	err := a.benchRun(context.Background(), writeFile(t, twoBenchmarks), false, time.Minute)
	if err == nil || !strings.Contains(err.Error(), `names namespace "elsewhere" but --namespace is "mine"`) {
		t.Errorf("namespace mismatch: %v", err)
	}
}

// TestBenchRunAPIServer runs `bench run` against the real API server, then plays the controller (status and results
// ConfigMap) and follows the Benchmark with watch and results.
func TestBenchRunAPIServer(t *testing.T) {
	ns := namespace(t)
	file := writeFile(t, twoBenchmarks[:strings.Index(twoBenchmarks, "---")])
	code, out, errOut := runCLI(t, "-n", ns, "bench", "run", "-f", file)
	if code != 0 {
		t.Fatalf("bench run: exit %d, stderr %q", code, errOut)
	}
	if out != "benchmark.rdx.dev/first created\n" {
		t.Errorf("stdout %q", out)
	}
	ctx := context.Background()
	a, _, _ := testApp(t, ns)
	b, err := a.dyn.Resource(benchmarkGVR).Namespace(ns).Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Object["status"] = map[string]any{"phase": "Succeeded", "progress": "done", "throughput": "41,000 tx/s",
		"p99": "350µs", "checker": map[string]any{"verdict": "Pass", "checked": int64(1), "violations": int64(0)},
		"resultsConfigMap": map[string]any{"name": "first-data"}}
	if _, err := a.dyn.Resource(benchmarkGVR).Namespace(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write the Benchmark's status: %v", err)
	}
	code, out, errOut = runCLI(t, "-n", ns, "bench", "watch", "first")
	if code != 0 || !strings.HasSuffix(out, "  Succeeded  done  41,000 tx/s  p99 350µs  verdict Pass\n") {
		t.Errorf("watch: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "-n", ns, "bench", "results", "first")
	if code != 1 || !strings.Contains(errOut, "no results yet: the Benchmark is in phase Succeeded (ConfigMap "+
		"first-data does not exist)") {
		t.Errorf("results without ConfigMap: exit %d, stderr %q", code, errOut)
	}
	js, _ := json.Marshal(sampleResults())
	configMap(t, ns, "first-data", map[string]string{resultsKey: string(js)}, nil)
	if code, out, errOut = runCLI(t, "-n", ns, "bench", "results", "first"); code != 0 || !strings.Contains(out, "tcp-a") {
		t.Errorf("results: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// sampleResults is a two-target sweep as the controller writes it to results.json.
func sampleResults() *benchreport.Results {
	r := &benchreport.Results{Benchmark: "sweep", Namespace: "ns", Workload: "smallbank", SweepParameter: "coroutines",
		Unit: "tx/s", Targets: []benchreport.Target{
			{Name: "tcp-a", Kind: "TxCluster", TxnProtocol: "dnl4", Replication: "primary-backup", Transport: "tcp"},
			{Name: "verbs-b", Kind: "TxCluster", TxnProtocol: "dnl2", Replication: "primary-backup", Transport: "verbs"},
		}, Checker: &benchreport.Checker{Verdict: "Pass", Model: "serializability", Checked: 90210}}
	for i, c := range []string{"1", "2", "4"} {
		f := float64(int(1) << i)
		r.Points = append(r.Points,
			benchreport.Point{Target: "tcp-a", SweepValue: c, Throughput: 20000 * f, P50us: 50 * f, P99us: 200 * f,
				P999us: 900 * f, Committed: int64(600000 * f), Aborted: int64(1200 * f), AbortRate: 0.002,
				EmulatedOneSided: int64(2400000 * f)},
			benchreport.Point{Target: "verbs-b", SweepValue: c, Throughput: 70000 * f, P50us: 14 * f, P99us: 60 * f,
				P999us: 210 * f, Committed: int64(2100000 * f), Aborted: int64(2100 * f), AbortRate: 0.001, Errors: 1})
	}
	return r
}

func configMap(t *testing.T, ns, name string, data map[string]string, binary map[string][]byte) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(testConfig)
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data, BinaryData: binary,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReportStored: report.html and the PNGs the controller stored are returned as they are.
func TestReportStored(t *testing.T) {
	ns := namespace(t)
	configMap(t, ns, "stored-results", map[string]string{reportKey: "<html>stored report</html>", "other": "x"},
		map[string][]byte{"throughput.png": []byte("PNG1"), "latency.png": []byte("PNG2"), "log.gz": []byte("z")})
	code, out, errOut := runCLI(t, "-n", ns, "bench", "report", "stored")
	if code != 0 || out != "<html>stored report</html>" {
		t.Fatalf("report: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "out")
	code, out, errOut = runCLI(t, "-n", ns, "bench", "report", "stored", "--out", dir)
	want := strings.Join([]string{filepath.Join(dir, "latency.png"), filepath.Join(dir, "report.html"),
		filepath.Join(dir, "throughput.png")}, "\n") + "\n"
	if code != 0 || out != want {
		t.Fatalf("report --out: exit %d, stdout %q, stderr %q; want stdout %q", code, out, errOut, want)
	}
	for name, content := range map[string]string{"report.html": "<html>stored report</html>", "throughput.png": "PNG1",
		"latency.png": "PNG2"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "log.gz")); err == nil {
		t.Errorf("only PNGs and report.html are written")
	}
}

// TestReportRendered: with only results.json the plugin renders the report itself, and prints the results table.
func TestReportRendered(t *testing.T) {
	ns := namespace(t)
	js, err := json.Marshal(sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "sweep-results", map[string]string{resultsKey: string(js)}, nil)
	code, out, errOut := runCLI(t, "-n", ns, "bench", "report", "sweep")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "verbs-b") {
		t.Fatalf("report: exit %d, stderr %q, stdout starts %.200q", code, errOut, out)
	}
	dir := t.TempDir()
	if code, _, errOut = runCLI(t, "-n", ns, "bench", "report", "sweep", "--out", dir); code != 0 {
		t.Fatalf("report --out: %s", errOut)
	}
	for _, name := range []string{"throughput.png", "latency.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 800 {
			t.Errorf("%s: %v", name, err)
		}
	}

	code, out, errOut = runCLI(t, "-n", ns, "bench", "results", "sweep")
	if code != 0 {
		t.Fatalf("results: exit %d: %s", code, errOut)
	}
	t.Logf("bench results:\n%s", out)
	lines := strings.Split(out, "\n")
	for i, want := range map[int][]string{
		0: {"benchmark ns/sweep", "workload smallbank", "unit tx/s"},
		1: {"TARGET", "COROUTINES", "THROUGHPUT", "P50(µs)", "P999(µs)", "ABORT%", "EMULATED-1S"},
		2: {"tcp-a", "1", "20,000", "50.0", "200.0", "900.0", "600,000", "1,200", "0.20%", "2,400,000"},
		7: {"verbs-b", "4", "280,000", "56.0", "8,400,000", "0.10%"},
		8: {"checker: Pass serializability, 90,210 checked, 0 violations"},
	} {
		for _, w := range want {
			if i >= len(lines) || !strings.Contains(lines[i], w) {
				t.Errorf("results line %d lacks %q:\n%s", i, w, out)
			}
		}
	}
	// Columns are aligned: the throughput column starts at the same offset in every row.
	col := strings.Index(lines[1], "THROUGHPUT")
	for _, l := range lines[2:8] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("misaligned row %q (throughput column at %d)", l, col)
		}
	}
}

// TestReportErrors: missing objects give clear messages and exit code 1.
func TestReportErrors(t *testing.T) {
	ns := namespace(t)
	configMap(t, ns, "empty-results", map[string]string{"other": "x"}, nil)
	configMap(t, ns, "bad-results", map[string]string{resultsKey: "{not json"}, nil)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "report", "nope"}, `error: benchmark.rdx.dev "nope" not found in namespace "` + ns + `"`},
		{[]string{"bench", "results", "nope"}, `benchmark.rdx.dev "nope" not found`},
		{[]string{"bench", "results", "empty"}, "no results yet: the Benchmark is in phase Pending (no status yet) " +
			"(ConfigMap empty-results has neither report.html nor results.json)"},
		{[]string{"bench", "results", "bad"}, "ConfigMap bad-results: results.json: invalid character"},
		{[]string{"bench", "report", "bad"}, "ConfigMap bad-results: results.json"},
	} {
		code, _, errOut := runCLI(t, append([]string{"-n", ns}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestResultsConfigMapOfBenchmark: the ConfigMap named in the Benchmark's status is read, and a Benchmark whose
// ConfigMap does not exist yet is reported with its phase. The Benchmarks come from memory (see fakeDynamic), the
// ConfigMaps from the API server.
func TestResultsConfigMapOfBenchmark(t *testing.T) {
	ns := namespace(t)
	js, _ := json.Marshal(sampleResults())
	configMap(t, ns, "custom-name", map[string]string{resultsKey: string(js)}, nil)
	a, out, _ := testApp(t, ns)
	a.dyn = fakeDynamic(
		benchmark(ns, "named", map[string]any{"phase": "Succeeded",
			"resultsConfigMap": map[string]any{"name": "custom-name"}}),
		benchmark(ns, "running", map[string]any{"phase": "Running", "progress": "run 1/3"}),
	)
	if err := a.benchResults(context.Background(), "named"); err != nil || !strings.Contains(out.String(), "verbs-b") {
		t.Errorf("results of named: %v\n%s", err, out.String())
	}
	err := a.benchReport(context.Background(), "running", "")
	if err == nil || err.Error() != "no results yet: the Benchmark is in phase Running (ConfigMap running-results "+
		"does not exist)" {
		t.Errorf("report of a running Benchmark: %v", err)
	}
}
