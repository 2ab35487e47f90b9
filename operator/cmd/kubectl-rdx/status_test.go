// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// dataPod creates a data pod of cluster as the operator's StatefulSets would, with the given readiness.
func dataPod(t *testing.T, kube kubernetes.Interface, ns, cluster string, shard, index int, ready bool, labels ...string) {
	t.Helper()
	name := cluster + "-s" + itoa(shard) + "-" + itoa(index)
	l := map[string]string{labelCluster: cluster, labelRole: roleData, labelShard: itoa(shard),
		labelPodIndex: itoa(index)}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	pod, err := kube.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec: corev1.PodSpec{NodeName: "node-" + itoa(index),
			Containers: []corev1.Container{{Name: "rdxd", Image: "rdx-engine:test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0." + itoa(shard) + "." + itoa(index),
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "rdxd", RestartCount: int32(index)}}}
	if !ready {
		pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	}
	if _, err := kube.CoreV1().Pods(ns).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestStatus: a two-shard TxCluster with one pod not ready and one member without a pod, plus pods of another
// cluster and of another role that must not show.
func TestStatus(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(testConfig)
	kube := kubernetes.NewForConfigOrDie(testConfig)
	txc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rdx.dev/v1alpha1", "kind": "TxCluster",
		"metadata": map[string]any{"name": "demo"},
		"spec":     map[string]any{"shards": int64(2), "replicas": int64(2)},
	}}
	txc, err := dyn.Resource(txclusterGVR).Namespace(ns).Create(ctx, txc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	txc.Object["status"] = map[string]any{
		"phase": "Degraded", "epoch": int64(3), "replicas": int64(4), "readyReplicas": int64(2),
		"endpoint": "demo." + ns + ".svc:6379",
		"shards": []any{
			map[string]any{"id": int64(0), "members": []any{"demo-s0-0", "demo-s0-1"}, "primary": "demo-s0-0",
				"readyMembers": int64(1)},
			map[string]any{"id": int64(1), "members": []any{"demo-s1-0", "demo-s1-1"}, "primary": "demo-s1-0",
				"readyMembers": int64(1)},
		},
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "PodsNotReady",
				"message": "2/4 pods ready", "lastTransitionTime": "2026-05-04T13:00:00Z"},
			map[string]any{"type": "Degraded", "status": "True", "reason": "PodsNotReady",
				"message": "demo-s0-1 is not ready", "lastTransitionTime": "2026-05-04T13:00:00Z"},
		},
	}
	if _, err := dyn.Resource(txclusterGVR).Namespace(ns).UpdateStatus(ctx, txc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dataPod(t, kube, ns, "demo", 0, 1, false)
	dataPod(t, kube, ns, "demo", 0, 0, true)
	dataPod(t, kube, ns, "demo", 1, 0, true)
	dataPod(t, kube, ns, "other", 0, 0, true)
	dataPod(t, kube, ns, "demo", 0, 2, true, labelRole, "ro")

	code, out, errOut := runCLI(t, "-n", ns, "status", "demo")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	t.Logf("status:\n%s", out)
	for _, want := range []string{
		"TxCluster:  " + ns + "/demo",
		"Phase:      Degraded",
		"Ready:      False  PodsNotReady  2/4 pods ready",
		"Degraded:   True  PodsNotReady  demo-s0-1 is not ready",
		"Epoch:      3",
		"Endpoint:   demo." + ns + ".svc:6379  (Service demo)",
		"Shards:     2 x 2 replicas, 2/4 pods ready",
		"transactions dnl4, replication primary-backup, transport tcp", // CRD defaults
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}
	table := out[strings.Index(out, "SHARD"):]
	rows := strings.Split(strings.TrimSpace(table), "\n")
	want := [][]string{
		{"SHARD", "POD", "ROLE", "READY", "STATUS", "RESTARTS", "NODE", "IP"},
		{"0", "demo-s0-0", "primary", "true", "Running", "0", "node-0", "10.0.0.0"},
		{"0", "demo-s0-1", "backup", "false", "CrashLoopBackOff", "1", "node-1", "10.0.0.1"},
		{"1", "demo-s1-0", "primary", "true", "Running", "0", "node-0", "10.0.1.0"},
		{"1", "demo-s1-1", "backup", "false", "Missing", "-", "-", "-"},
	}
	for i, w := range want {
		if i >= len(rows) || strings.Join(strings.Fields(rows[i]), " ") != strings.Join(w, " ") {
			t.Errorf("row %d: got %q, want %q", i, rows[min(i, len(rows)-1)], strings.Join(w, "  "))
		}
	}
	if strings.Contains(out, "other-s0-0") || strings.Contains(out, "demo-s0-2") {
		t.Errorf("status shows pods of another cluster or role")
	}

	code, _, errOut = runCLI(t, "-n", ns, "status", "nope")
	if code != 1 || !strings.Contains(errOut, `error: txcluster.rdx.dev "nope" not found in namespace "`+ns+`"`) {
		t.Errorf("missing TxCluster: exit %d, %q", code, errOut)
	}
}

// TestStatusNoPods: a fresh TxCluster without status or pods says so rather than printing an empty table.
func TestStatusNoPods(t *testing.T) {
	ns := namespace(t)
	dyn := dynamic.NewForConfigOrDie(testConfig)
	txc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rdx.dev/v1alpha1", "kind": "TxCluster", "metadata": map[string]any{"name": "fresh"},
		"spec": map[string]any{},
	}}
	if _, err := dyn.Resource(txclusterGVR).Namespace(ns).Create(context.Background(), txc,
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "-n", ns, "status", "fresh")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Phase:      -", "Ready:      - (no Ready condition yet)",
		"Endpoint:   - (not recorded yet)  (Service fresh)", "Shards:     1 x 3 replicas, -/- pods ready",
		"No data pods (selector rdx.dev/cluster=fresh,rdx.dev/role=data)."} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
