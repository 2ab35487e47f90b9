// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Command manager runs the rdx operator: the TxCluster and Benchmark controllers, health and readiness endpoints and Prometheus
// metrics, with optional leader election for running more than one replica.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/controller/benchmark"
	"github.com/rdx-dev/rdx/operator/internal/controller/txcluster"
)

// version is set at build time (-ldflags "-X main.version=..."); it picks the default engine image.
var version = "0.1.0"

// LeaderElectionID names the Lease that replicas of the operator compete for.
const LeaderElectionID = "rdx-operator.rdx.dev"

// options are the manager's command-line flags.
type options struct {
	metricsAddr   string
	probeAddr     string
	leaderElect   bool
	leaderNS      string
	engineImage   string
	degradedAfter time.Duration
	maxConcurrent int
	showVersion   bool
	zap           zap.Options
}

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (plain HTTP); 0 disables it")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader through the Lease "+LeaderElectionID+" so only one replica reconciles")
	fs.StringVar(&o.leaderNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's own namespace)")
	fs.StringVar(&o.engineImage, "engine-image", "ghcr.io/rdx-dev/rdx-engine:"+version, "rdx engine image for TxClusters and Benchmarks without spec.image")
	fs.DurationVar(&o.degradedAfter, "degraded-after", 5*time.Minute, "how long a pod may stay unready before its TxCluster reports Degraded")
	fs.IntVar(&o.maxConcurrent, "max-concurrent-reconciles", 2, "TxClusters reconciled in parallel")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.validate()
}

func (o options) validate() error {
	switch {
	case o.degradedAfter <= 0:
		return fmt.Errorf("--degraded-after must be positive, got %s", o.degradedAfter)
	case o.maxConcurrent < 1:
		return fmt.Errorf("--max-concurrent-reconciles must be >= 1, got %d", o.maxConcurrent)
	case o.engineImage == "":
		return fmt.Errorf("--engine-image must not be empty")
	}
	return nil
}

func main() {
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	if o.showVersion {
		fmt.Println(version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	if err := run(ctrl.SetupSignalHandler(), o, ctrl.GetConfigOrDie); err != nil {
		ctrl.Log.WithName("setup").Error(err, "manager failed")
		os.Exit(1)
	}
}

// run starts the manager and blocks until ctx ends; getConfig supplies the API server connection.
func run(ctx context.Context, o options, getConfig func() *rest.Config) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(rdxv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(getConfig(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: o.leaderNS,
		// The next leader may start at once when the old one stops cleanly.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{ByObject: cacheByObject()},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	reconciler := &txcluster.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder("rdx-operator"),
		EngineImage:   o.engineImage,
		DegradedAfter: o.degradedAfter,
	}
	if err := reconciler.SetupWithManager(mgr, o.maxConcurrent); err != nil {
		return fmt.Errorf("set up the TxCluster controller: %w", err)
	}
	logs, err := benchmark.NewLogTailer(mgr.GetConfig())
	if err != nil {
		return err
	}
	benchmarks := &benchmark.Reconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Recorder:    mgr.GetEventRecorder("rdx-operator"),
		EngineImage: o.engineImage,
		Logs:        logs,
	}
	if err := benchmarks.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Benchmark controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting", "version", version, "engineImage", o.engineImage, "leaderElection", o.leaderElect)
	return mgr.Start(ctx)
}

// cacheByObject merges the controllers' cache limits.
func cacheByObject() map[client.Object]cache.ByObject {
	out := txcluster.CacheByObject()
	maps.Copy(out, benchmark.CacheByObject())
	return out
}
