// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/engine"
)

func TestPodProblem(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Annotations: map[string]string{engine.AnnotationRestartHash: "h"},
		}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
		mutate(p)
		return p
	}
	for name, tc := range map[string]struct {
		pod   *corev1.Pod
		want  string
		after time.Duration
	}{
		"unready briefly": {pod(func(*corev1.Pod) {}), "", 4 * time.Minute},
		"unready long": {pod(func(p *corev1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-6 * time.Minute))
		}), "not ready for 6m0s", 0},
		"crash loop": {pod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "rdxd", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}}}
		}), "container rdxd CrashLoopBackOff: back-off", 0},
		"unschedulable": {pod(func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes: rdma"})
		}), "unschedulable: 0/1 nodes: rdma", 0},
		"old configuration": {pod(func(p *corev1.Pod) { p.Annotations[engine.AnnotationRestartHash] = "old" }), "", 0},
		"ready":             {pod(func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionTrue }), "", 0},
	} {
		got, after := podProblem(tc.pod, "h", now, 5*time.Minute)
		if got != tc.want || after != tc.after {
			t.Errorf("%s: podProblem = %q, %s; want %q, %s", name, got, after, tc.want, tc.after)
		}
	}
}

// TestStepBlocker: what the next membership epoch waits for.
func TestStepBlocker(t *testing.T) {
	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: rdxv1.TxClusterSpec{Shards: 1, Replicas: 3}}
	three := engine.BuildTopologyNodes(c, 4, 3)
	two, four := engine.BuildTopologyNodes(c, 5, 2), engine.BuildTopologyNodes(c, 5, 4)
	pods := func(ready ...bool) ([]corev1.Pod, map[string]nodeProbe) {
		var out []corev1.Pod
		probes := map[string]nodeProbe{}
		for i, r := range ready {
			p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: engine.PodName(c, 0, int32(i)),
				Annotations: map[string]string{engine.AnnotationRestartHash: three.RestartHash()}}}
			status := corev1.ConditionFalse
			if r {
				status = corev1.ConditionTrue
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
			out = append(out, p)
			probes[p.Name] = nodeProbe{state: engine.NodeState{Epoch: 4}}
		}
		return out, probes
	}
	ready, probes := pods(true, true, true)
	if got := stepBlocker(three, four, ready, probes); got != "" {
		t.Errorf("all ready at epoch 4, adding a node: %q", got)
	}
	probes["db-s0-1"] = nodeProbe{state: engine.NodeState{Epoch: 3}}
	if got := stepBlocker(three, four, ready, probes); got != "pod db-s0-1 runs epoch 3, not 4 yet" {
		t.Errorf("a member behind: %q", got)
	}
	// A joiner that never became ready blocks adding another node, not removing it again.
	joining, probes := pods(true, true, false)
	if got := stepBlocker(three, four, joining, probes); got != "pod db-s0-2 is not ready" {
		t.Errorf("joiner unready, adding: %q", got)
	}
	if got := stepBlocker(three, two, joining, probes); got != "" {
		t.Errorf("joiner unready, removing it: %q", got)
	}
	leftover, probes := pods(true, true, true, true)
	if got := stepBlocker(three, two, leftover, probes); got != "pod db-s0-3 of a removed node is still there" {
		t.Errorf("pod of the node removed before still there: %q", got)
	}
}
