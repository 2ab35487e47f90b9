// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Benchmark runs one rdx-bench experiment against one or more TxClusters as Jobs: a load Job per target (when
// phases include load), then one run Job per sweep value, one at a time. Results, the checker's verdict and a
// report with plots land in status and in the ConfigMap <name>-results. A Benchmark records one experiment: its
// spec is immutable and a finished one stays finished; to run again, create a new Benchmark.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bench,categories=rdx
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targets[0].name`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workload.type`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Throughput",type=string,JSONPath=`.status.throughput`
// +kubebuilder:printcolumn:name="P99",type=string,JSONPath=`.status.p99`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.checker.verdict`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40",message="a Benchmark name has at most 40 characters: its Jobs are named <name>-t<target>-run-<n>"
type Benchmark struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the experiment; immutable once created.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Benchmark spec is immutable: a Benchmark records one experiment; create a new one to run again"
	Spec BenchmarkSpec `json:"spec"`
	// status is what the operator observed; written by the operator only.
	// +optional
	Status BenchmarkStatus `json:"status,omitempty"`
}

// BenchmarkSpec is the experiment a Benchmark runs.
// +kubebuilder:validation:XValidation:rule="!has(self.coroutines) || self.workload.type != 'kv'",message="coroutines are for transactional workloads, which run inside the cluster's workers; the kv workload sets kv.threads and kv.outstanding",fieldPath=".coroutines"
// +kubebuilder:validation:XValidation:rule="!has(self.locality) || self.workload.type != 'kv'",message="locality switches apply to transactional workloads only",fieldPath=".locality"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || !self.sweep.parameter.contains('.') || self.sweep.parameter.startsWith('locality.') || self.sweep.parameter.startsWith(self.workload.type + '.')",messageExpression="'sweep.parameter ' + self.sweep.parameter + ' is not a parameter of the ' + self.workload.type + ' workload'",fieldPath=".sweep.parameter"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.workload.type != 'kv' || !(self.sweep.parameter == 'coroutines' || self.sweep.parameter.startsWith('locality.'))",message="the kv workload sweeps kv.* parameters only",fieldPath=".sweep.parameter"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.kv) || !has(self.workload.kv.check) || self.workload.kv.check != 'linearizability' || ((!has(self.phases) || 'load' in self.phases) && (!has(self.verify) || self.verify))",message="kv.check linearizability needs verify true and the load phase: the run Job loads the keys itself so that its history holds every write",fieldPath=".workload.kv.check"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameter != 'ycsb.writePercent' || (has(self.workload.ycsb) && self.workload.ycsb.workload == 'RCC')",message="sweeping ycsb.writePercent needs workload.ycsb.workload RCC: the letters A, B, C and F fix their mix",fieldPath=".sweep.parameter"
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameter != 'ycsb.workload' || !has(self.workload.ycsb) || !has(self.workload.ycsb.writePercent)",message="ycsb.writePercent is RCC's parameter: leave it out when sweeping ycsb.workload",fieldPath=".sweep.parameter"
type BenchmarkSpec struct {
	// targets are the TxClusters (same namespace) the workload runs against, one after the other; a report compares
	// them (e.g. the same workload on clusters with different protocols). Each must be Ready before its Jobs start.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	Targets []TargetReference `json:"targets"`

	// workload to run, with its parameters.
	// +required
	Workload WorkloadSpec `json:"workload"`

	// coroutines is, for transactional workloads, the number of concurrent transactions per worker of every data
	// node (rdx-bench --coroutines; the transactions run inside the cluster, next to the data). Default 8.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Coroutines *int32 `json:"coroutines,omitempty"`

	// locality overrides, for transactional workloads, the cluster's Dandelion locality switches during the runs
	// (the locality ablation); omitted switches keep the cluster's setting.
	// +optional
	Locality *LocalitySwitches `json:"locality,omitempty"`

	// duration of each run (per target and sweep value), between 1s and 24h.
	// +optional
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="duration must be between 1s and 24h"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// sweep repeats the run once per value of one parameter.
	// +optional
	Sweep *SweepSpec `json:"sweep,omitempty"`

	// verify checks every run: transactional workloads record the history and check it for strict
	// serializability, plus the workload's invariant (SmallBank's total balance, TATP's referential
	// integrity, TPC-C-lite's consistency conditions) when the data was loaded by this Benchmark; kv reads back every acknowledged write, or checks
	// the run's history for linearizability (workload.kv.check). The verdict goes to status.checker.
	// +optional
	// +kubebuilder:default=true
	Verify *bool `json:"verify,omitempty"`

	// phases to execute, in the order load, run: load writes the workload's initial data (one Job per target),
	// run measures. Omit load to measure against data loaded earlier (invariants relative to the loaded data are
	// then not checked).
	// +optional
	// +listType=set
	// +kubebuilder:default={load,run}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Phases []BenchmarkPhaseName `json:"phases,omitempty"`

	// image containing rdx-bench. Default: the target's engine image (its spec.image, else the operator's).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// resources of the rdx-bench container. Default: requests of 500m CPU and 128Mi memory.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// TargetReference names a cluster a Benchmark measures.
type TargetReference struct {
	// kind of the target. Only TxCluster exists in this rdx version (read replicas come later).
	// +optional
	// +kubebuilder:default=TxCluster
	// +kubebuilder:validation:Enum=TxCluster
	Kind string `json:"kind,omitempty"`
	// name of the target, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Switch is an on/off override.
// +kubebuilder:validation:Enum=on;off
type Switch string

// LocalitySwitches are Dandelion's locality mechanisms a run may turn on or off.
type LocalitySwitches struct {
	// localBackupReads: a coordinator reads from a backup replica on its own node instead of the primary.
	// +optional
	LocalBackupReads Switch `json:"localBackupReads,omitempty"`
	// hashtableBatching: a worker looks up the keys of many transactions in one batched hashtable pass.
	// +optional
	HashtableBatching Switch `json:"hashtableBatching,omitempty"`
}

// BenchmarkPhaseName is a step of a benchmark.
// +kubebuilder:validation:Enum=load;run
type BenchmarkPhaseName string

// Benchmark phase names.
const (
	BenchmarkLoad BenchmarkPhaseName = "load"
	BenchmarkRun  BenchmarkPhaseName = "run"
)

// WorkloadType names a workload of rdx-bench.
// +kubebuilder:validation:Enum=smallbank;tatp;ogp;ycsb;tpccLite;kv
type WorkloadType string

// Workload types.
const (
	WorkloadSmallBank WorkloadType = "smallbank"
	WorkloadTATP      WorkloadType = "tatp"
	WorkloadOGP       WorkloadType = "ogp"
	WorkloadYCSB      WorkloadType = "ycsb"
	WorkloadTPCCLite  WorkloadType = "tpccLite"
	WorkloadKV        WorkloadType = "kv"
)

// WorkloadSpec selects a workload and its parameters. Set at most the parameter block named by type; an omitted
// block means that workload's defaults.
// +kubebuilder:validation:XValidation:rule="(!has(self.smallbank) || self.type == 'smallbank') && (!has(self.tatp) || self.type == 'tatp') && (!has(self.ogp) || self.type == 'ogp') && (!has(self.ycsb) || self.type == 'ycsb') && (!has(self.tpccLite) || self.type == 'tpccLite') && (!has(self.kv) || self.type == 'kv')",messageExpression="'workload parameters must match workload.type: with type ' + self.type + ' set only workload.' + self.type"
type WorkloadSpec struct {
	// type of workload. Transactional, run inside the cluster's workers through its transaction protocol:
	// smallbank (banking, write-intensive), tatp (telecom, read-intensive), ogp (Dandelion's O(G,P): G gets then P
	// puts per transaction), ycsb (transactional YCSB A, B, C or F, or RCC's variant), tpccLite (TPC-C's NewOrder and
	// Payment, each warehouse on one shard). Single-key, from the rdx-bench pod through the native client: kv.
	// +required
	Type WorkloadType `json:"type"`
	// smallbank parameters (type smallbank).
	// +optional
	SmallBank *SmallBankParams `json:"smallbank,omitempty"`
	// tatp parameters (type tatp).
	// +optional
	TATP *TATPParams `json:"tatp,omitempty"`
	// ogp parameters (type ogp).
	// +optional
	OGP *OGPParams `json:"ogp,omitempty"`
	// ycsb parameters (type ycsb).
	// +optional
	YCSB *YCSBParams `json:"ycsb,omitempty"`
	// tpccLite parameters (type tpccLite).
	// +optional
	TPCCLite *TPCCLiteParams `json:"tpccLite,omitempty"`
	// kv parameters (type kv).
	// +optional
	KV *KVParams `json:"kv,omitempty"`
}

// KeyAccess is how a workload picks keys.
// +kubebuilder:validation:XValidation:rule="!has(self.theta) || (double(self.theta) >= 0.01 && double(self.theta) <= 0.999)",message="theta must be between 0.01 and 0.999",fieldPath=".theta"
type KeyAccess struct {
	// distribution of key choices: uniform, or zipfian (skewed by theta).
	// +optional
	// +kubebuilder:validation:Enum=zipfian;uniform
	Distribution string `json:"distribution,omitempty"`
	// theta is the zipfian skew as a decimal in [0.01, 0.999], e.g. "0.99" (highly skewed). Default 0.99.
	// +optional
	// +kubebuilder:validation:Pattern=`^0\.[0-9]{1,3}$`
	Theta string `json:"theta,omitempty"`
}

// SmallBankParams parameterise SmallBank.
type SmallBankParams struct {
	// accounts in the bank (2 keys each).
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000000000
	Accounts int64 `json:"accounts,omitempty"`
	// hotAccountsPercent is the percentage of accounts in the hot set; 0 draws accounts uniformly.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	HotAccountsPercent int32 `json:"hotAccountsPercent,omitempty"`
	// hotProbability is the probability that an account is drawn from the hot set, as a decimal in [0, 1].
	// Default 0.9.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$`
	HotProbability string `json:"hotProbability,omitempty"`
}

// TATPParams parameterise TATP.
type TATPParams struct {
	// subscribers in the subscriber table (about 10 keys each).
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Subscribers int64 `json:"subscribers,omitempty"`
	// uniform picks subscribers uniformly instead of with TATP's non-uniform NURand.
	// +optional
	Uniform bool `json:"uniform,omitempty"`
}

// OGPParams parameterise Dandelion's O(G,P) micro benchmark.
// +kubebuilder:validation:XValidation:rule="self.gets + self.puts > 0",message="ogp.gets and ogp.puts cannot both be 0"
// +kubebuilder:validation:XValidation:rule="self.keys >= ((has(self.otherKeys) && self.otherKeys) ? self.gets + self.puts : (self.gets > self.puts ? self.gets : self.puts))",message="ogp.keys must cover the distinct keys of one transaction (max(gets, puts), or gets + puts with otherKeys)"
type OGPParams struct {
	// keys in the keyspace.
	// +optional
	// +kubebuilder:default=1000000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Keys int64 `json:"keys,omitempty"`
	// gets per transaction.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Gets int32 `json:"gets"`
	// puts per transaction.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Puts int32 `json:"puts"`
	// valueSize in bytes.
	// +optional
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60000
	ValueSize int32 `json:"valueSize,omitempty"`
	// otherKeys makes the puts write keys other than those read (default: they overwrite the keys read).
	// +optional
	OtherKeys bool `json:"otherKeys,omitempty"`
	KeyAccess `json:",inline"`
}

// YCSBParams parameterise transactional YCSB.
// +kubebuilder:validation:XValidation:rule="!has(self.writePercent) || self.workload == 'RCC'",message="ycsb.writePercent is RCC's parameter (workload RCC); the letters A, B, C and F fix their mix",fieldPath=".writePercent"
type YCSBParams struct {
	// workload: A (50% read, 50% update), B (95/5), C (read only), F (50% read, 50% read-modify-write), or RCC (the
	// RCC paper's YCSB: writePercent of the operations are read-modify-writes, keys uniform unless distribution
	// says otherwise, and computeMicros of computation per transaction).
	// +optional
	// +kubebuilder:default=A
	// +kubebuilder:validation:Enum=A;B;C;F;RCC
	Workload string `json:"workload,omitempty"`
	// records (keys) loaded.
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Records int64 `json:"records,omitempty"`
	// operationsPerTransaction is the number of distinct keys each transaction accesses. Default 4 (RCC: 10, the
	// paper's).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	OperationsPerTransaction int32 `json:"operationsPerTransaction,omitempty"`
	// writePercent of the operations are read-modify-writes (workload RCC only). Default 10, the paper's.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	WritePercent *int32 `json:"writePercent,omitempty"`
	// computeMicros is the computation each transaction spends on its worker, in microseconds, nothing else running
	// there meanwhile (RCC's knob). Default 0 (RCC: 5, the paper's).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	ComputeMicros *int32 `json:"computeMicros,omitempty"`
	// valueSize in bytes.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60000
	ValueSize int32 `json:"valueSize,omitempty"`
	KeyAccess `json:",inline"`
}

// TPCCLiteParams parameterise TPC-C-lite: NewOrder and Payment, half each, every warehouse's rows on one shard.
type TPCCLiteParams struct {
	// warehouses, each with its districts, customers and stock on one shard.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Warehouses int64 `json:"warehouses,omitempty"`
	// districts per warehouse (TPC-C: 10).
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Districts int64 `json:"districts,omitempty"`
	// customers per district (TPC-C: 3000).
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3000
	Customers int64 `json:"customers,omitempty"`
	// items in the catalogue (TPC-C: 100000); at least 15, an order's most lines.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=15
	// +kubebuilder:validation:Maximum=100000
	Items int64 `json:"items,omitempty"`
	// remoteLinePercent of NewOrder's lines are supplied by another warehouse. Default 1 (TPC-C's).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RemoteLinePercent *int32 `json:"remoteLinePercent,omitempty"`
	// remotePaymentPercent of Payments are for a customer of another warehouse. Default 15 (TPC-C's).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RemotePaymentPercent *int32 `json:"remotePaymentPercent,omitempty"`
}

// KVParams parameterise the single-key workload, which rdx-bench runs from its pod through the native client.
type KVParams struct {
	// keys in the keyspace.
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Keys int64 `json:"keys,omitempty"`
	// readPercent of operations are GETs; the rest are PUTs.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	ReadPercent int32 `json:"readPercent"`
	// valueSize in bytes.
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60000
	ValueSize int32 `json:"valueSize,omitempty"`
	// threads of the rdx-bench client.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	Threads int32 `json:"threads,omitempty"`
	// outstanding operations in flight per thread.
	// +optional
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	Outstanding int32 `json:"outstanding,omitempty"`
	// writeMix lists the kinds of writes a run draws from, uniformly: set (PUT), incr (fetch-and-add 1) and cas
	// (compare-and-set expecting the value the client last saw of the key). With incr, values are decimal integers
	// and valueSize does not apply. incr and cas need a target whose replication protocol offers read-modify-writes:
	// against abd (reads and plain writes only) the Benchmark fails before any Job, with reason TargetUnsupported.
	// +optional
	// +listType=set
	// +kubebuilder:default={set}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	WriteMix []KVWriteKind `json:"writeMix,omitempty"`
	// check is what verify checks of a kv run: acknowledgedWrites reads back every write acknowledged during the
	// run; linearizability records every operation and checks the history per key with rdx-lincheck (Porcupine),
	// so the run Job loads the keys itself (the history must hold every write) and no separate load Job runs.
	// Reads are checked for what the target's replication protocol promises: linearizable, or sequentially
	// consistent per session for zab (its writes still linearizable; status.checker.model sequential-reads).
	// Keep keys small (tens) for linearizability, so that operations on each key overlap.
	// +optional
	// +kubebuilder:default=acknowledgedWrites
	// +kubebuilder:validation:Enum=acknowledgedWrites;linearizability
	Check     KVCheck `json:"check,omitempty"`
	KeyAccess `json:",inline"`
}

// KVWriteKind is one kind of write of the kv workload.
// +kubebuilder:validation:Enum=set;incr;cas
type KVWriteKind string

// KVCheck is what verify checks of a kv run.
type KVCheck string

const (
	KVCheckAcknowledgedWrites KVCheck = "acknowledgedWrites"
	KVCheckLinearizability    KVCheck = "linearizability"
)

// SweepSpec repeats the run over the values of one parameter; each value replaces the spec's value of that
// parameter for its run.
// +kubebuilder:validation:XValidation:rule="!(self.parameter in {'coroutines': 0, 'smallbank.accounts': 0, 'smallbank.hotAccountsPercent': 0, 'tatp.subscribers': 0, 'ogp.keys': 0, 'ogp.gets': 0, 'ogp.puts': 0, 'ogp.valueSize': 0, 'ycsb.records': 0, 'ycsb.operationsPerTransaction': 0, 'ycsb.valueSize': 0, 'ycsb.writePercent': 0, 'ycsb.computeMicros': 0, 'tpccLite.warehouses': 0, 'tpccLite.districts': 0, 'tpccLite.customers': 0, 'tpccLite.items': 0, 'tpccLite.remoteLinePercent': 0, 'tpccLite.remotePaymentPercent': 0, 'kv.keys': 0, 'kv.readPercent': 0, 'kv.valueSize': 0, 'kv.threads': 0, 'kv.outstanding': 0}) || self.values.all(v, v.matches('^[0-9]{1,10}$') && int(v) >= {'coroutines': 1, 'smallbank.accounts': 2, 'smallbank.hotAccountsPercent': 0, 'tatp.subscribers': 1, 'ogp.keys': 1, 'ogp.gets': 0, 'ogp.puts': 0, 'ogp.valueSize': 1, 'ycsb.records': 1, 'ycsb.operationsPerTransaction': 1, 'ycsb.valueSize': 1, 'ycsb.writePercent': 0, 'ycsb.computeMicros': 0, 'tpccLite.warehouses': 1, 'tpccLite.districts': 1, 'tpccLite.customers': 1, 'tpccLite.items': 15, 'tpccLite.remoteLinePercent': 0, 'tpccLite.remotePaymentPercent': 0, 'kv.keys': 1, 'kv.readPercent': 0, 'kv.valueSize': 1, 'kv.threads': 1, 'kv.outstanding': 1}[self.parameter] && int(v) <= {'coroutines': 4096, 'smallbank.accounts': 1000000000, 'smallbank.hotAccountsPercent': 100, 'tatp.subscribers': 1000000000, 'ogp.keys': 1000000000, 'ogp.gets': 64, 'ogp.puts': 64, 'ogp.valueSize': 60000, 'ycsb.records': 1000000000, 'ycsb.operationsPerTransaction': 64, 'ycsb.valueSize': 60000, 'ycsb.writePercent': 100, 'ycsb.computeMicros': 1000000, 'tpccLite.warehouses': 10000, 'tpccLite.districts': 100, 'tpccLite.customers': 3000, 'tpccLite.items': 100000, 'tpccLite.remoteLinePercent': 100, 'tpccLite.remotePaymentPercent': 100, 'kv.keys': 1000000000, 'kv.readPercent': 100, 'kv.valueSize': 60000, 'kv.threads': 256, 'kv.outstanding': 4096}[self.parameter])",messageExpression="'sweep.values of ' + self.parameter + ' must be integers in the range of spec.' + self.parameter + ' (kubectl explain benchmark.spec.' + self.parameter + ')'",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!self.parameter.endsWith('.theta') || self.values.all(v, v.matches('^0\\\\.[0-9]{1,3}$') && double(v) >= 0.01 && double(v) <= 0.999)",message="sweep.values of a theta must be decimals between 0.01 and 0.999, e.g. \"0.5\"",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="self.parameter != 'smallbank.hotProbability' || self.values.all(v, v.matches('^(0(\\\\.[0-9]{1,4})?|1(\\\\.0{1,4})?)$'))",message="sweep.values of smallbank.hotProbability must be decimals between 0 and 1",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!self.parameter.startsWith('locality.') || self.values.all(v, v in ['on', 'off'])",message="sweep.values of a locality switch must be on or off",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="self.parameter != 'ycsb.workload' || self.values.all(v, v in ['A', 'B', 'C', 'F', 'RCC'])",message="sweep.values of ycsb.workload must be A, B, C, F or RCC",fieldPath=".values"
type SweepSpec struct {
	// parameter to vary: coroutines, locality.localBackupReads, locality.hashtableBatching, or a field of the
	// chosen workload as <type>.<field>.
	// +required
	// +kubebuilder:validation:Enum=coroutines;locality.localBackupReads;locality.hashtableBatching;smallbank.accounts;smallbank.hotAccountsPercent;smallbank.hotProbability;tatp.subscribers;ogp.keys;ogp.gets;ogp.puts;ogp.valueSize;ogp.theta;ycsb.workload;ycsb.records;ycsb.operationsPerTransaction;ycsb.valueSize;ycsb.writePercent;ycsb.computeMicros;ycsb.theta;tpccLite.warehouses;tpccLite.districts;tpccLite.customers;tpccLite.items;tpccLite.remoteLinePercent;tpccLite.remotePaymentPercent;kv.keys;kv.readPercent;kv.valueSize;kv.threads;kv.outstanding;kv.theta
	Parameter string `json:"parameter"`
	// values the parameter takes, one run each, in order.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=12
	Values []string `json:"values"`
}

// BenchmarkPhase is where a Benchmark is in its life.
// +kubebuilder:validation:Enum=Pending;Loading;Running;Checking;Succeeded;Failed
type BenchmarkPhase string

// Benchmark phases.
const (
	BenchmarkPending   BenchmarkPhase = "Pending"
	BenchmarkLoading   BenchmarkPhase = "Loading"
	BenchmarkRunning   BenchmarkPhase = "Running"
	BenchmarkChecking  BenchmarkPhase = "Checking"
	BenchmarkSucceeded BenchmarkPhase = "Succeeded"
	BenchmarkFailed    BenchmarkPhase = "Failed"
)

// BenchmarkStatus is what the operator observed.
type BenchmarkStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending (waiting for its targets), Loading, Running, Checking (a run's history is being checked),
	// Succeeded or Failed.
	// +optional
	Phase BenchmarkPhase `json:"phase,omitempty"`
	// progress in words, e.g. "run 2/5 db (coroutines=8) 12s/30s".
	// +optional
	Progress string `json:"progress,omitempty"`
	// throughput is the latest one measured: live during a run, then the run's result.
	// +optional
	Throughput string `json:"throughput,omitempty"`
	// p99 is the latest run's 99th percentile latency.
	// +optional
	P99 string `json:"p99,omitempty"`
	// stepsDone counts the Jobs (loads and runs, in order) that finished successfully.
	// +optional
	StepsDone int32 `json:"stepsDone,omitempty"`
	// stepsTotal is the number of Jobs the Benchmark runs.
	// +optional
	StepsTotal int32 `json:"stepsTotal,omitempty"`
	// startTime is when the first Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the Benchmark succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// results has one entry per finished run, in run order.
	// +optional
	// +listType=atomic
	Results []BenchmarkResult `json:"results,omitempty"`
	// checker is the verdict over every run (when verify is true).
	// +optional
	Checker *CheckerResult `json:"checker,omitempty"`
	// resultsConfigMap holds results.json, the report (report.html) and its plots (PNG).
	// +optional
	ResultsConfigMap *LocalObjectReference `json:"resultsConfigMap,omitempty"`
	// conditions: Ready (True once Succeeded; False with the reason while pending, running or failed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BenchmarkResult is the outcome of one run.
type BenchmarkResult struct {
	// target is the TxCluster the run measured.
	Target string `json:"target"`
	// sweepValue is the swept parameter's value for this run; empty without sweep.
	// +optional
	SweepValue string `json:"sweepValue,omitempty"`
	// throughput in committed transactions (transactional workloads) or completed operations (kv) per second.
	Throughput int64 `json:"throughput"`
	// unit of throughput: tx/s or ops/s.
	Unit string `json:"unit"`
	// p50 latency.
	// +optional
	P50 metav1.Duration `json:"p50,omitempty"`
	// p99 latency.
	// +optional
	P99 metav1.Duration `json:"p99,omitempty"`
	// p999 latency.
	// +optional
	P999 metav1.Duration `json:"p999,omitempty"`
	// committed transactions (or successful operations) in the run.
	// +optional
	Committed int64 `json:"committed,omitempty"`
	// aborted transaction attempts in the run.
	// +optional
	Aborted int64 `json:"aborted,omitempty"`
	// abortRate is aborted / (committed + aborted) as a decimal string, e.g. "0.0125".
	// +optional
	AbortRate string `json:"abortRate,omitempty"`
	// errors are failed operations (kv) or transactions that ended unavailable or with a data error.
	// +optional
	Errors int64 `json:"errors,omitempty"`
	// emulatedOneSidedOps are one-sided RDMA operations executed by a target's CPU (tcp transport) during the run.
	// +optional
	EmulatedOneSidedOps int64 `json:"emulatedOneSidedOps,omitempty"`
	// balanceDelta is the money SmallBank's committed transactions moved in or out of the bank (cents); the next
	// run's invariant check on the same data starts from it.
	// +optional
	BalanceDelta int64 `json:"balanceDelta,omitempty"`
	// invariant is the workload's invariant check after the run, e.g. "holds: total balance ...".
	// +optional
	Invariant string `json:"invariant,omitempty"`
	// checker is this run's verdict.
	// +optional
	Checker *CheckerResult `json:"checker,omitempty"`
}

// CheckerResult is the verdict of the history checker.
type CheckerResult struct {
	// verdict: Pass (the history satisfies the model), Fail (it does not; see message) or Skipped (verify false).
	// +kubebuilder:validation:Enum=Pass;Fail;Skipped
	Verdict string `json:"verdict"`
	// model checked: strict-serializability (transactions), acknowledged-writes (kv: every acknowledged write
	// is read back), linearizability (kv with check linearizability: per key) or sequential-reads (the same
	// against zab: writes linearizable, reads sequentially consistent per session).
	// +optional
	Model string `json:"model,omitempty"`
	// checked is the number of transactions (or acknowledged writes) checked.
	// +optional
	Checked int64 `json:"checked,omitempty"`
	// violations found; 0 with verdict Pass.
	// +optional
	Violations int64 `json:"violations,omitempty"`
	// message explains a Fail verdict (the first anomaly) or a Skipped one.
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true

// BenchmarkList is a list of Benchmark.
type BenchmarkList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Benchmark `json:"items"`
}
