// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// TestSamplesAccepted creates every object of config/samples (and its paper/ reproductions, several objects per
// file) as `kubectl apply -f` would and checks it decodes into the Go types without unknown fields (a typo in a
// sample would otherwise be pruned silently). Samples are of kinds the operator acts upon only.
func TestSamplesAccepted(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "operator", "config", "samples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	paper, err2 := filepath.Glob(filepath.Join(dir, "paper", "*.yaml"))
	if err != nil || err2 != nil || len(files) < 4 || len(paper) < 2 {
		t.Fatalf("want at least 4 samples and 2 paper samples, found %d and %d (%v %v)", len(files), len(paper), err, err2)
	}
	kinds := map[string]int{}
	for _, f := range append(files, paper...) {
		ns := env.Namespace(t) // each file on its own: paper samples reuse the names of others
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			o := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := rejectUnknownFields(o.GetKind(), []byte(doc)); err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
			o.SetNamespace(ns)
			if err := env.Client.Create(context.Background(), o); err != nil {
				t.Errorf("%s rejected by the API server: %v", filepath.Base(f), err)
			}
			kinds[o.GetKind()]++
		}
	}
	if kinds["TxCluster"] < 3 || kinds["Benchmark"] < 3 || len(kinds) != 2 {
		t.Errorf("samples must be TxClusters and Benchmarks, the kinds the operator acts upon; got %v", kinds)
	}
}

func rejectUnknownFields(kind string, data []byte) error {
	switch kind {
	case "TxCluster":
		return yaml.UnmarshalStrict(data, &rdxv1.TxCluster{})
	case "Benchmark":
		return yaml.UnmarshalStrict(data, &rdxv1.Benchmark{})
	}
	return fmt.Errorf("kind %q: no controller acts upon it", kind)
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

// expectAll checks that out holds every want, with kubectl's line wrapping undone (runs of white space compare as
// one space).
func expectAll(t *testing.T, what, out string, want ...string) {
	t.Helper()
	flat := strings.Join(strings.Fields(out), " ")
	for _, w := range want {
		if !strings.Contains(flat, w) {
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
	out = k("explain", "txc.spec.transactions.protocol")
	expectAll(t, "kubectl explain txc.spec.transactions.protocol", out, "dnl4", "dnl2", "dnl1", "nowait", "waitdie", "occ", "mvcc", "sundial")
	out = k("explain", "replicasets.rdx.dev")
	expectAll(t, "kubectl explain replicasets.rdx.dev", out, "has no ReplicaSet controller",
		"the API server refuses to create ReplicaSet objects")
	out = k("explain", "bench")
	expectAll(t, "kubectl explain bench", out, "runs one rdx-bench experiment", "ConfigMap <name>-results",
		"to run again, create a new Benchmark")

	ns := env.Namespace(t)
	o := object(t, "TxCluster", "cols", `{shards: 2, transactions: {protocol: dnl2}}`)
	o.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	out = k("get", "txc", "-n", ns)
	expectAll(t, "kubectl get txc", out, "SHARDS", "REPLICAS", "READY", "TXN", "REPLICATION", "TRANSPORT", "PHASE",
		"cols", "dnl2", "primary-backup", "tcp")
	out = k("get", "txc", "-n", ns, "-o", "wide")
	expectAll(t, "kubectl get txc -o wide", out, "RDMA", "EPOCH", "ENDPOINT", "none")
	b := object(t, "Benchmark", "cols", `{targets: [{name: cols}], workload: {type: tatp}}`)
	b.SetNamespace(ns)
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	out = k("get", "bench", "-n", ns)
	expectAll(t, "kubectl get bench", out, "TARGET", "WORKLOAD", "PHASE", "PROGRESS", "THROUGHPUT", "P99", "VERDICT",
		"cols", "tatp")
	out = k("get", "rdx", "-n", ns)
	expectAll(t, "kubectl get rdx (category)", out, "txcluster.rdx.dev/cols", "benchmark.rdx.dev/cols")
}
