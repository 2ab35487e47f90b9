// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/benchreport"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

// runSummary is a successful run's rdx-bench summary, as the container's termination message.
func runSummary(throughput float64, ledger int64) string {
	return fmt.Sprintf(`{"rdx_bench_summary":1,"ok":true,"exit_code":0,"mode":"txn","workload":"smallbank","stage":"run",`+
		`"duration_s":2,"throughput":%g,"unit":"tx/s","latency_us":{"p50":40.5,"p99":812,"p999":1500},`+
		`"committed":%d,"aborted":20,"abort_rate":0.01,"errors":0,"emulated_onesided_ops":77,"ledger":%d,`+
		`"checker":{"model":"strict-serializability","ok":true,"checked":%d,"violations":0,"anomaly":""},`+
		`"invariant":{"checked":true,"ok":true,"summary":"total balance 100 == 100"}}`,
		throughput, int64(throughput*2), ledger, int64(throughput*2))
}

const loadSummary = `{"rdx_bench_summary":1,"ok":true,"exit_code":0,"mode":"txn","workload":"smallbank","stage":"load",` +
	`"duration_s":0,"throughput":0,"unit":"tx/s","latency_us":{"p50":0,"p99":0,"p999":0},"committed":0,"aborted":0,` +
	`"abort_rate":0,"errors":0,"emulated_onesided_ops":0,"ledger":0,"load":{"records":2000,"seconds":0.5}}`

func condition(b *rdxv1.Benchmark) metav1.Condition {
	if c := meta.FindStatusCondition(b.Status.Conditions, rdxv1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// waitPhase waits until the Benchmark is in phase, and returns it.
func waitPhase(t *testing.T, b *rdxv1.Benchmark, phase rdxv1.BenchmarkPhase) *rdxv1.Benchmark {
	t.Helper()
	var cur *rdxv1.Benchmark
	testenv.Eventually(t, wait, func() error {
		cur = getBenchmark(t, b)
		if cur.Status.Phase != phase {
			return fmt.Errorf("phase %q (%q, %v), want %q", cur.Status.Phase, cur.Status.Progress, condition(cur), phase)
		}
		return nil
	})
	return cur
}

func argValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestSweepOverTwoTargets: Jobs appear one at a time in plan order (load, then one run per sweep value, per
// target), with the sweep value and the ledger of the earlier runs on their command line; status follows the
// phases; the finished Benchmark has every result, the verdict and a results ConfigMap with the report.
func TestSweepOverTwoTargets(t *testing.T) {
	ns := env.Namespace(t)
	readyCluster(t, ns, "db")
	readyCluster(t, ns, "db2")
	b := createBenchmark(t, ns, "sweep", rdxv1.BenchmarkSpec{
		Targets:  []rdxv1.TargetReference{{Name: "db"}, {Name: "db2"}},
		Workload: rdxv1.WorkloadSpec{Type: rdxv1.WorkloadSmallBank, SmallBank: &rdxv1.SmallBankParams{Accounts: 1000}},
		Duration: &metav1.Duration{Duration: 2 * time.Second},
		Sweep:    &rdxv1.SweepSpec{Parameter: "coroutines", Values: []string{"1", "4"}},
	})
	ledger := int64(0)
	for target, name := range []string{"db", "db2"} {
		load := waitJob(t, ns, fmt.Sprintf("sweep-t%d-load", target))
		args := load.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--no-run") || argValue(args, "--workload") != "smallbank:accounts=1000,hot_percent=0" {
			t.Fatalf("load args %v", args)
		}
		if vols := load.Spec.Template.Spec.Volumes; vols[0].ConfigMap == nil || vols[0].ConfigMap.Name != name+"-topology" {
			t.Fatalf("load Job mounts %v, want the topology of %s", vols, name)
		}
		if ref := metav1.GetControllerOf(load); ref == nil || ref.Kind != "Benchmark" || ref.Name != "sweep" ||
			!ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Fatalf("load Job owner %v: deleting the Benchmark must delete its Jobs", ref)
		}
		waitPhase(t, b, rdxv1.BenchmarkLoading)
		finishJob(t, load, true, loadSummary)
		ledger = 0
		for point, coroutines := range []string{"1", "4"} {
			run := waitJob(t, ns, fmt.Sprintf("sweep-t%d-run-%d", target, point+1))
			cur := waitPhase(t, b, rdxv1.BenchmarkRunning)
			want := fmt.Sprintf("run %d/6 %s (coroutines=%s)", target*3+point+2, name, coroutines)
			if cur.Status.Progress != want {
				t.Errorf("progress %q, want %q", cur.Status.Progress, want)
			}
			args := run.Spec.Template.Spec.Containers[0].Args
			if argValue(args, "--coroutines") != coroutines || argValue(args, "--duration") != "2" ||
				argValue(args, "--ledger-base") != fmt.Sprint(ledger) || argValue(args, "--history") == "" {
				t.Fatalf("run args %v (ledger base want %d)", args, ledger)
			}
			if n := len(jobNames(t, ns)); n != target*3+point+2 {
				t.Fatalf("%d Jobs exist, want %d: one at a time", n, target*3+point+2)
			}
			delta := int64(100*target + 10*point + 5)
			finishJob(t, run, true, runSummary(float64(1000*(point+1)), delta))
			ledger += delta
		}
	}
	done := waitPhase(t, b, rdxv1.BenchmarkSucceeded)
	st := done.Status
	if len(st.Results) != 4 || st.StepsDone != 6 || st.StepsTotal != 6 || st.CompletionTime == nil {
		t.Fatalf("status %+v", st)
	}
	r := st.Results[3]
	if r.Target != "db2" || r.SweepValue != "4" || r.Throughput != 2000 || r.Unit != "tx/s" ||
		r.P99.Duration != 812*time.Microsecond || r.EmulatedOneSidedOps != 77 || r.AbortRate != "0.0100" ||
		!strings.HasPrefix(r.Invariant, "holds: total balance") {
		t.Errorf("last result %+v", r)
	}
	if c := st.Checker; c == nil || c.Verdict != "Pass" || c.Model != "strict-serializability" || c.Checked != 12000 {
		t.Errorf("checker %+v", c)
	}
	if c := condition(done); c.Status != metav1.ConditionTrue || c.Reason != "Succeeded" {
		t.Errorf("Ready %+v", c)
	}
	if st.Throughput != "2000 tx/s" || st.P99 != "812µs" {
		t.Errorf("throughput %q p99 %q", st.Throughput, st.P99)
	}

	var cm corev1.ConfigMap
	testenv.Eventually(t, wait, func() error {
		return env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "sweep-results"}, &cm)
	})
	var res benchreport.Results
	if err := json.Unmarshal([]byte(cm.Data[ResultsKey]), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 4 || len(res.Targets) != 2 || res.Targets[1].TxnProtocol != "dnl4" || res.SweepParameter != "coroutines" {
		t.Errorf("results.json %+v", res)
	}
	if !strings.Contains(cm.Data[ReportKey], "db2") || len(cm.BinaryData["throughput.png"]) < 1000 {
		t.Errorf("report missing: html %d bytes, PNGs %v", len(cm.Data[ReportKey]), len(cm.BinaryData))
	}
	if done.Status.ResultsConfigMap == nil || done.Status.ResultsConfigMap.Name != "sweep-results" {
		t.Errorf("resultsConfigMap %+v", done.Status.ResultsConfigMap)
	}
}

// TestTargetNotFound: no Job while the target is missing or not Ready; the Benchmark starts once it is.
func TestTargetNotFound(t *testing.T) {
	ns := env.Namespace(t)
	b := createBenchmark(t, ns, "orphan", rdxv1.BenchmarkSpec{
		Targets: []rdxv1.TargetReference{{Name: "later"}}, Workload: rdxv1.WorkloadSpec{Type: rdxv1.WorkloadKV},
	})
	cur := waitPhase(t, b, rdxv1.BenchmarkPending)
	if c := condition(cur); c.Reason != "TargetNotFound" || !strings.Contains(c.Message, "TxCluster later does not exist") {
		t.Fatalf("Ready %+v", c)
	}
	testenv.Consistently(t, time.Second, func() error {
		if names := jobNames(t, ns); len(names) > 0 {
			return fmt.Errorf("Jobs %v without a target", names)
		}
		return nil
	})
	readyCluster(t, ns, "later")
	j := waitJob(t, ns, "orphan-t0-load")
	if args := j.Spec.Template.Spec.Containers[0].Args; argValue(args, "--workload") != "kv" || argValue(args, "--keys") != "100000" {
		t.Errorf("kv load args %v", args)
	}
}

// TestTargetUnsupported: a workload the target's protocols cannot run fails before any Job: transactions on a
// TxCluster that runs none, incr and cas writes on one whose replication (abd) offers plain writes only.
func TestTargetUnsupported(t *testing.T) {
	ns := env.Namespace(t)
	readyClusterOf(t, ns, "quorum", rdxv1.TxClusterSpec{
		Replication:  rdxv1.ReplicationSpec{Protocol: rdxv1.ReplicationABD},
		Transactions: rdxv1.TransactionsSpec{Protocol: rdxv1.ProtocolNone},
	})
	kv := func(mix ...rdxv1.KVWriteKind) rdxv1.WorkloadSpec {
		return rdxv1.WorkloadSpec{Type: rdxv1.WorkloadKV,
			KV: &rdxv1.KVParams{Keys: 16, ReadPercent: 50, ValueSize: 32, Threads: 1, Outstanding: 4, WriteMix: mix}}
	}
	for name, tc := range map[string]struct {
		workload rdxv1.WorkloadSpec
		want     string // "": runs
	}{
		"txn-on-none": {rdxv1.WorkloadSpec{Type: rdxv1.WorkloadSmallBank}, "workload smallbank runs transactions and TxCluster quorum runs none"},
		"cas-on-abd":  {kv("set", "cas"), "needs read-modify-writes, and TxCluster quorum replicates with abd"},
		"set-on-abd":  {kv("set"), ""},
	} {
		b := createBenchmark(t, ns, name, rdxv1.BenchmarkSpec{Targets: []rdxv1.TargetReference{{Name: "quorum"}}, Workload: tc.workload})
		if tc.want == "" {
			waitJob(t, ns, name+"-t0-load")
			continue
		}
		cur := waitPhase(t, b, rdxv1.BenchmarkFailed)
		if c := condition(cur); c.Reason != "TargetUnsupported" || !strings.Contains(c.Message, tc.want) {
			t.Errorf("%s: Ready %+v", name, c)
		}
	}
	for _, j := range jobNames(t, ns) {
		if !strings.HasPrefix(j, "set-on-abd-") {
			t.Errorf("Job %s for a workload the target cannot run", j)
		}
	}
}

// TestFailedRun: a run Job that fails ends the Benchmark Failed with the pod's last error; one whose checker found
// an anomaly also records the run and a Fail verdict.
func TestFailedRun(t *testing.T) {
	ns := env.Namespace(t)
	readyCluster(t, ns, "db")
	spec := rdxv1.BenchmarkSpec{
		Targets:  []rdxv1.TargetReference{{Name: "db"}},
		Workload: rdxv1.WorkloadSpec{Type: rdxv1.WorkloadOGP},
		Phases:   []rdxv1.BenchmarkPhaseName{rdxv1.BenchmarkRun},
	}
	b := createBenchmark(t, ns, "unreachable", spec)
	run := waitJob(t, ns, "unreachable-t0-run-1")
	if args := run.Spec.Template.Spec.Containers[0].Args; argValue(args, "--ledger-base") != "" ||
		argValue(args, "--workload") != "ogp:keys=1000000,g=4,p=2,value_size=16,rmw=1" {
		t.Errorf("run without load: args %v", args)
	}
	finishJob(t, run, false, "12:00:01.000 error client 0: unavailable: cannot reach node db-s0-0 within 60 s\n")
	cur := waitPhase(t, b, rdxv1.BenchmarkFailed)
	if c := condition(cur); c.Reason != "JobFailed" || !strings.Contains(c.Message, "cannot reach node db-s0-0") {
		t.Errorf("Ready %+v", c)
	}

	b = createBenchmark(t, ns, "anomaly", spec)
	run = waitJob(t, ns, "anomaly-t0-run-1")
	bad := strings.Replace(runSummary(500, 0), `"ok":true,"checked":1000,"violations":0,"anomaly":""`,
		`"ok":false,"checked":1000,"violations":3,"anomaly":"G1c: cycle T12 -> T40 -> T12"`, 1)
	bad = strings.Replace(bad, `"ok":true,"exit_code":0`, `"ok":false,"exit_code":4`, 1)
	finishJob(t, run, false, bad)
	cur = waitPhase(t, b, rdxv1.BenchmarkFailed)
	if c := condition(cur); c.Reason != "CheckFailed" || !strings.Contains(c.Message, "3 violations in 1000 checked: G1c") {
		t.Errorf("Ready %+v", c)
	}
	if c := cur.Status.Checker; c == nil || c.Verdict != "Fail" || c.Violations != 3 || len(cur.Status.Results) != 1 {
		t.Errorf("checker %+v, results %d", c, len(cur.Status.Results))
	}

	// A check that could not finish (the data could not be read back) is no verdict on the data.
	b = createBenchmark(t, ns, "unchecked", spec)
	run = waitJob(t, ns, "unchecked-t0-run-1")
	lost := strings.Replace(runSummary(500, 0), `"model":"strict-serializability","ok":true,"checked":1000,"violations":0,"anomaly":""`,
		`"model":"acknowledged-writes","ok":false,"checked":10,"violations":0,"anomaly":"990 of 1000 acknowledged writes could not be read back"`, 1)
	lost = strings.Replace(lost, `"ok":true,"exit_code":0`, `"ok":false,"exit_code":3,"error":"verify: unavailable"`, 1)
	finishJob(t, run, false, lost)
	cur = waitPhase(t, b, rdxv1.BenchmarkFailed)
	if c := condition(cur); c.Reason != "JobFailed" || !strings.Contains(c.Message, "verify: unavailable") {
		t.Errorf("Ready %+v", c)
	}
	if c := cur.Status.Checker; c == nil || c.Verdict != "Skipped" || !strings.Contains(c.Message, "not checked: 990 of 1000") {
		t.Errorf("checker %+v", c)
	}
}
