// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/engine"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

const (
	testImage = "registry.test/rdx-engine:test"
	wait      = 20 * time.Second
)

var (
	env *testenv.Env
	// cached reads what the reconciler reads: the manager's informer cache.
	cached client.Reader
)

// TestMain runs the reconciler in a manager against envtest's API server, as cmd/manager does. There is no
// kubelet, StatefulSet controller or garbage collector: tests create pods and write workload status themselves.
func TestMain(m *testing.M) {
	testenv.QuietLogger()
	testenv.Main(m, &env, startManager)
}

func startManager(e *testenv.Env) (func(), error) {
	return testenv.StartManager(e, CacheByObject(), func(mgr ctrl.Manager) error {
		r := &Reconciler{
			Client:        mgr.GetClient(),
			APIReader:     mgr.GetAPIReader(),
			Recorder:      mgr.GetEventRecorder("rdx-operator"),
			EngineImage:   testImage,
			DegradedAfter: time.Hour, // the time-based path is covered by TestPodProblem
			Prober:        engines,
		}
		if err := r.SetupWithManager(mgr, 2); err != nil {
			return err
		}
		cached = mgr.GetClient()
		return nil
	})
}

// createCluster creates a TxCluster, shaped by mutate, in a fresh namespace.
func createCluster(t *testing.T, name string, mutate func(*rdxv1.TxCluster)) *rdxv1.TxCluster {
	t.Helper()
	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace(t)}}
	if mutate != nil {
		mutate(c)
	}
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatalf("create TxCluster: %v", err)
	}
	return c
}

func get(t *testing.T, c *rdxv1.TxCluster, name string, obj client.Object) error {
	t.Helper()
	return env.Client.Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: name}, obj)
}

func getCluster(t *testing.T, c *rdxv1.TxCluster) *rdxv1.TxCluster {
	t.Helper()
	out := &rdxv1.TxCluster{}
	if err := get(t, c, c.Name, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// updateCluster re-reads the TxCluster, applies mutate and writes it back, retrying on conflicts.
func updateCluster(t *testing.T, c *rdxv1.TxCluster, mutate func(*rdxv1.TxCluster)) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		cur := getCluster(t, c)
		mutate(cur)
		return env.Client.Update(context.Background(), cur)
	})
}

// waitTopology waits for the topology ConfigMap at the given epoch and returns it parsed.
func waitTopology(t *testing.T, c *rdxv1.TxCluster, epoch int64) engine.Topology {
	t.Helper()
	var topo engine.Topology
	testenv.Eventually(t, wait, func() error {
		var err error
		if topo, err = readTopology(t, c); err != nil {
			return err
		}
		if topo.Epoch != epoch {
			return fmt.Errorf("topology epoch %d, want %d", topo.Epoch, epoch)
		}
		return nil
	})
	return topo
}

// readTopology reads the cluster's topology ConfigMap as it is now.
func readTopology(t *testing.T, c *rdxv1.TxCluster) (engine.Topology, error) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := get(t, c, engine.TopologyName(c), &cm); err != nil {
		return engine.Topology{}, err
	}
	return engine.ParseTopology(cm.Data[engine.TopologyKey])
}

// waitStatefulSet waits until the shard's StatefulSet satisfies check.
func waitStatefulSet(t *testing.T, c *rdxv1.TxCluster, shard int32, check func(*appsv1.StatefulSet) error) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, wait, func() error {
		if err := get(t, c, engine.StatefulSetName(c, shard), sts); err != nil {
			return err
		}
		return check(sts)
	})
	return sts
}

// waitStatus waits until the TxCluster status satisfies check.
func waitStatus(t *testing.T, c *rdxv1.TxCluster, check func(*rdxv1.TxClusterStatus) error) *rdxv1.TxCluster {
	t.Helper()
	var cur *rdxv1.TxCluster
	testenv.Eventually(t, wait, func() error {
		cur = getCluster(t, c)
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		return check(&cur.Status)
	})
	return cur
}

func conditionIs(st *rdxv1.TxClusterStatus, typ string, status metav1.ConditionStatus, reason string) error {
	for _, c := range st.Conditions {
		if c.Type == typ {
			if c.Status != status || (reason != "" && c.Reason != reason) {
				return fmt.Errorf("condition %s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
			}
			return nil
		}
	}
	return fmt.Errorf("no condition %s in %+v", typ, st.Conditions)
}

// rolledOut writes the status the StatefulSet controller writes once every pod runs the current template.
func rolledOut(t *testing.T, c *rdxv1.TxCluster, shard int32, ready int32) {
	t.Helper()
	setStatefulSetStatus(t, c, shard, func(s *appsv1.StatefulSet) {
		n := *s.Spec.Replicas
		s.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: s.Generation, Replicas: n, ReadyReplicas: ready, AvailableReplicas: ready,
			CurrentReplicas: n, UpdatedReplicas: n, CurrentRevision: "rev-" + strconv.FormatInt(s.Generation, 10),
			UpdateRevision: "rev-" + strconv.FormatInt(s.Generation, 10),
		}
	})
}

func setStatefulSetStatus(t *testing.T, c *rdxv1.TxCluster, shard int32, mutate func(*appsv1.StatefulSet)) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		sts := &appsv1.StatefulSet{}
		if err := get(t, c, engine.StatefulSetName(c, shard), sts); err != nil {
			return err
		}
		mutate(sts)
		return env.Client.Status().Update(context.Background(), sts)
	})
}

// createPod creates the pod the StatefulSet controller would create from the shard's current template, and
// marks it Running with the given readiness.
func createPod(t *testing.T, c *rdxv1.TxCluster, shard, ordinal int32, ready bool) *corev1.Pod {
	t.Helper()
	sts := waitStatefulSet(t, c, shard, func(*appsv1.StatefulSet) error { return nil })
	tmpl := sts.Spec.Template
	labels := maps.Clone(tmpl.Labels)
	labels[engine.LabelPodIndex] = strconv.Itoa(int(ordinal))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: engine.PodName(c, shard, ordinal), Namespace: c.Namespace,
			Labels: labels, Annotations: tmpl.Annotations,
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	ctx := context.Background()
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	setPodReady(t, p, ready)
	return p
}

func setPodReady(t *testing.T, p *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	updatePodStatus(t, p, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	})
}

// updatePodStatus writes a pod's status as mutate sets it, on the newest copy (the operator stamps epochs on pods
// meanwhile), and leaves that copy in p.
func updatePodStatus(t *testing.T, p *corev1.Pod, mutate func(*corev1.Pod)) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		mutate(p)
		return env.Client.Status().Update(context.Background(), p)
	})
}

// waitEvent waits for an event about the TxCluster with the given reason whose note contains text.
func waitEvent(t *testing.T, c *rdxv1.TxCluster, reason, text string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var events eventsv1.EventList
		if err := env.Client.List(context.Background(), &events, client.InNamespace(c.Namespace)); err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Name == c.Name && e.Regarding.Kind == "TxCluster" {
				if e.Reason == reason && strings.Contains(e.Note, text) {
					return nil
				}
				seen = append(seen, e.Reason+": "+e.Note)
			}
		}
		return fmt.Errorf("no %s event containing %q; have %q", reason, text, seen)
	})
}

// waitIdle waits until the TxCluster controller has no queued and no running reconcile (from its metrics), so a
// test can then assert what happens, or does not happen, on the next event alone.
func waitIdle(t *testing.T) {
	t.Helper()
	quiet := 0
	testenv.Eventually(t, wait, func() error {
		busy, err := controllerLoad()
		if err != nil {
			return err
		}
		if busy > 0 {
			quiet = 0
			return fmt.Errorf("%v reconciles queued or running", busy)
		}
		if quiet++; quiet < 3 {
			return fmt.Errorf("idle for %d polls", quiet)
		}
		return nil
	})
}

func controllerLoad() (float64, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	var load float64
	for _, f := range families {
		if f.GetName() != "workqueue_depth" && f.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "name" || l.GetName() == "controller") && l.GetValue() == "txcluster" {
					load += m.GetGauge().GetValue()
				}
			}
		}
	}
	return load, nil
}

// fakeEngines stands in for the rdxd processes envtest does not run: a pod says what the test set for it, else
// what a fresh cluster's does (ordinal 0 is the primary of view 0). The HTTP prober and its parsing of rdxd's real
// /metrics are tested in package engine, and against real pods in the e2e suite.
type fakeEngines struct {
	mu     sync.Mutex
	states map[string]engine.NodeState
	errs   map[string]error
}

var engines = &fakeEngines{states: map[string]engine.NodeState{}, errs: map[string]error{}}

func (f *fakeEngines) Probe(_ context.Context, p *corev1.Pod, _ int32) (engine.NodeState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[p.Namespace+"/"+p.Name]; err != nil {
		return engine.NodeState{}, err
	}
	// A pod runs the epoch stamped on it: the stamp is what makes kubelet deliver the file (announceEpoch).
	epoch, _ := strconv.ParseInt(p.Annotations[engine.AnnotationTopologyEpoch], 10, 64)
	if st, ok := f.states[p.Namespace+"/"+p.Name]; ok {
		if st.Epoch == 0 {
			st.Epoch = epoch
		}
		return st, nil
	}
	return engine.NodeState{Primary: p.Labels[engine.LabelPodIndex] == "0", Epoch: epoch}, nil
}

func (f *fakeEngines) set(pod *corev1.Pod, st engine.NodeState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[pod.Namespace+"/"+pod.Name] = st
	delete(f.errs, pod.Namespace+"/"+pod.Name)
}

func (f *fakeEngines) fail(pod *corev1.Pod, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[pod.Namespace+"/"+pod.Name] = errors.New(why)
}
