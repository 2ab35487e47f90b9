// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdx-dev/rdx/e2e/framework"
)

// The locking clusters that run with transport.primitives onesided (the others: rpc).
var lockingOneSided = map[string]bool{"sundial": true, "occ": true}

// startLockingClusters starts the TxClusters lockingClusters tests, named after their protocols. Their pods request
// 50m of CPU each: the five clusters' fifteen pods beside the sample's must fit in a 2-CPU node's allocatable CPU.
func startLockingClusters(t *testing.T, env *framework.Env, sample *cluster) []*cluster {
	var started []*cluster
	for _, p := range []string{"nowait", "waitdie", "mvcc", "sundial", "occ"} {
		txn := map[string]any{"protocol": p}
		spec := map[string]any{"shards": int64(1), "replicas": int64(3), "transactions": txn, "storeMemory": "256Mi",
			"resources": map[string]any{"requests": map[string]any{"cpu": "50m"}}}
		if lockingOneSided[p] {
			spec["transport"] = map[string]any{"primitives": "onesided"}
		}
		if p == "occ" {
			// Reads at the primary (not a local backup copy), so the two backups' reads are one-sided READs (sundial
			// reads at the primary anyway: the leases live there).
			txn["localBackupReads"] = false
		}
		started = append(started, startTxCluster(t, env, sample, p, spec))
	}
	return started
}

// lockingClusters tests the TxClusters startLockingClusters started, with each of RCC's two-phase-locking protocols
// (nowait, waitdie), RCC's MVCC over RPC, and RCC's SUNDIAL and OCC over one-sided primitives (primary-backup, 3
// replicas):
// MULTI/EXEC, WATCH and DISCARD through go-redis and redis-benchmark against each endpoint; then one SmallBank
// Benchmark with hot accounts (conflicting transactions) over all but nowait (a Benchmark names at most 4 targets;
// nowait is waitdie without the wait, and the conformance suites check its SmallBank), whose history must pass the
// strict-serializability checker with the exact balance invariant at each; the sundial and occ pods must have issued
// one-sided READs; and the TxClusters deleted again.
func lockingClusters(t *testing.T, env *framework.Env, sample *cluster, run string, started []*cluster) {
	var protocols []string
	for _, c := range started {
		protocols = append(protocols, c.name)
	}
	env.Step(t, "TxClusters with transactions %s (sundial and occ: onesided): MULTI/EXEC and WATCH, redis-benchmark, "+
		"a conflicting SmallBank checked", strings.Join(protocols, ", "))
	var clusters []*cluster
	for _, c := range started {
		p := c.awaitReady(t).name
		res := env.RunClient(t, c.ns, "client-"+p+"-txn", clientTimeout, "txn", "--addr", c.redisAddr, "--run", run+p)
		for _, check := range res.Checks {
			env.Logf(t, "%s ok: %s", p, check)
		}
		redisBenchmark(t, env, c, "set,get,incr")
		clusters = append(clusters, c)
	}

	checked := protocols[1:] // all but nowait (see above)
	ctx := framework.Ctx(t)
	b := benchmarkObject(t, sample.ns, fmt.Sprintf(`{targets: [{name: %s}],
workload: {type: smallbank, smallbank: {accounts: 1000, hotAccountsPercent: 10}}, coroutines: 8, duration: 4s, verify: true,
resources: {requests: {cpu: 100m, memory: 128Mi}}}`, strings.Join(checked, "}, {name: ")), "locking")
	if _, err := env.Dynamic.Resource(framework.Benchmarks).Namespace(sample.ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Benchmark: %v", err)
	}
	st := waitBench(t, env, sample.ns, "locking", "Succeeded")
	if st.Checker == nil || st.Checker.Verdict != "Pass" || st.Checker.Checked == 0 || st.Checker.Violations != 0 {
		t.Fatalf("checker %+v", st.Checker)
	}
	if len(st.Results) != len(checked) {
		t.Fatalf("results %+v", st.Results)
	}
	for _, r := range st.Results {
		if r.Committed == 0 || !strings.HasPrefix(r.Invariant, "holds: total balance") {
			t.Fatalf("%s: %d committed, invariant %q", r.Target, r.Committed, r.Invariant)
		}
		env.Logf(t, "SmallBank (10%% hot) on %s: %d %s, p99 %s, %d committed; invariant %s", r.Target, r.Throughput,
			r.Unit, r.P99, r.Committed, r.Invariant)
	}
	env.Logf(t, "checker %s over %d transactions, %d violations", st.Checker.Verdict, st.Checker.Checked,
		st.Checker.Violations)
	for _, c := range clusters {
		if !lockingOneSided[c.name] {
			continue
		}
		reads := onesidedIssued(t, env, c)
		if reads == 0 {
			t.Fatalf("%s with primitives onesided issued no one-sided operation", c.name)
		}
		env.Logf(t, "%s (onesided): %d one-sided operations issued by its pods (rdx_transport_onesided_issued_total)",
			c.name, reads)
	}
	for _, c := range clusters {
		deleteCluster(t, env, c)
	}
}

// onesidedIssued sums rdx_transport_onesided_issued_total over the cluster's pods (their /metrics, through the API
// server's pod proxy).
func onesidedIssued(t *testing.T, env *framework.Env, c *cluster) uint64 {
	ctx := framework.Ctx(t)
	pods, err := c.dataPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, p := range pods {
		raw, err := env.Kube.CoreV1().Pods(c.ns).ProxyGet("http", p.Name, "9100", "/metrics", nil).DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s /metrics: %v", p.Name, err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if !strings.HasPrefix(line, "rdx_transport_onesided_issued_total{") {
				continue
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", p.Name, line, err)
			}
			sum += uint64(v)
		}
	}
	return sum
}
