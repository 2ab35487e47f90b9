// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"context"
	"maps"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

const (
	testImage = "registry.test/rdx-engine:test"
	wait      = 20 * time.Second
)

var env *testenv.Env

// TestMain runs the Benchmark controller in a manager against envtest's API server, as cmd/manager does. There is
// no Job controller, kubelet or garbage collector: tests create the Jobs' pods and write Job and pod status.
func TestMain(m *testing.M) {
	testenv.QuietLogger()
	testenv.Main(m, &env, startManager)
}

func startManager(e *testenv.Env) (func(), error) {
	byObject := CacheByObject()
	maps.Copy(byObject, apply.ManagedOnly(&corev1.ConfigMap{}))
	return testenv.StartManager(e, byObject, func(mgr ctrl.Manager) error {
		logs, err := NewLogTailer(e.Config) // no kubelet: reading a log fails, and progress is left out
		if err != nil {
			return err
		}
		r := &Reconciler{
			Client:      mgr.GetClient(),
			APIReader:   mgr.GetAPIReader(),
			Recorder:    mgr.GetEventRecorder("rdx-operator"),
			EngineImage: testImage,
			Logs:        logs,
			Poll:        200 * time.Millisecond,
		}
		return r.SetupWithManager(mgr)
	})
}

// readyCluster creates a TxCluster in ns and marks it Ready, as the TxCluster controller would.
func readyCluster(t *testing.T, ns, name string) *rdxv1.TxCluster {
	t.Helper()
	return readyClusterOf(t, ns, name, rdxv1.TxClusterSpec{})
}

// readyClusterOf is readyCluster with a spec (the API server defaults what it leaves out).
func readyClusterOf(t *testing.T, ns, name string, spec rdxv1.TxClusterSpec) *rdxv1.TxCluster {
	t.Helper()
	ctx := context.Background()
	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("create TxCluster: %v", err)
	}
	c.Status.Conditions = []metav1.Condition{{Type: rdxv1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Ready", Message: "test", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatalf("mark TxCluster ready: %v", err)
	}
	return c
}

func createBenchmark(t *testing.T, ns, name string, spec rdxv1.BenchmarkSpec) *rdxv1.Benchmark {
	t.Helper()
	b := &rdxv1.Benchmark{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("create Benchmark: %v", err)
	}
	return b
}

func getBenchmark(t *testing.T, b *rdxv1.Benchmark) *rdxv1.Benchmark {
	t.Helper()
	out := &rdxv1.Benchmark{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitJob waits for the named Job to exist.
func waitJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	testenv.Eventually(t, wait, func() error {
		return env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, j)
	})
	return j
}

// jobNames lists the Jobs in ns.
func jobNames(t *testing.T, ns string) []string {
	t.Helper()
	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Name)
	}
	return names
}

// finishJob plays the Job controller and kubelet: a pod of the Job whose rdx-bench container terminated with the
// given message, and the Job's terminal status.
func finishJob(t *testing.T, j *batchv1.Job, succeeded bool, message string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-pod", Namespace: j.Namespace,
			Labels: map[string]string{batchv1.JobNameLabel: j.Name}},
		Spec: j.Spec.Template.Spec,
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	exit := int32(0)
	phase := corev1.PodSucceeded
	if !succeeded {
		exit, phase = 1, corev1.PodFailed
	}
	pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: containerName, Image: testImage, ImageID: "test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: message,
			StartedAt: metav1.Now(), FinishedAt: metav1.Now()}},
	}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatalf("pod status: %v", err)
	}
	now := metav1.Now()
	start := metav1.NewTime(now.Add(-time.Second))
	j.Status.StartTime = &start
	if succeeded {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
				Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	}
	if err := env.Client.Status().Update(ctx, j); err != nil {
		t.Fatalf("job status: %v", err)
	}
}
