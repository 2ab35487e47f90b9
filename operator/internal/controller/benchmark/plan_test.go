// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"context"
	"reflect"
	"strings"
	"testing"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// TestFilledDefaultsMatchTheAPI: a parameter block the controller fills in (for a sweep over an omitted block)
// equals the one the API server defaults from an empty block.
func TestFilledDefaultsMatchTheAPI(t *testing.T) {
	ns := env.Namespace(t)
	for _, typ := range []rdxv1.WorkloadType{rdxv1.WorkloadSmallBank, rdxv1.WorkloadTATP, rdxv1.WorkloadOGP,
		rdxv1.WorkloadYCSB, rdxv1.WorkloadTPCCLite, rdxv1.WorkloadKV} {
		w := rdxv1.WorkloadSpec{Type: typ}
		fillWorkloadDefaults(&w)
		empty := rdxv1.WorkloadSpec{Type: typ}
		switch typ {
		case rdxv1.WorkloadSmallBank:
			empty.SmallBank = &rdxv1.SmallBankParams{}
		case rdxv1.WorkloadTATP:
			empty.TATP = &rdxv1.TATPParams{}
		case rdxv1.WorkloadOGP:
			empty.OGP = &rdxv1.OGPParams{Gets: 4, Puts: 2} // gets and puts: 0 is a value, so a Go client sends them
		case rdxv1.WorkloadYCSB:
			empty.YCSB = &rdxv1.YCSBParams{}
		case rdxv1.WorkloadTPCCLite:
			empty.TPCCLite = &rdxv1.TPCCLiteParams{}
		case rdxv1.WorkloadKV:
			empty.KV = &rdxv1.KVParams{ReadPercent: 50}
		}
		b := &rdxv1.Benchmark{Spec: rdxv1.BenchmarkSpec{Targets: []rdxv1.TargetReference{{Name: "db"}}, Workload: empty}}
		b.Name, b.Namespace = "defaults-"+strings.ToLower(string(typ)), ns
		if err := env.Client.Create(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b.Spec.Workload, w) {
			t.Errorf("%s: API defaults %+v, controller fills %+v", typ, b.Spec.Workload, w)
		}
	}
}

// TestSweepReachesTheCommandLine: every kind of sweep parameter lands in the run's rdx-bench arguments.
func TestSweepReachesTheCommandLine(t *testing.T) {
	for _, tc := range []struct {
		typ          rdxv1.WorkloadType
		param, value string
		want         string // a substring of the joined arguments
	}{
		{rdxv1.WorkloadSmallBank, "coroutines", "16", "--coroutines 16"},
		{rdxv1.WorkloadTATP, "locality.localBackupReads", "off", "--local-backup-reads off"},
		{rdxv1.WorkloadTATP, "locality.hashtableBatching", "on", "--ht-batching on"},
		{rdxv1.WorkloadSmallBank, "smallbank.hotProbability", "1", "hot_prob=1"},
		{rdxv1.WorkloadSmallBank, "smallbank.accounts", "5000", "smallbank:accounts=5000,"},
		{rdxv1.WorkloadOGP, "ogp.puts", "0", "g=4,p=0,"},
		{rdxv1.WorkloadOGP, "ogp.theta", "0.5", "theta=0.5"},
		{rdxv1.WorkloadYCSB, "ycsb.workload", "F", "--workload ycsb-f:records=100000,ops=4,value_size=100"},
		{rdxv1.WorkloadYCSB, "ycsb.workload", "RCC", "--workload ycsb-rcc:records=100000,ops=10,value_size=100"},
		{rdxv1.WorkloadYCSB, "ycsb.computeMicros", "5", "ops=4,value_size=100,compute_us=5"},
		{rdxv1.WorkloadTPCCLite, "tpccLite.warehouses", "8", "--workload tpcc-lite:warehouses=8,districts=10,customers=100,items=1000"},
		{rdxv1.WorkloadTPCCLite, "tpccLite.remotePaymentPercent", "0", ",items=1000,remote_payment_percent=0"},
		{rdxv1.WorkloadKV, "kv.readPercent", "95", "--read-ratio 0.95"},
		{rdxv1.WorkloadKV, "kv.threads", "8", "--threads 8"},
	} {
		b := &rdxv1.Benchmark{Spec: rdxv1.BenchmarkSpec{
			Targets: []rdxv1.TargetReference{{Name: "db"}}, Workload: rdxv1.WorkloadSpec{Type: tc.typ},
			Phases: []rdxv1.BenchmarkPhaseName{rdxv1.BenchmarkRun},
			Sweep:  &rdxv1.SweepSpec{Parameter: tc.param, Values: []string{"1", tc.value}},
		}}
		steps := plan(b)
		if len(steps) != 2 {
			t.Fatalf("%s: %d steps", tc.param, len(steps))
		}
		spec, err := effectiveSpec(b, steps[1])
		if err != nil {
			t.Fatalf("%s=%s: %v", tc.param, tc.value, err)
		}
		if args := strings.Join(benchArgs(spec, steps[1], nil), " "); !strings.Contains(args, tc.want) {
			t.Errorf("%s=%s: args %q lack %q", tc.param, tc.value, args, tc.want)
		}
	}
}

// TestPlanReloadsForDataShapingSweeps: a sweep over the data's size loads before every run, with the run's value.
func TestPlanReloadsForDataShapingSweeps(t *testing.T) {
	b := &rdxv1.Benchmark{Spec: rdxv1.BenchmarkSpec{
		Targets:  []rdxv1.TargetReference{{Name: "db"}},
		Workload: rdxv1.WorkloadSpec{Type: rdxv1.WorkloadSmallBank},
		Phases:   []rdxv1.BenchmarkPhaseName{rdxv1.BenchmarkLoad, rdxv1.BenchmarkRun},
		Sweep:    &rdxv1.SweepSpec{Parameter: "smallbank.accounts", Values: []string{"1000", "5000"}},
	}}
	b.Name = "grow"
	var names []string
	for _, s := range plan(b) {
		names = append(names, s.jobName(b))
		spec, err := effectiveSpec(b, s)
		if err != nil {
			t.Fatal(err)
		}
		if args := strings.Join(benchArgs(spec, s, nil), " "); !strings.Contains(args, "accounts="+s.sweepValue(b)+",") {
			t.Errorf("%s: %s", s.jobName(b), args)
		}
	}
	if got := strings.Join(names, " "); got != "grow-t0-load-1 grow-t0-run-1 grow-t0-load-2 grow-t0-run-2" {
		t.Errorf("steps %s", got)
	}
	b.Spec.Sweep.Parameter = "coroutines"
	b.Spec.Sweep.Values = []string{"1", "2"}
	names = names[:0]
	for _, s := range plan(b) {
		names = append(names, s.jobName(b))
	}
	if got := strings.Join(names, " "); got != "grow-t0-load grow-t0-run-1 grow-t0-run-2" {
		t.Errorf("steps %s", got)
	}
}

// TestLinearizabilityRunsLoadThemselves: a kv run checked for linearizability loads the keys in its own Job (the
// history must hold every write), so no load Job runs; a kv run checking acknowledged writes reads them back.
func TestLinearizabilityRunsLoadThemselves(t *testing.T) {
	b := &rdxv1.Benchmark{Spec: rdxv1.BenchmarkSpec{
		Targets: []rdxv1.TargetReference{{Name: "db"}},
		Workload: rdxv1.WorkloadSpec{Type: rdxv1.WorkloadKV,
			KV: &rdxv1.KVParams{Keys: 16, ReadPercent: 50, ValueSize: 32, Threads: 1, Outstanding: 4, Check: rdxv1.KVCheckLinearizability}},
		Phases: []rdxv1.BenchmarkPhaseName{rdxv1.BenchmarkLoad, rdxv1.BenchmarkRun},
	}}
	b.Name = "lin"
	steps := plan(b)
	if len(steps) != 1 || steps[0].jobName(b) != "lin-t0-run-1" {
		t.Fatalf("steps %+v", steps)
	}
	args := strings.Join(benchArgs(&b.Spec, steps[0], nil), " ")
	if !strings.Contains(args, "--load --history /var/lib/rdx-bench/history.jsonl") || strings.Contains(args, "--verify-acked") ||
		strings.Contains(args, "--write-mix") {
		t.Errorf("args %q", args)
	}
	b.Spec.Workload.KV.WriteMix = []rdxv1.KVWriteKind{"set", "incr", "cas"}
	if args := strings.Join(benchArgs(&b.Spec, steps[0], nil), " "); !strings.Contains(args, "--write-mix set,incr,cas") {
		t.Errorf("args %q", args)
	}
	b.Spec.Workload.KV.Check = rdxv1.KVCheckAcknowledgedWrites
	steps = plan(b)
	if len(steps) != 2 {
		t.Fatalf("steps %+v", steps)
	}
	if args := strings.Join(benchArgs(&b.Spec, steps[1], nil), " "); !strings.Contains(args, "--verify-acked") ||
		strings.Contains(args, "--history") || strings.Contains(args, "--load") {
		t.Errorf("args %q", args)
	}
}
