// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// step is one Job of a Benchmark. Steps run strictly one after the other, in plan order, so that a run never
// shares the cluster with another Job of the same Benchmark; status.stepsDone says how many finished.
type step struct {
	phase  rdxv1.BenchmarkPhaseName
	target int // index into spec.targets
	point  int // index into spec.sweep.values; -1 without sweep (and for loads)
}

// plan lists the steps: per target, its load (when asked) and then one run per sweep value. A sweep over a
// parameter that shapes the data (the number of keys, records, accounts or subscribers, or the value size) loads
// again before every run, with that run's value.
func plan(b *rdxv1.Benchmark) []step {
	var steps []step
	points := []int{-1}
	if b.Spec.Sweep != nil {
		points = points[:0]
		for p := range b.Spec.Sweep.Values {
			points = append(points, p)
		}
	}
	perPoint := reloadsPerPoint(b)
	load := hasPhase(b, rdxv1.BenchmarkLoad) && !runLoads(&b.Spec)
	for t := range b.Spec.Targets {
		if load && !perPoint {
			steps = append(steps, step{phase: rdxv1.BenchmarkLoad, target: t, point: -1})
		}
		for _, p := range points {
			if load && perPoint {
				steps = append(steps, step{phase: rdxv1.BenchmarkLoad, target: t, point: p})
			}
			if hasPhase(b, rdxv1.BenchmarkRun) {
				steps = append(steps, step{phase: rdxv1.BenchmarkRun, target: t, point: p})
			}
		}
	}
	return steps
}

// runLoads tells whether each run Job loads the data itself: a kv run checked for linearizability records a
// history that must hold every write of its keys (admission requires the load phase and verify for it).
func runLoads(spec *rdxv1.BenchmarkSpec) bool {
	return spec.Workload.Type == rdxv1.WorkloadKV && spec.Workload.KV != nil &&
		spec.Workload.KV.Check == rdxv1.KVCheckLinearizability && ptr.Deref(spec.Verify, true)
}

// reloadsPerPoint tells whether the swept parameter changes what the load writes.
func reloadsPerPoint(b *rdxv1.Benchmark) bool {
	if b.Spec.Sweep == nil {
		return false
	}
	switch b.Spec.Sweep.Parameter {
	case "smallbank.accounts", "tatp.subscribers", "ogp.keys", "ogp.valueSize", "ycsb.records", "ycsb.valueSize",
		"tpccLite.warehouses", "tpccLite.districts", "tpccLite.customers", "tpccLite.items", "kv.keys", "kv.valueSize":
		return true
	}
	return false
}

func hasPhase(b *rdxv1.Benchmark, p rdxv1.BenchmarkPhaseName) bool {
	return slices.Contains(b.Spec.Phases, p)
}

// jobName is the step's Job: <benchmark>-t<target>-load, -load-<n> (a load per sweep value) or -run-<n> (n from
// 1). Benchmark names have at most 40 characters (CEL), so it stays a valid label value (the Job controller labels
// pods with it).
func (s step) jobName(b *rdxv1.Benchmark) string {
	name := fmt.Sprintf("%s-t%d-%s", b.Name, s.target, s.phase)
	if s.phase == rdxv1.BenchmarkRun || s.point >= 0 {
		name += fmt.Sprintf("-%d", max(s.point, 0)+1)
	}
	return name
}

// benchmarkPhase is the Benchmark's phase while the step's Job runs.
func (s step) benchmarkPhase() rdxv1.BenchmarkPhase {
	if s.phase == rdxv1.BenchmarkLoad {
		return rdxv1.BenchmarkLoading
	}
	return rdxv1.BenchmarkRunning
}

// sweepValue is the swept parameter's value of the step ("" without sweep, and for loads).
func (s step) sweepValue(b *rdxv1.Benchmark) string {
	if s.point < 0 || b.Spec.Sweep == nil {
		return ""
	}
	return b.Spec.Sweep.Values[s.point]
}

// describe names the step for status.progress, e.g. "run 2/5 db (coroutines=8)".
func (s step) describe(b *rdxv1.Benchmark, index, total int) string {
	d := fmt.Sprintf("%s %d/%d %s", s.phase, index+1, total, b.Spec.Targets[s.target].Name)
	if v := s.sweepValue(b); v != "" {
		d += fmt.Sprintf(" (%s=%s)", b.Spec.Sweep.Parameter, v)
	}
	return d
}

// stringParams are the sweepable parameters whose fields are strings; every other one is an integer.
func stringParam(p string) bool {
	return strings.HasSuffix(p, ".theta") || strings.HasPrefix(p, "locality.") ||
		p == "smallbank.hotProbability" || p == "ycsb.workload"
}

// effectiveSpec is the spec with the step's sweep value in place of the swept parameter. The parameter names are
// the fields' JSON paths (workload parameters under spec.workload), so one generic setter covers every one of them.
func effectiveSpec(b *rdxv1.Benchmark, s step) (*rdxv1.BenchmarkSpec, error) {
	spec := b.Spec.DeepCopy()
	fillWorkloadDefaults(&spec.Workload)
	value := s.sweepValue(b)
	if value == "" {
		return spec, nil
	}
	param := b.Spec.Sweep.Parameter
	path := strings.Split(param, ".")
	if path[0] != "coroutines" && path[0] != "locality" {
		path = append([]string{"workload"}, path...)
	}
	var v any = value
	if !stringParam(param) {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("sweep value %q of %s is not an integer", value, param)
		}
		v = n
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	node := m
	for _, k := range path[:len(path)-1] {
		child, ok := node[k].(map[string]any)
		if !ok {
			child = map[string]any{}
			node[k] = child
		}
		node = child
	}
	node[path[len(path)-1]] = v
	if raw, err = json.Marshal(m); err != nil {
		return nil, err
	}
	out := &rdxv1.BenchmarkSpec{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("sweep %s=%s: %w", param, value, err)
	}
	return out, nil
}

// Paths inside the rdx-bench container.
const (
	topologyDir  = "/etc/rdx"
	workDir      = "/var/lib/rdx-bench"
	historyFile  = workDir + "/history.jsonl"
	summaryFile  = "/dev/termination-log"
	progressSecs = "1"
)

// fillWorkloadDefaults gives the chosen workload its parameter block when the spec omitted it, with the values the
// API server defaults each field to (a test compares them), so a sweep can set one field of an omitted block.
func fillWorkloadDefaults(w *rdxv1.WorkloadSpec) {
	switch w.Type {
	case rdxv1.WorkloadSmallBank:
		w.SmallBank = cmp.Or(w.SmallBank, &rdxv1.SmallBankParams{Accounts: 100000})
	case rdxv1.WorkloadTATP:
		w.TATP = cmp.Or(w.TATP, &rdxv1.TATPParams{Subscribers: 100000})
	case rdxv1.WorkloadOGP:
		w.OGP = cmp.Or(w.OGP, &rdxv1.OGPParams{Keys: 1000000, Gets: 4, Puts: 2, ValueSize: 16})
	case rdxv1.WorkloadYCSB:
		w.YCSB = cmp.Or(w.YCSB, &rdxv1.YCSBParams{Workload: "A", Records: 100000, ValueSize: 100})
	case rdxv1.WorkloadTPCCLite:
		w.TPCCLite = cmp.Or(w.TPCCLite, &rdxv1.TPCCLiteParams{Warehouses: 4, Districts: 10, Customers: 100, Items: 1000})
	case rdxv1.WorkloadKV:
		w.KV = cmp.Or(w.KV, &rdxv1.KVParams{Keys: 100000, ReadPercent: 50, ValueSize: 32, Threads: 2, Outstanding: 16,
			WriteMix: []rdxv1.KVWriteKind{"set"}, Check: rdxv1.KVCheckAcknowledgedWrites})
	}
}

// workloadArg renders a transactional workload, its block filled, as rdx-bench's --workload spec
// (engine/src/workload/factory.cc).
func workloadArg(w *rdxv1.WorkloadSpec) string {
	var kv []string
	add := func(k string, v any) { kv = append(kv, fmt.Sprintf("%s=%v", k, v)) }
	access := func(a rdxv1.KeyAccess) {
		if a.Distribution != "" {
			add("dist", a.Distribution)
		}
		if a.Theta != "" {
			add("theta", a.Theta)
		}
	}
	name := string(w.Type)
	switch w.Type {
	case rdxv1.WorkloadSmallBank:
		p := w.SmallBank
		add("accounts", p.Accounts)
		add("hot_percent", p.HotAccountsPercent)
		if p.HotProbability != "" {
			add("hot_prob", p.HotProbability)
		}
	case rdxv1.WorkloadTATP:
		add("subscribers", w.TATP.Subscribers)
		add("nurand", boolDigit(!w.TATP.Uniform))
	case rdxv1.WorkloadOGP:
		p := w.OGP
		add("keys", p.Keys)
		add("g", p.Gets)
		add("p", p.Puts)
		add("value_size", p.ValueSize)
		add("rmw", boolDigit(!p.OtherKeys))
		access(p.KeyAccess)
	case rdxv1.WorkloadYCSB:
		p := w.YCSB
		rcc := p.Workload == "RCC"
		name = "ycsb-" + strings.ToLower(p.Workload)
		add("records", p.Records)
		ops := p.OperationsPerTransaction
		if ops == 0 {
			ops = 4
			if rcc {
				ops = 10 // the RCC paper's
			}
		}
		add("ops", ops)
		add("value_size", p.ValueSize)
		if p.WritePercent != nil {
			add("write_percent", *p.WritePercent)
		}
		if p.ComputeMicros != nil {
			add("compute_us", *p.ComputeMicros)
		}
		access(p.KeyAccess)
	case rdxv1.WorkloadTPCCLite:
		p := w.TPCCLite
		name = "tpcc-lite"
		add("warehouses", p.Warehouses)
		add("districts", p.Districts)
		add("customers", p.Customers)
		add("items", p.Items)
		if p.RemoteLinePercent != nil {
			add("remote_percent", *p.RemoteLinePercent)
		}
		if p.RemotePaymentPercent != nil {
			add("remote_payment_percent", *p.RemotePaymentPercent)
		}
	}
	return name + ":" + strings.Join(kv, ",")
}

// kvArgs renders the single-key workload, its block filled, as rdx-bench flags.
func kvArgs(p *rdxv1.KVParams) []string {
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	args := []string{
		"--keys", itoa(p.Keys),
		"--read-ratio", strconv.FormatFloat(float64(p.ReadPercent)/100, 'f', -1, 64),
		"--value-size", itoa(int64(p.ValueSize)),
		"--threads", itoa(int64(p.Threads)),
		"--outstanding", itoa(int64(p.Outstanding)),
	}
	if len(p.WriteMix) > 0 && !slices.Equal(p.WriteMix, []rdxv1.KVWriteKind{"set"}) {
		mix := make([]string, len(p.WriteMix))
		for i, k := range p.WriteMix {
			mix[i] = string(k)
		}
		args = append(args, "--write-mix", strings.Join(mix, ","))
	}
	if p.Distribution != "" {
		args = append(args, "--dist", p.Distribution)
	}
	if p.Theta != "" {
		args = append(args, "--theta", p.Theta)
	}
	return args
}

// benchArgs is rdx-bench's command line for a step; spec comes from effectiveSpec (workload block filled). ledgerBase is the balance delta earlier runs committed on the
// data this Benchmark loaded (nil when it did not load it: the invariant is then not checked).
func benchArgs(spec *rdxv1.BenchmarkSpec, s step, ledgerBase *int64) []string {
	args := []string{"--config", topologyDir + "/topology.json", "--connect-timeout", "60",
		"--summary", summaryFile, "--progress-interval", progressSecs}
	kv := spec.Workload.Type == rdxv1.WorkloadKV
	if kv {
		args = append(args, "--workload", "kv")
		args = append(args, kvArgs(spec.Workload.KV)...)
	} else {
		args = append(args, "--workload", workloadArg(&spec.Workload))
	}
	if s.phase == rdxv1.BenchmarkLoad {
		return append(args, "--load", "--no-run")
	}
	args = append(args, "--duration", strconv.FormatFloat(runDuration(spec).Seconds(), 'f', -1, 64))
	verify := ptr.Deref(spec.Verify, true)
	if kv {
		switch {
		case runLoads(spec):
			args = append(args, "--load", "--history", historyFile)
		case verify:
			args = append(args, "--verify-acked")
		}
		return args
	}
	args = append(args, "--coroutines", strconv.Itoa(int(ptr.Deref(spec.Coroutines, 8))))
	if l := spec.Locality; l != nil {
		if l.LocalBackupReads != "" {
			args = append(args, "--local-backup-reads", string(l.LocalBackupReads))
		}
		if l.HashtableBatching != "" {
			args = append(args, "--ht-batching", string(l.HashtableBatching))
		}
	}
	if verify {
		args = append(args, "--history", historyFile)
	}
	if ledgerBase != nil {
		args = append(args, "--ledger-base", strconv.FormatInt(*ledgerBase, 10))
	}
	return args
}

// runDuration is spec.duration, or its API default when a client left it out.
func runDuration(spec *rdxv1.BenchmarkSpec) time.Duration {
	if spec.Duration == nil {
		return 30 * time.Second
	}
	return spec.Duration.Duration
}

func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}
