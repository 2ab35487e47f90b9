// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/rdx-dev/rdx/e2e/framework"
)

// cluster is the TxCluster under test and the suite's view of it.
type cluster struct {
	env       *framework.Env
	ns, name  string
	shards    int64
	replicas  int64
	uid       types.UID
	redisAddr string
	// sequentialReads: the replication protocol's reads are sequentially consistent (zab), so a read may show an
	// older value for a moment; the suite's read-backs then re-read a stale key (convergeFor) instead of failing.
	sequentialReads bool
}

// convergeFor is how long a read-back re-reads a key that shows an older value, on a cluster whose reads are
// sequentially consistent: a zab follower applies a commit within milliseconds of the leader, so 10 s is only ever
// used up by a follower that lost its link to the leader and is catching up.
const convergeFor = "10s"

// readBackArgs are rdx-e2e-client's arguments for reading back completed writes of c.
func (c *cluster) readBackArgs() []string {
	if c.sequentialReads {
		return []string{"--converge", convergeFor}
	}
	return nil
}

// txClusterStatus is the part of the TxCluster status the suite checks (operator/api/v1alpha1).
type txClusterStatus struct {
	ObservedGeneration int64              `json:"observedGeneration"`
	Phase              string             `json:"phase"`
	Epoch              int64              `json:"epoch"`
	Replicas           int64              `json:"replicas"`
	ReadyReplicas      int64              `json:"readyReplicas"`
	Endpoint           string             `json:"endpoint"`
	Conditions         []metav1.Condition `json:"conditions"`
	Shards             []struct {
		ID           int64    `json:"id"`
		Primary      string   `json:"primary"`
		PrimaryReady bool     `json:"primaryReady"`
		View         int64    `json:"view"`
		Members      []string `json:"members"`
	} `json:"shards"`
}

// loadSample reads the sample TxCluster manifest (what a user applies) into an object for namespace ns.
func loadSample(t *testing.T, path, ns string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &o.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if o.GetKind() != "TxCluster" {
		t.Fatalf("%s holds a %q, want a TxCluster", path, o.GetKind())
	}
	o.SetNamespace(ns)
	return o
}

func (c *cluster) get(ctx context.Context) (*unstructured.Unstructured, txClusterStatus, error) {
	var st txClusterStatus
	o, err := c.env.Dynamic.Resource(framework.TxClusters).Namespace(c.ns).Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return nil, st, err
	}
	if raw, ok := o.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, st, fmt.Errorf("TxCluster status: %w", err)
		}
	}
	return o, st, nil
}

// patch applies a JSON merge patch to the TxCluster spec.
func (c *cluster) patch(ctx context.Context, spec map[string]any) error {
	b, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	_, err = c.env.Dynamic.Resource(framework.TxClusters).Namespace(c.ns).Patch(ctx, c.name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}

func (c *cluster) want() int64 { return c.shards * c.replicas }

// primary is the current primary of a shard, as the status names it.
func (c *cluster) primary(t *testing.T, shard int) string {
	t.Helper()
	_, st, err := c.get(framework.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if shard >= len(st.Shards) || st.Shards[shard].Primary == "" {
		t.Fatalf("the status names no primary of shard %d: %+v", shard, st.Shards)
	}
	return st.Shards[shard].Primary
}

func (c *cluster) dataPods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := c.env.Kube.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "rdx.dev/role=data,rdx.dev/cluster=" + c.name})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// ready is the suite's definition of a healthy cluster: the operator saw the current generation and reports
// Ready/Running with every replica ready, every StatefulSet finished its rollout, and exactly the expected pods
// exist, all ready and none terminating.
func (c *cluster) ready(ctx context.Context) error {
	o, st, err := c.get(ctx)
	if err != nil {
		return err
	}
	if st.ObservedGeneration != o.GetGeneration() {
		return fmt.Errorf("status.observedGeneration %d, generation %d", st.ObservedGeneration, o.GetGeneration())
	}
	cond := findCondition(st.Conditions, "Ready")
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return fmt.Errorf("condition Ready %s; phase %s, %d/%d replicas ready", conditionText(cond), st.Phase, st.ReadyReplicas, c.want())
	}
	if w := findCondition(st.Conditions, "Writable"); w == nil || w.Status != metav1.ConditionTrue {
		return fmt.Errorf("Ready, but condition Writable %s", conditionText(w))
	}
	if st.Phase != "Running" || st.ReadyReplicas != c.want() {
		return fmt.Errorf("phase %s, %d/%d replicas ready", st.Phase, st.ReadyReplicas, c.want())
	}
	for shard := int64(0); shard < c.shards; shard++ {
		name := fmt.Sprintf("%s-s%d", c.name, shard)
		s, err := c.env.Kube.AppsV1().StatefulSets(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := rolledOut(s, c.replicas); err != nil {
			return fmt.Errorf("StatefulSet %s: %w", name, err)
		}
	}
	pods, err := c.dataPods(ctx)
	if err != nil {
		return err
	}
	if int64(len(pods)) != c.want() {
		return fmt.Errorf("%d data pods, want %d", len(pods), c.want())
	}
	for i := range pods {
		if p := &pods[i]; p.DeletionTimestamp != nil || !podReady(p) {
			return fmt.Errorf("pod %s not ready (phase %s)", p.Name, p.Status.Phase)
		}
	}
	return nil
}

func rolledOut(s *appsv1.StatefulSet, replicas int64) error {
	st := s.Status
	switch {
	case st.ObservedGeneration < s.Generation:
		return fmt.Errorf("generation %d not observed yet", s.Generation)
	case s.Spec.Replicas == nil || int64(*s.Spec.Replicas) != replicas:
		return fmt.Errorf("spec.replicas %v, want %d", s.Spec.Replicas, replicas)
	case st.UpdateRevision != st.CurrentRevision || int64(st.UpdatedReplicas) != replicas:
		return fmt.Errorf("rolling out: %d/%d pods at revision %s", st.UpdatedReplicas, replicas, st.UpdateRevision)
	case int64(st.ReadyReplicas) != replicas:
		return fmt.Errorf("%d/%d pods ready", st.ReadyReplicas, replicas)
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func conditionText(c *metav1.Condition) string {
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
}

// summary is a one-line account of the cluster for the step log.
func (c *cluster) summary(ctx context.Context) string {
	_, st, err := c.get(ctx)
	if err != nil {
		return err.Error()
	}
	var shards []string
	for _, s := range st.Shards {
		shards = append(shards, fmt.Sprintf("shard %d primary %s members %s", s.ID, s.Primary, strings.Join(s.Members, ",")))
	}
	return fmt.Sprintf("phase %s, epoch %d, %d/%d ready, endpoint %s; %s", st.Phase, st.Epoch, st.ReadyReplicas, st.Replicas,
		st.Endpoint, strings.Join(shards, "; "))
}

// podUIDs maps each data pod to its UID: a changed UID proves the pod was replaced.
func (c *cluster) podUIDs(ctx context.Context) (map[string]types.UID, error) {
	pods, err := c.dataPods(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]types.UID{}
	for _, p := range pods {
		out[p.Name] = p.UID
	}
	return out, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
