// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

// The suite's API server: a real kube-apiserver and etcd (envtest) with the CRDs of crds/, and a kubeconfig for it.
var (
	env            *testenv.Env
	testConfig     *rest.Config
	testKubeconfig string
)

func TestMain(m *testing.M) {
	testenv.Main(m, &env, func(e *testenv.Env) (func(), error) {
		testConfig = e.Config
		dir, err := os.MkdirTemp("", "kubectl-rdx-test-")
		if err != nil {
			return nil, err
		}
		testKubeconfig = filepath.Join(dir, "kubeconfig")
		return func() { _ = os.RemoveAll(dir) }, os.WriteFile(testKubeconfig, e.KubeConfig, 0o600)
	})
}

// testApp is an app on the test API server in namespace ns, printing into buffers, with a fixed clock.
func testApp(t *testing.T, ns string) (*app, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	return &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, dyn: dyn, kube: kube,
		namespace: ns, now: fixedNow, pollInterval: time.Millisecond}, &stdout, &stderr
}

func fixedNow() time.Time { return time.Date(2026, 5, 4, 13, 14, 15, 0, time.UTC) }

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(testConfig)
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// runCLI runs a whole command line as kubectl would, against the test API server's kubeconfig.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"--kubeconfig", testKubeconfig}, args...), strings.NewReader(""),
		&out, &errOut)
	return code, out.String(), errOut.String()
}

// TestCLI covers what needs no API server: version, help, and refusing malformed command lines.
func TestCLI(t *testing.T) {
	for _, c := range []struct {
		args     []string
		code     int
		out, err string
		notInOut string
		desc     string
	}{
		{args: []string{"--version"}, out: "kubectl-rdx " + version, desc: "version"},
		{args: []string{"help"}, out: "kubectl rdx bench run -f FILE", desc: "help"},
		{args: nil, out: "kubectl rdx status TXCLUSTER", desc: "no command"},
		{args: []string{"bench"}, out: "kubectl rdx bench watch NAME", notInOut: "kubectl rdx status", desc: "group"},
		{args: []string{"help", "status"}, out: "kubectl rdx status TXCLUSTER", notInOut: "kubectl rdx bench",
			desc: "help cmd"},
		{args: []string{"bench", "watch", "-h"}, out: "--timeout", desc: "-h"},
		{args: []string{"frobnicate"}, code: 1, err: `unknown command "frobnicate"`, desc: "unknown"},
		{args: []string{"bench", "watch"}, code: 1, err: "takes 1 argument(s), got 0", desc: "missing arg"},
		{args: []string{"status", "a", "b"}, code: 1, err: "takes 1 argument(s), got 2", desc: "extra arg"},
		{args: []string{"bench", "results", "x", "--out", "d"}, code: 1, err: "--out does not apply to bench results",
			desc: "foreign flag"},
		{args: []string{"bench", "run"}, code: 1, err: "bench run needs -f FILE", desc: "no file"},
		{args: []string{"bench", "watch", "x", "--timeout", "0s"}, code: 1, err: "--timeout must be positive",
			desc: "timeout"},
		{args: []string{"--bogus"}, code: 1, err: "unknown flag: --bogus", desc: "bad flag"},
		{args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "status", "x"}, code: 1, err: "load kubeconfig",
			desc: "no kubeconfig"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, strings.NewReader(""), &out, &errOut)
			if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.err) ||
				(c.notInOut != "" && strings.Contains(out.String(), c.notInOut)) {
				t.Errorf("run %q = %d\nstdout:\n%s\nstderr:\n%s\nwant %d, stdout with %q (without %q), stderr with %q",
					c.args, code, out.String(), errOut.String(), c.code, c.out, c.notInOut, c.err)
			}
		})
	}
}

// TestNamespaceFromKubeconfig: without -n the context's namespace applies, as with kubectl.
func TestNamespaceFromKubeconfig(t *testing.T) {
	ns := namespace(t)
	cfg, err := clientcmd.LoadFromFile(testKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Contexts {
		c.Namespace = ns
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	a, err := newApp(&options{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.namespace != ns || a.explicitNamespace {
		t.Errorf("namespace %q (explicit %v), want %q from the context", a.namespace, a.explicitNamespace, ns)
	}
	a, err = newApp(&options{namespace: "other"}, nil, nil, nil)
	if err != nil || a.namespace != "other" || !a.explicitNamespace {
		t.Errorf("-n other: %+v, %v", a, err)
	}
}
