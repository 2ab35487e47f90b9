// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	testenv.Main(m, &env)
}

func TestFlags(t *testing.T) {
	o, err := parseFlags(flag.NewFlagSet("t", flag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.engineImage != "ghcr.io/rdx-dev/rdx-engine:"+version || o.metricsAddr != ":8080" || o.probeAddr != ":8081" ||
		o.leaderElect || o.degradedAfter != 5*time.Minute {
		t.Errorf("defaults = %+v", o)
	}
	for _, bad := range [][]string{{"--degraded-after=0s"}, {"--max-concurrent-reconciles=0"}, {"--engine-image="}, {"--nope"}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if _, err := parseFlags(fs, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestManagerWithGeneratedRBAC runs the manager as a user bound to nothing but config/rbac/role.yaml, with leader
// election on, and checks that it reconciles a TxCluster, records events, holds its Lease and serves probes and
// metrics: the ClusterRole the Helm chart ships is sufficient.
func TestManagerWithGeneratedRBAC(t *testing.T) {
	ctx := context.Background()
	const user = "system:serviceaccount:rdx-system:rdx-operator"
	bindRole(t, user)
	for _, ns := range []string{"rdx-system", "apps"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	operator, err := env.AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		t.Fatal(err)
	}

	o, err := parseFlags(flag.NewFlagSet("t", flag.ContinueOnError), []string{
		"--metrics-bind-address=" + freeAddr(t), "--health-probe-bind-address=" + freeAddr(t),
		"--leader-elect", "--leader-election-namespace=rdx-system", "--engine-image=registry.test/rdx:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, o, func() *rest.Config { return operator.Config() }) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "apps"}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if c.Status.Epoch != 1 || c.Status.Phase != rdxv1.PhasePending || c.Status.ObservedGeneration != 1 {
			return fmt.Errorf("status = %+v", c.Status)
		}
		return nil
	})
	var lease coordinationv1.Lease
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "rdx-system", Name: LeaderElectionID}, &lease); err != nil {
		t.Errorf("leader election Lease: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		var events eventsv1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace("apps")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "Created" && e.ReportingController == "rdx-operator" {
				return nil
			}
		}
		return fmt.Errorf("no Created event among %d events", len(events.Items))
	})

	expectHTTP(t, "http://"+o.probeAddr+"/healthz", "ok")
	expectHTTP(t, "http://"+o.probeAddr+"/readyz", "ok")
	expectHTTP(t, "http://"+o.metricsAddr+"/metrics", `controller_runtime_reconcile_total{controller="txcluster"`)
}

// bindRole installs the generated ClusterRole and binds it to user.
func bindRole(t *testing.T, user string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "operator", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("role.yaml: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{&role, binding} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func expectHTTP(t *testing.T, url, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: %d, body lacks %q", url, resp.StatusCode, want)
		}
		return nil
	})
}
