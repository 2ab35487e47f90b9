// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdx-dev/rdx/e2e/framework"
)

// readsSequential tells whether a replication protocol's reads are sequentially consistent, not linearizable (zab:
// rdxd's registry says Reads::kSequential): a member reads its own copy, which may be a moment behind the leader.
func readsSequential(protocol string) bool { return protocol == "zab" }

// survivesNoMemberLoss tells whether a replication protocol needs every member of a shard for its writes (hermes,
// craq: rdxd's registry says Survives::kNoLoss), so that a member's loss stops its shard's writes until it is back.
func survivesNoMemberLoss(protocol string) bool {
	return protocol == "hermes" || protocol == "craq"
}

// redisBenchmark runs redis-benchmark (the engine image carries redis-tools) from a pod against a TxCluster's
// endpoint Service: `tests` (e.g. set,get,incr), each of which must report its requests per second and no error reply (redis-benchmark stops at the first one).
func redisBenchmark(t *testing.T, env *framework.Env, c *cluster, tests string) {
	host, port, err := net.SplitHostPort(c.redisAddr)
	if err != nil {
		t.Fatalf("endpoint %q: %v", c.redisAddr, err)
	}
	out := env.RunCommand(t, c.ns, "redis-benchmark-"+c.name, env.EngineImage, clientTimeout, "redis-benchmark",
		"-h", host, "-p", port, "-t", tests, "-n", "5000", "-c", "8", "-P", "4", "-r", "1000", "--csv")
	if strings.Contains(out, "ERR") {
		t.Fatalf("redis-benchmark against %s: an error reply:\n%s", c.name, out)
	}
	rps := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Split(line, ",")
		if len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Trim(fields[1], `"`), 64); err == nil { // (not the header)
			rps[strings.Trim(fields[0], `"`)] = v
		}
	}
	for _, test := range strings.Split(tests, ",") {
		if rps[strings.ToUpper(test)] <= 0 {
			t.Fatalf("redis-benchmark against %s: no requests per second for %s:\n%s", c.name, test, out)
		}
	}
	env.Logf(t, "redis-benchmark -t %s against %s (8 connections, pipeline 4): requests/s %v", tests, c.name, rps)
}

// startTxCluster creates a TxCluster `name` beside the sample (in its namespace, with its transport, 100m of CPU
// requested) with the given spec fields, without waiting for it: the suite starts the next cluster while one is
// tested, so the time a new cluster takes to be Ready (README, troubleshooting: about 30 s here) overlaps a test.
func startTxCluster(t *testing.T, env *framework.Env, sample *cluster, name string, spec map[string]any) *cluster {
	ctx := framework.Ctx(t)
	o, _, err := sample.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	transport, _, _ := unstructured.NestedMap(o.Object, "spec", "transport")
	if own, ok := spec["transport"].(map[string]any); ok { // the sample's transport, with these fields changed
		for k, v := range own {
			transport[k] = v
		}
	}
	spec["transport"] = transport
	if _, own := spec["resources"]; !own {
		spec["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m"}}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rdx.dev/v1alpha1", "kind": "TxCluster",
		"spec": spec}}
	obj.SetName(name)
	obj.SetNamespace(sample.ns)
	created, err := env.Dynamic.Resource(framework.TxClusters).Namespace(sample.ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create TxCluster %s: %v", name, err)
	}
	env.Logf(t, "created TxCluster %s", name)
	shards, _, _ := unstructured.NestedInt64(spec, "shards")
	replicas, _, _ := unstructured.NestedInt64(spec, "replicas")
	return &cluster{env: env, ns: sample.ns, name: name, uid: created.GetUID(), shards: shards, replicas: replicas}
}

// awaitReady waits until a TxCluster startTxCluster created is Ready and serves its endpoint.
func (c *cluster) awaitReady(t *testing.T) *cluster {
	c.env.Eventually(t, "TxCluster "+c.name+" Ready", readyTimeout, c.ready)
	_, st, err := c.get(framework.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.Endpoint, c.name+".") {
		t.Fatalf("status.endpoint %q", st.Endpoint)
	}
	c.redisAddr = st.Endpoint
	c.env.Logf(t, "%s", c.summary(framework.Ctx(t)))
	return c
}

// startSingleKey starts the TxCluster singleKeyCluster tests for a protocol: named after it, 1 shard of 3, no
// transactions.
func startSingleKey(t *testing.T, env *framework.Env, sample *cluster, protocol string) *cluster {
	c := startTxCluster(t, env, sample, protocol, map[string]any{"shards": int64(1), "replicas": int64(3),
		"replication": map[string]any{"protocol": protocol}, "transactions": map[string]any{"protocol": "none"},
		"storeMemory": "256Mi"})
	c.sequentialReads = readsSequential(protocol)
	return c
}

// singleKeyCluster tests a TxCluster (startSingleKey) of a single-key replication protocol (abd, paxos, zab, hermes
// or craq; no transactions), named after it, with the sample's transport: keys written and read back through its
// endpoint (zab: a read-back re-reads a key that shows an older value, convergeFor); except with abd also
// read-modify-writes from concurrent connections (INCR, SETNX, GETSET: abd refuses them); for paxos and zab a kv
// Benchmark checked per key; then one member's pod deleted under a write load, which must go on within
// maxWritePause (abd, paxos: every operation needs only a majority of the members; zab: its leader's pod, and a
// majority elects another), or, for a protocol that survives no member's loss, without a load, the keys read back
// and more written once it is back; and the TxCluster deleted again.
func singleKeyCluster(t *testing.T, env *framework.Env, started *cluster, run, protocol string) {
	what := "a member deleted under load"
	if protocol == "zab" {
		what = "its leader deleted under load"
	}
	if survivesNoMemberLoss(protocol) {
		what = "a member deleted (no load: " + protocol + "'s writes stop until it is back)"
	}
	env.Step(t, "a TxCluster with replication %s (transactions none): keys through its endpoint, %s", protocol, what)
	ns := started.ns
	c := started.awaitReady(t)
	res := env.RunClient(t, ns, "client-"+protocol+"-write", clientTimeout, "write", "--addr", c.redisAddr, "--run",
		run+"a", "--count", "500")
	env.Logf(t, "%s: wrote %d keys in %.2fs", protocol, res.Keys, res.Seconds)
	verifyKeys(t, env, c, "client-"+protocol+"-verify", run+"a", "500")
	if protocol == "abd" { // (abd refuses INCR: replication/README.md)
		redisBenchmark(t, env, c, "set,get")
	} else {
		redisBenchmark(t, env, c, "set,get,incr")
	}
	if protocol != "abd" { // read-modify-writes from 8 connections, counted exactly once
		res = env.RunClient(t, ns, "client-"+protocol+"-counter", clientTimeout, append([]string{"counter", "--addr",
			c.redisAddr, "--run", run + protocol, "--count", "2000"}, c.readBackArgs()...)...)
		for _, check := range res.Checks {
			env.Logf(t, "ok: %s (%.2fs)%s", check, res.Seconds, staleNote(res))
		}
	}
	if protocol == "paxos" || protocol == "zab" {
		linearizabilityBenchmark(t, env, c)
	}
	member, role := fmt.Sprintf("%s-s0-1", c.name), "a "+protocol+" member"
	if protocol == "zab" {
		member, role = c.primary(t, 0), "zab's leader" // (the status names the leader as the shard's primary)
	}
	if survivesNoMemberLoss(protocol) {
		// Hermes and CRAQ survive no member's loss (a write needs every member): writes stop while the member is
		// gone, and every acknowledged key is there once it is back.
		deletePod(t, env, c, member, "a "+protocol+" member (writes stop until it is back)")
		verifyKeys(t, env, c, "client-"+protocol+"-verify-after-member", run+"a", "500")
		res = env.RunClient(t, ns, "client-"+protocol+"-write-after-member", clientTimeout, "write", "--addr",
			c.redisAddr, "--run", run+"b", "--count", "200")
		verifyKeys(t, env, c, "client-"+protocol+"-verify-b", run+"b", "200")
	} else {
		underLoad(t, env, c, run+protocol, "deleting the pod of "+role, func() {
			deletePod(t, env, c, member, role)
		})
	}
	deleteCluster(t, env, c)
}
