// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdx-dev/rdx/e2e/framework"
)

// lockingClusters runs a TxCluster with each of RCC's two-phase-locking protocols (nowait, waitdie; primary-backup,
// 3 replicas): MULTI/EXEC, WATCH and DISCARD through go-redis and redis-benchmark against each endpoint; then one
// SmallBank Benchmark over both with hot accounts (conflicting transactions), whose history must pass the
// strict-serializability checker with the exact balance invariant at each; and the TxClusters deleted again.
func lockingClusters(t *testing.T, env *framework.Env, sample *cluster, run string) {
	protocols := []string{"nowait", "waitdie"}
	env.Step(t, "TxClusters with transactions %s: MULTI/EXEC and WATCH, redis-benchmark, a conflicting SmallBank checked",
		strings.Join(protocols, " and "))
	var clusters []*cluster
	for _, p := range protocols {
		c := createTxCluster(t, env, sample, p, map[string]any{"shards": int64(1), "replicas": int64(3),
			"transactions": map[string]any{"protocol": p}, "storeMemory": "256Mi"})
		res := env.RunClient(t, c.ns, "client-"+p+"-txn", clientTimeout, "txn", "--addr", c.redisAddr, "--run", run+p)
		for _, check := range res.Checks {
			env.Logf(t, "%s ok: %s", p, check)
		}
		redisBenchmark(t, env, c, "set,get,incr")
		clusters = append(clusters, c)
	}

	ctx := framework.Ctx(t)
	b := benchmarkObject(t, sample.ns, fmt.Sprintf(`{targets: [{name: %s}, {name: %s}],
workload: {type: smallbank, smallbank: {accounts: 1000, hotAccountsPercent: 10}}, coroutines: 8, duration: 4s, verify: true,
resources: {requests: {cpu: 100m, memory: 128Mi}}}`, protocols[0], protocols[1]), "locking")
	if _, err := env.Dynamic.Resource(framework.Benchmarks).Namespace(sample.ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Benchmark: %v", err)
	}
	st := waitBench(t, env, sample.ns, "locking", "Succeeded")
	if st.Checker == nil || st.Checker.Verdict != "Pass" || st.Checker.Checked == 0 || st.Checker.Violations != 0 {
		t.Fatalf("checker %+v", st.Checker)
	}
	if len(st.Results) != len(protocols) {
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
		deleteCluster(t, env, c)
	}
}
