// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package framework holds what the rdx e2e suite needs around a real cluster: settings from the environment,
// clients, step logging, deadline-bound polling, helm, client pods and failure diagnostics.
package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Settings come from RDX_E2E_* environment variables (hack/e2e.sh sets them); see e2e/README.md.
type Settings struct {
	Kubeconfig      string
	HelmBin         string // helm binary
	KubectlBin      string // kubectl binary (the suite captures `kubectl get -w` output)
	OperatorChart   string // charts/rdx-operator
	SampleTxCluster string // operator/config/samples/rdx_v1alpha1_txcluster_tcp.yaml
	Transport       string // the sample's transport.kind: tcp, or verbs on a cluster with RDMA devices (kind on soft-RoCE)
	OperatorImage   string // repository:tag of the operator image the chart installs
	EngineImage     string // repository:tag of the engine image (the operator's --engine-image)
	RolloutImage    string // the same engine under another tag: what the rolling image update moves to
	ClientImage     string // image holding /rdx-e2e-client
	PullPolicy      string // imagePullPolicy of every pod the suite creates or installs
	Keys            int    // keys written before the pod deletions and read back after each
	ArtifactsDir    string // diagnostics land here on failure (and in the test log)
	Keep            bool   // leave namespaces and the release behind for debugging
}

// Env is a connection to the cluster under test.
type Env struct {
	Settings
	Config    *rest.Config
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	start     time.Time
	steps     int
}

// Load reads the settings and connects; it fails the test with the variable to set when something is missing.
func Load(t *testing.T) *Env {
	t.Helper()
	repo := repoRoot(t)
	s := Settings{
		Kubeconfig:      os.Getenv("KUBECONFIG"),
		HelmBin:         envOr("RDX_E2E_HELM", "helm"),
		KubectlBin:      envOr("RDX_E2E_KUBECTL", "kubectl"),
		OperatorChart:   envOr("RDX_E2E_OPERATOR_CHART", filepath.Join(repo, "charts", "rdx-operator")),
		SampleTxCluster: envOr("RDX_E2E_SAMPLE", filepath.Join(repo, "operator", "config", "samples", "rdx_v1alpha1_txcluster_tcp.yaml")),
		Transport:       envOr("RDX_E2E_TRANSPORT", "tcp"),
		OperatorImage:   envOr("RDX_E2E_OPERATOR_IMAGE", "ghcr.io/rdx-dev/rdx-operator:0.1.0"),
		EngineImage:     envOr("RDX_E2E_ENGINE_IMAGE", "ghcr.io/rdx-dev/rdx-engine:0.1.0"),
		RolloutImage:    os.Getenv("RDX_E2E_ROLLOUT_IMAGE"),
		ClientImage:     os.Getenv("RDX_E2E_CLIENT_IMAGE"),
		PullPolicy:      envOr("RDX_E2E_PULL_POLICY", "IfNotPresent"),
		ArtifactsDir:    os.Getenv("RDX_E2E_ARTIFACTS"),
		Keep:            os.Getenv("RDX_E2E_KEEP") == "1",
	}
	var err error
	if s.Keys, err = strconv.Atoi(envOr("RDX_E2E_KEYS", "500")); err != nil || s.Keys < 1 || s.Keys > 100000 {
		t.Fatalf("RDX_E2E_KEYS=%q: want an integer in 1..100000", os.Getenv("RDX_E2E_KEYS"))
	}
	switch {
	case s.Transport != "tcp" && s.Transport != "verbs":
		t.Fatalf("RDX_E2E_TRANSPORT=%q: want tcp or verbs", s.Transport)
	case s.Kubeconfig == "":
		t.Fatal("KUBECONFIG is not set: point it at the cluster under test (hack/e2e.sh does)")
	case s.ClientImage == "":
		t.Fatal("RDX_E2E_CLIENT_IMAGE is not set: the image with /rdx-e2e-client (hack/e2e.sh builds and loads it)")
	}
	for what, path := range map[string]string{"RDX_E2E_OPERATOR_CHART": s.OperatorChart + "/Chart.yaml", "RDX_E2E_SAMPLE": s.SampleTxCluster} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	if _, err := exec.LookPath(s.HelmBin); err != nil {
		t.Fatalf("RDX_E2E_HELM=%q: %v", s.HelmBin, err)
	}
	if _, err := exec.LookPath(s.KubectlBin); err != nil {
		t.Fatalf("RDX_E2E_KUBECTL=%q: %v", s.KubectlBin, err)
	}
	if strings.Count(s.OperatorImage, ":") < 1 || strings.Count(s.EngineImage, ":") < 1 {
		t.Fatalf("RDX_E2E_OPERATOR_IMAGE=%q and RDX_E2E_ENGINE_IMAGE=%q must be repository:tag", s.OperatorImage, s.EngineImage)
	}
	if s.RolloutImage == "" {
		s.RolloutImage = s.EngineImage + "-rollout" // hack/images.sh engine tags and loads it
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("KUBECONFIG=%s: %v", s.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = 50, 100, 30*time.Second
	e := &Env{Settings: s, Config: cfg, start: time.Now()}
	if e.Kube, err = kubernetes.NewForConfig(cfg); err == nil {
		if e.Dynamic, err = dynamic.NewForConfig(cfg); err == nil {
			if e.Metadata, err = metadata.NewForConfig(cfg); err == nil {
				e.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg)
			}
		}
	}
	if err != nil {
		t.Fatalf("clients for %s: %v", s.Kubeconfig, err)
	}
	return e
}

// Step announces the next step of the suite with a number and the time since the start.
func (e *Env) Step(t *testing.T, format string, args ...any) {
	t.Helper()
	e.steps++
	t.Logf("[%s +%4.0fs] STEP %d: %s", time.Now().Format("15:04:05"), time.Since(e.start).Seconds(), e.steps, fmt.Sprintf(format, args...))
}

// Logf logs a detail of the current step, timestamped.
func (e *Env) Logf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("[%s +%4.0fs]   %s", time.Now().Format("15:04:05"), time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
}

// Eventually polls check every second until it returns nil, logging each new reason it is not there yet; it fails
// the test with the last reason when the deadline passes.
func (e *Env) Eventually(t *testing.T, what string, timeout time.Duration, check func(ctx context.Context) error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	last := ""
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			e.Logf(t, "%s (%.1fs)", what, time.Since(start).Seconds())
			return
		}
		if msg := err.Error(); msg != last {
			e.Logf(t, "waiting for %s: %s", what, msg)
			last = msg
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(time.Second)
	}
}

// Ctx is a context for one API call or short sequence of them.
func Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// RunID is a short random name part, so parallel or repeated runs never share namespaces or keys.
func RunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// repoRoot is the directory above e2e/ (go test runs in the package directory).
func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "e2e", "go.mod")); err == nil {
			return dir
		}
	}
	t.Fatalf("no e2e/go.mod above %s", wd)
	return ""
}
