// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Benchmark is the schema of an rdx-bench experiment against a TxCluster. This rdx version has no Benchmark
// controller: the API server refuses to create Benchmark objects, so none exists and nothing acts on the fields
// below. Run benchmarks with rdx-bench (see README).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bench,categories=rdx
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workload.type`
// +kubebuilder:printcolumn:name="Clients",type=integer,JSONPath=`.spec.clients`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.checker.verdict`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="false",message="Benchmark objects are not acted upon by this rdx version yet (no Benchmark controller): run benchmarks with rdx-bench; see README"
type Benchmark struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the experiment; immutable once created.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Benchmark spec is immutable: a Benchmark records one experiment; create a new one"
	Spec BenchmarkSpec `json:"spec"`
	// status is what the operator observed; written by the operator only.
	// +optional
	Status BenchmarkStatus `json:"status,omitempty"`
}

// BenchmarkSpec is the experiment a Benchmark runs.
// +kubebuilder:validation:XValidation:rule="!has(self.sweep) || self.sweep.parameter in ['clients', 'threads'] || self.sweep.parameter.startsWith(self.workload.type + '.')",messageExpression="'sweep.parameter must be clients, threads or a parameter of the ' + self.workload.type + ' workload (' + self.workload.type + '.<field>)'",fieldPath=".sweep.parameter"
// +kubebuilder:validation:XValidation:rule="self.verify == false || self.phases.exists(p, p == 'run')",message="verify checks the history of the run phase; add run to phases or set verify false",fieldPath=".verify"
type BenchmarkSpec struct {
	// targetRef names the TxCluster or ReplicaSet (same namespace) the clients connect to.
	// +required
	TargetRef TargetReference `json:"targetRef"`

	// workload to run, with its parameters.
	// +required
	Workload WorkloadSpec `json:"workload"`

	// clients is the number of client pods (rdx-bench processes).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	Clients int32 `json:"clients,omitempty"`

	// threads is the number of worker threads per client, each with its own connection set.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	Threads int32 `json:"threads,omitempty"`

	// duration of the run phase (per sweep value), between 1s and 24h.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="duration must be between 1s and 24h"
	Duration metav1.Duration `json:"duration,omitempty"`

	// sweep repeats the run phase once per value of one parameter.
	// +optional
	Sweep *SweepSpec `json:"sweep,omitempty"`

	// verify records the operation history of the run phase and checks it (serializability for transactional
	// workloads, linearizability for replication); the verdict goes to status.checker.
	// +optional
	// +kubebuilder:default=true
	Verify *bool `json:"verify,omitempty"`

	// phases to execute, in the order load, run: load populates the keyspace, run measures. Omit load to measure
	// against data a previous Benchmark loaded.
	// +optional
	// +listType=set
	// +kubebuilder:default={load,run}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Phases []BenchmarkPhaseName `json:"phases,omitempty"`

	// image containing rdx-bench. Default: the TxCluster's engine image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// resources of each client container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// TargetReference names the object a Benchmark measures.
type TargetReference struct {
	// kind of the target: TxCluster (reads and writes through its endpoint) or ReplicaSet (reads only).
	// +optional
	// +kubebuilder:default=TxCluster
	// +kubebuilder:validation:Enum=TxCluster;ReplicaSet
	Kind string `json:"kind,omitempty"`
	// name of the target, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BenchmarkPhaseName is a step of a benchmark.
// +kubebuilder:validation:Enum=load;run
type BenchmarkPhaseName string

// WorkloadType names a workload generator of rdx-bench.
// +kubebuilder:validation:Enum=ycsb;smallbank;tatp;tpcc;micro;replication;spatial
type WorkloadType string

// WorkloadSpec selects a workload and its parameters. Set at most the parameter block named by type; an omitted
// block means that workload's defaults.
// +kubebuilder:validation:XValidation:rule="(!has(self.ycsb) || self.type == 'ycsb') && (!has(self.smallbank) || self.type == 'smallbank') && (!has(self.tatp) || self.type == 'tatp') && (!has(self.tpcc) || self.type == 'tpcc') && (!has(self.micro) || self.type == 'micro') && (!has(self.replication) || self.type == 'replication') && (!has(self.spatial) || self.type == 'spatial')",messageExpression="'workload parameters must match workload.type: with type ' + self.type + ' set only workload.' + self.type"
type WorkloadSpec struct {
	// type of workload: ycsb (A-F), smallbank, tatp, tpcc (TPC-C lite), micro (read/write transactions over
	// random keys), replication (single-key reads and writes, for replication protocols) or spatial (R*-tree
	// inserts and range queries).
	// +required
	Type WorkloadType `json:"type"`
	// ycsb parameters (type ycsb).
	// +optional
	YCSB *YCSBParams `json:"ycsb,omitempty"`
	// smallbank parameters (type smallbank).
	// +optional
	SmallBank *SmallBankParams `json:"smallbank,omitempty"`
	// tatp parameters (type tatp).
	// +optional
	TATP *TATPParams `json:"tatp,omitempty"`
	// tpcc parameters (type tpcc).
	// +optional
	TPCC *TPCCParams `json:"tpcc,omitempty"`
	// micro parameters (type micro).
	// +optional
	Micro *MicroParams `json:"micro,omitempty"`
	// replication parameters (type replication).
	// +optional
	Replication *ReplicationParams `json:"replication,omitempty"`
	// spatial parameters (type spatial).
	// +optional
	Spatial *SpatialParams `json:"spatial,omitempty"`
}

// KeyAccess is how a workload picks keys.
type KeyAccess struct {
	// distribution of key choices: zipfian (skewed by theta), uniform, or latest (recently inserted keys).
	// +optional
	// +kubebuilder:default=zipfian
	// +kubebuilder:validation:Enum=zipfian;uniform;latest
	Distribution string `json:"distribution,omitempty"`
	// theta is the zipfian skew as a decimal in [0, 1), e.g. "0.99" (highly skewed) or "0.5".
	// +optional
	// +kubebuilder:default="0.99"
	// +kubebuilder:validation:Pattern=`^0(\.[0-9]{1,4})?$`
	Theta string `json:"theta,omitempty"`
}

// YCSBParams parameterise the YCSB core workloads.
type YCSBParams struct {
	// workload letter: A (50/50 read/update), B (95/5), C (read only), D (read latest), E (short scans), F (read-modify-write).
	// +optional
	// +kubebuilder:default=A
	// +kubebuilder:validation:Enum=A;B;C;D;E;F
	Workload string `json:"workload,omitempty"`
	// records loaded in the load phase.
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Records int64 `json:"records,omitempty"`
	// valueSize in bytes.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	ValueSize int32 `json:"valueSize,omitempty"`
	KeyAccess `json:",inline"`
}

// SmallBankParams parameterise SmallBank.
// +kubebuilder:validation:XValidation:rule="self.hotspotAccounts <= self.accounts",message="smallbank.hotspotAccounts must not exceed smallbank.accounts"
type SmallBankParams struct {
	// accounts in the bank.
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000000000
	Accounts int64 `json:"accounts,omitempty"`
	// hotspotAccounts is the size of the hot set.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	HotspotAccounts int64 `json:"hotspotAccounts,omitempty"`
	// hotspotPercent of transactions touch the hot set.
	// +optional
	// +kubebuilder:default=90
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	HotspotPercent int32 `json:"hotspotPercent,omitempty"`
}

// TATPParams parameterise TATP.
type TATPParams struct {
	// subscribers in the subscriber table.
	// +optional
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Subscribers int64 `json:"subscribers,omitempty"`
}

// TPCCParams parameterise TPC-C lite (NewOrder, Payment, OrderStatus, Delivery, StockLevel over the TPC-C schema).
type TPCCParams struct {
	// warehouses; the keyspace grows linearly with them.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Warehouses int32 `json:"warehouses,omitempty"`
	// remotePercent of NewOrder items come from another warehouse (cross-shard transactions).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RemotePercent int32 `json:"remotePercent,omitempty"`
}

// MicroParams parameterise the micro benchmark: transactions reading and writing random keys.
type MicroParams struct {
	// keys in the keyspace.
	// +optional
	// +kubebuilder:default=1000000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Keys int64 `json:"keys,omitempty"`
	// keysPerTransaction accessed by each transaction.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	KeysPerTransaction int32 `json:"keysPerTransaction,omitempty"`
	// readPercent of accesses are reads; the rest are writes.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	ReadPercent int32 `json:"readPercent,omitempty"`
	// valueSize in bytes.
	// +optional
	// +kubebuilder:default=64
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	ValueSize int32 `json:"valueSize,omitempty"`
	KeyAccess `json:",inline"`
}

// ReplicationParams parameterise the replication workload: single-key operations.
// +kubebuilder:validation:XValidation:rule="self.writePercent + self.rmwPercent <= 100",message="replication.writePercent + replication.rmwPercent must not exceed 100"
type ReplicationParams struct {
	// keys in the keyspace.
	// +optional
	// +kubebuilder:default=1000000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Keys int64 `json:"keys,omitempty"`
	// writePercent of operations are writes.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	WritePercent int32 `json:"writePercent,omitempty"`
	// rmwPercent of operations are read-modify-writes (compare-and-swap or fetch-and-add); the rest are reads.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RMWPercent int32 `json:"rmwPercent,omitempty"`
	// valueSize in bytes.
	// +optional
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	ValueSize int32 `json:"valueSize,omitempty"`
	KeyAccess `json:",inline"`
}

// SpatialParams parameterise the spatial workload: point inserts and rectangle range queries on the R*-tree.
type SpatialParams struct {
	// points loaded in the load phase.
	// +optional
	// +kubebuilder:default=1000000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Points int64 `json:"points,omitempty"`
	// queryPercent of operations are range queries; the rest are inserts.
	// +optional
	// +kubebuilder:default=90
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	QueryPercent int32 `json:"queryPercent,omitempty"`
	// resultsPerQuery is the average number of points a query rectangle covers; the generator sizes rectangles for it.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	ResultsPerQuery int32 `json:"resultsPerQuery,omitempty"`
}

// SweepSpec repeats the run phase over the values of one parameter.
// +kubebuilder:validation:XValidation:rule="!(self.parameter in ['clients', 'threads']) || self.values.all(v, v.matches('^[1-9][0-9]{0,2}$') && int(v) <= 256)",message="sweep.values of clients or threads must be integers from 1 to 256",fieldPath=".values"
type SweepSpec struct {
	// parameter to vary: clients, threads, or a field of the chosen workload as <type>.<field>,
	// e.g. ycsb.theta, micro.readPercent or tpcc.warehouses.
	// +required
	// +kubebuilder:validation:Pattern=`^(clients|threads|[a-z]+\.[a-zA-Z]+)$`
	Parameter string `json:"parameter"`
	// values the parameter takes, one run each, in order.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[0-9A-Za-z.]+$`
	Values []string `json:"values"`
}

// BenchmarkPhase is where a Benchmark is in its life.
// +kubebuilder:validation:Enum=Pending;Loading;Running;Succeeded;Failed
type BenchmarkPhase string

// BenchmarkStatus is what the operator observed.
type BenchmarkStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase: Pending, Loading, Running, Succeeded or Failed.
	// +optional
	Phase BenchmarkPhase `json:"phase,omitempty"`
	// progress in words, e.g. "run 2/5 (threads=8)".
	// +optional
	Progress string `json:"progress,omitempty"`
	// startTime is when the first phase started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the last phase ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// results has one entry per run (one per sweep value, or a single entry without sweep).
	// +optional
	// +listType=atomic
	Results []BenchmarkResult `json:"results,omitempty"`
	// checker is the verdict of the history checker (when verify is true).
	// +optional
	Checker *CheckerResult `json:"checker,omitempty"`
	// resultsConfigMap holds the full results: per-client histograms, the rendered report and the checker's log.
	// +optional
	ResultsConfigMap *LocalObjectReference `json:"resultsConfigMap,omitempty"`
	// conditions: Ready (finished successfully), Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BenchmarkResult is the outcome of one run.
type BenchmarkResult struct {
	// sweepValue is the swept parameter's value for this run; empty without sweep.
	// +optional
	SweepValue string `json:"sweepValue,omitempty"`
	// throughput in committed operations (transactions for transactional workloads) per second.
	Throughput int64 `json:"throughput"`
	// p50 latency.
	// +optional
	P50 metav1.Duration `json:"p50,omitempty"`
	// p99 latency.
	// +optional
	P99 metav1.Duration `json:"p99,omitempty"`
	// p999 latency.
	// +optional
	P999 metav1.Duration `json:"p999,omitempty"`
	// committed operations in the run.
	// +optional
	Committed int64 `json:"committed,omitempty"`
	// aborted transaction attempts in the run.
	// +optional
	Aborted int64 `json:"aborted,omitempty"`
	// abortRate is aborted / (committed + aborted) as a decimal string, e.g. "0.0125".
	// +optional
	AbortRate string `json:"abortRate,omitempty"`
}

// CheckerResult is the verdict of the history checker.
type CheckerResult struct {
	// verdict: Pass (the history satisfies the model), Fail (it does not; see message) or Skipped (verify false,
	// or the history was too large to check).
	// +kubebuilder:validation:Enum=Pass;Fail;Skipped
	Verdict string `json:"verdict"`
	// model checked: serializability or linearizability.
	// +optional
	Model string `json:"model,omitempty"`
	// message explains a Fail or Skipped verdict (e.g. the cycle found).
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
