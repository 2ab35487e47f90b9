// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with the rdx CRDs from
// crds/ installed, for the API and controller test suites.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// Env is a running API server with the rdx CRDs.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *k8sruntime.Scheme
}

// RepoRoot is the repository's top directory (the one holding crds/ and operator/).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start brings up kube-apiserver and etcd from $KUBEBUILDER_ASSETS and installs every CRD of crds/.
func Start() (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run `make test-operator`, or " +
			"KUBEBUILDER_ASSETS=\"$(hack/envtest.sh)\" go test ./...")
	}
	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(rdxv1.AddToScheme(scheme))
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "crds")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop() // Start may fail after launching etcd and kube-apiserver (e.g. on an invalid CRD)
		return nil, fmt.Errorf("start envtest from %s: %w", assets, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Client: cl, Scheme: scheme}, nil
}

// Main runs a package's tests against one Env and stops it afterwards. Each setup function runs once the API
// server is up (e.g. to start a manager) and returns how to stop what it started.
func Main(m *testing.M, env **Env, setup ...func(*Env) (stop func(), err error)) {
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	var stops []func()
	for _, s := range setup {
		stop, err := s(e)
		if err != nil {
			fmt.Fprintln(os.Stderr, "test setup:", err)
			_ = e.Stop()
			os.Exit(1)
		}
		stops = append(stops, stop)
	}
	// An interrupted run must not leave etcd and kube-apiserver behind.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-signals
		_ = e.Stop()
		fmt.Fprintln(os.Stderr, "stopped envtest on", s)
		os.Exit(130)
	}()
	code := m.Run()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// Namespace creates a fresh namespace for one test.
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// Eventually calls check until it returns nil or timeout passes, then fails the test with check's last error.
func Eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Consistently calls check for the whole duration and fails the test as soon as it returns an error; it is for
// asserting that something does not happen.
func Consistently(t *testing.T, duration time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// QuietLogger sets controller-runtime's logger for a controller suite: reconcile errors are expected in some tests
// (and retried), so only RDX_TEST_LOG=1 shows the manager's log.
func QuietLogger() {
	level := zapcore.PanicLevel
	if os.Getenv("RDX_TEST_LOG") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel)))
}

// StartManager runs a manager against e, as cmd/manager does (no metrics or probe listeners), with the given cache
// limits and the controllers register adds; it returns how to stop it.
func StartManager(e *Env, byObject map[client.Object]cache.ByObject, register func(ctrl.Manager) error) (func(), error) {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: byObject},
	})
	if err != nil {
		return nil, err
	}
	if err := register(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}, nil
}
