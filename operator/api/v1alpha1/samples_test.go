// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// TestSamplesAccepted creates every file of config/samples as `kubectl apply -f` would and checks it decodes into
// the Go types without unknown fields (a typo in a sample would otherwise be pruned silently).
func TestSamplesAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "operator", "config", "samples", "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("want at least 4 samples, found %d (%v)", len(files), err)
	}
	ns := env.Namespace(t)
	kinds := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &o.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := rejectUnknownFields(o.GetKind(), data); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
		o.SetNamespace(ns)
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Errorf("%s rejected by the API server: %v", filepath.Base(f), err)
		}
		kinds[o.GetKind()]++
	}
	if kinds["TxCluster"] < 2 || kinds["ReplicaSet"] < 1 || kinds["Benchmark"] < 1 {
		t.Errorf("samples must include two TxClusters, a ReplicaSet and a Benchmark; got %v", kinds)
	}
}

func rejectUnknownFields(kind string, data []byte) error {
	var target any
	switch kind {
	case "TxCluster":
		target = &rdxv1.TxCluster{}
	case "ReplicaSet":
		target = &rdxv1.ReplicaSet{}
	case "Benchmark":
		target = &rdxv1.Benchmark{}
	default:
		return nil
	}
	return yaml.UnmarshalStrict(data, target)
}

// kubectl returns a runner of the kubectl binary of KUBEBUILDER_ASSETS against the test API server.
func kubectl(t *testing.T) func(args ...string) string {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: "kubectl-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", path}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
}

func expectAll(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

// TestKubectlExplainAndColumns runs the real kubectl against the API server: field docs reach `kubectl explain`
// and the printer columns reach `kubectl get`.
func TestKubectlExplainAndColumns(t *testing.T) {
	k := kubectl(t)
	out := k("explain", "txcluster.spec.transport")
	expectAll(t, "kubectl explain txcluster.spec.transport", out,
		"transport selects the network between rdxd nodes",
		"kind", "primitives", "rdma", "hugepages", "batching", "`verbs` (RDMA through rdma-core")
	out = k("explain", "txc.spec.transport.rdma.mode")
	expectAll(t, "kubectl explain txc.spec.transport.rdma.mode", out, "sharedDevice", "sriov", "hostDevice",
		"k8s.v1.cni.cncf.io/networks")
	out = k("explain", "replicasets.rdx.dev.spec.consistency")
	expectAll(t, "kubectl explain replicasets.rdx.dev.spec.consistency", out, "strong", "readWait", "stale")
	out = k("explain", "bench.spec.workload.type")
	expectAll(t, "kubectl explain bench.spec.workload.type", out, "ycsb", "smallbank", "tatp", "tpcc", "spatial")

	ns := env.Namespace(t)
	for _, o := range []*unstructured.Unstructured{
		object(t, "TxCluster", "cols", `{shards: 2, replication: {protocol: hermes}}`),
		object(t, "ReplicaSet", "cols", `{clusterRef: {name: cols}}`),
		object(t, "Benchmark", "cols", `{targetRef: {name: cols}, workload: {type: tatp}}`),
	} {
		o.SetNamespace(ns)
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	out = k("get", "txc", "-n", ns)
	expectAll(t, "kubectl get txc", out, "SHARDS", "REPLICAS", "READY", "TXN", "REPLICATION", "TRANSPORT", "PHASE",
		"cols", "dnl4", "hermes", "tcp")
	out = k("get", "txc", "-n", ns, "-o", "wide")
	expectAll(t, "kubectl get txc -o wide", out, "RDMA", "EPOCH", "ENDPOINT", "none")
	out = k("get", "rors", "-n", ns)
	expectAll(t, "kubectl get rors", out, "CLUSTER", "CONSISTENCY", "DESIRED", "strong")
	out = k("get", "bench", "-n", ns)
	expectAll(t, "kubectl get bench", out, "TARGET", "WORKLOAD", "VERDICT", "tatp")
	out = k("get", "rdx", "-n", ns)
	expectAll(t, "kubectl get rdx (category)", out, "txcluster.rdx.dev/cols", "replicaset.rdx.dev/cols", "benchmark.rdx.dev/cols")
}

// TestReplicaSetScaleSubresource drives the scale subresource the way kubectl scale and an HPA do.
func TestReplicaSetScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	rs := &rdxv1.ReplicaSet{}
	rs.Name, rs.Namespace = "scaled", ns
	rs.Spec.ClusterRef.Name = "db"
	rs.Spec.Replicas = 1
	if err := env.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	rs.Status.Replicas = 1
	rs.Status.Selector = "rdx.dev/cluster=db,rdx.dev/role=ro"
	if err := env.Client.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}

	kubectl(t)("scale", "rors/scaled", "-n", ns, "--replicas=3")
	if err := env.Client.Get(ctx, keyOf(ns, "scaled"), rs); err != nil {
		t.Fatal(err)
	}
	if rs.Spec.Replicas != 3 {
		t.Errorf("kubectl scale set spec.replicas = %d, want 3", rs.Spec.Replicas)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, rs, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 1 || scale.Status.Selector != rs.Status.Selector {
		t.Errorf("scale = spec %d, status %d, selector %q; want 3, 1, %q",
			scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, rs.Status.Selector)
	}
}
