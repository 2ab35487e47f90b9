// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TxClusters is the TxCluster resource.
var TxClusters = schema.GroupVersionResource{Group: "rdx.dev", Version: "v1alpha1", Resource: "txclusters"}

// Benchmarks is the Benchmark resource.
var Benchmarks = schema.GroupVersionResource{Group: "rdx.dev", Version: "v1alpha1", Resource: "benchmarks"}

const dumpLogLines = 200

// Dump writes what explains a failure: for each namespace its events, TxClusters, pods (state and the last log
// lines of every container, also of the previous instance after a restart), and the operator's logs. It goes to
// the test log and, with RDX_E2E_ARTIFACTS, to files there.
func (e *Env) Dump(t *testing.T, namespaces ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var b bytes.Buffer
	for _, ns := range namespaces {
		e.dumpNamespace(ctx, &b, ns)
	}
	t.Logf("===== DIAGNOSTICS =====\n%s===== END DIAGNOSTICS =====", b.String())
	if e.ArtifactsDir != "" {
		// Appended: a step may dump while the pods that explain its failure still exist, before the final dump.
		path := filepath.Join(e.ArtifactsDir, "e2e-diagnostics.txt")
		if err := os.MkdirAll(e.ArtifactsDir, 0o755); err == nil {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintf(f, "\n===== %s: diagnostics of %s =====\n", time.Now().Format("15:04:05"), t.Name())
				_, err = f.Write(b.Bytes())
				err = errors.Join(err, f.Close())
			}
			if err == nil {
				t.Logf("diagnostics also in %s", path)
			}
		}
	}
}

func (e *Env) dumpNamespace(ctx context.Context, b *bytes.Buffer, ns string) {
	fmt.Fprintf(b, "\n##### namespace %s\n", ns)
	if evs, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintf(b, "events: %v\n", err)
	} else {
		sort.Slice(evs.Items, func(i, j int) bool { return eventTime(&evs.Items[i]).Before(eventTime(&evs.Items[j])) })
		fmt.Fprintf(b, "--- events (%d)\n", len(evs.Items))
		for _, ev := range evs.Items {
			fmt.Fprintf(b, "%s %-7s %-22s %s/%s: %s (x%d)\n", eventTime(&ev).Format("15:04:05"), ev.Type, ev.Reason,
				ev.InvolvedObject.Kind, ev.InvolvedObject.Name, strings.TrimSpace(ev.Message), max(ev.Count, 1))
		}
	}
	if l, err := e.Dynamic.Resource(TxClusters).Namespace(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range l.Items {
			spec, _ := json.MarshalIndent(c.Object["spec"], "", "  ")
			status, _ := json.MarshalIndent(c.Object["status"], "", "  ")
			fmt.Fprintf(b, "--- TxCluster %s (generation %d)\nspec: %s\nstatus: %s\n", c.GetName(), c.GetGeneration(), spec, status)
		}
	}
	pods, err := e.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "pods: %v\n", err)
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		fmt.Fprintf(b, "--- pod %s phase %s node %s ip %s%s\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP, deleting(p))
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(b, "    condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, s := range p.Status.ContainerStatuses {
			fmt.Fprintf(b, "    container %s ready=%v restarts=%d state=%s\n", s.Name, s.Ready, s.RestartCount, containerState(s.State))
			e.dumpLogs(ctx, b, p, s.Name, false)
			if s.RestartCount > 0 {
				e.dumpLogs(ctx, b, p, s.Name, true)
			}
		}
	}
}

func (e *Env) dumpLogs(ctx context.Context, b *bytes.Buffer, p *corev1.Pod, container string, previous bool) {
	lines := int64(dumpLogLines)
	raw, err := e.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
		Container: container, TailLines: &lines, Previous: previous,
	}).DoRaw(ctx)
	which := "logs"
	if previous {
		which = "logs of the previous instance"
	}
	if err != nil {
		fmt.Fprintf(b, "    %s: %v\n", which, err)
		return
	}
	fmt.Fprintf(b, "    %s (last %d lines):\n", which, lines)
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		fmt.Fprintf(b, "      | %s\n", l)
	}
}

func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

func deleting(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return " (terminating)"
	}
	return ""
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.Format("15:04:05")
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason + " " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s exit %d %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	}
	return "unknown"
}
