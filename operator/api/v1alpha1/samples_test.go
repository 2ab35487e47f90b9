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

// TestSamplesAccepted creates every file of config/samples as `kubectl apply -f` would and checks it decodes into
// the Go types without unknown fields (a typo in a sample would otherwise be pruned silently). Samples are of kinds
// the operator acts upon only.
func TestSamplesAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "operator", "config", "samples", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 samples, found %d (%v)", len(files), err)
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
	if kinds["TxCluster"] != len(files) {
		t.Errorf("every sample must be a TxCluster, the only kind the operator acts upon; got %v", kinds)
	}
}

func rejectUnknownFields(kind string, data []byte) error {
	if kind != "TxCluster" {
		return fmt.Errorf("kind %q: no controller acts upon it", kind)
	}
	return yaml.UnmarshalStrict(data, &rdxv1.TxCluster{})
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
	expectAll(t, "kubectl explain txc.spec.transactions.protocol", out, "dnl4", "dnl2", "dnl1")
	out = k("explain", "replicasets.rdx.dev")
	expectAll(t, "kubectl explain replicasets.rdx.dev", out, "has no ReplicaSet controller",
		"the API server refuses to create ReplicaSet objects")
	out = k("explain", "bench")
	expectAll(t, "kubectl explain bench", out, "has no Benchmark controller",
		"the API server refuses to create Benchmark objects", "Run benchmarks with rdx-bench")

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
	out = k("get", "rdx", "-n", ns)
	expectAll(t, "kubectl get rdx (category)", out, "txcluster.rdx.dev/cols")
}
