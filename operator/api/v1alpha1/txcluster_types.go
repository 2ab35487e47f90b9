// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TxCluster is one rdx database: `shards` shards of `replicas` replicas each, running rdxd with one transaction
// protocol, one replication protocol and one transport, reached by applications through one endpoint Service.
//
// The operator renders the engine's topology file (ConfigMap <name>-topology, key topology.json), a headless Service
// <name>-hl, one StatefulSet per shard (<name>-s<shard>, pods <name>-s<shard>-<ordinal>; pod names are rdxd node
// names; ordinal 0 is a shard's first primary, status.shards names the current one), the Services <name>
// (endpoint), <name>-rw (ordinal 0 of every shard; any member forwards writes to its shard's primary) and <name>-ro
// (pods labelled rdx.dev/role=ro; this version creates none, so it has no endpoints), and a
// PodDisruptionBudget <name> allowing one voluntary disruption at a time.
//
// How spec changes are applied:
//   - live, no restart: endpoint serviceType, port and annotations.
//   - rolling update of the StatefulSets, same epoch: image, imagePullPolicy, resources, scheduling, podTemplate,
//     RDMA wiring that does not reach the topology (resource names and counts, networks, privileged, hostNetwork),
//     hugepages size.
//   - membership epochs, one data node each, applied live by rdxd (no restart, nothing lost): replicas.
//   - epoch bump and restart of every pod at once: the rest of the topology file: storeMemory, transactions.*,
//     transport kind, batching, hugepages on/off, rdma device, gidIndex and interface, workers, endpoint auth on/off.
//     Nodes started from different settings refuse each other's connections, so a one-by-one roll would stall. rdx
//     keeps data in memory, so such a restart starts empty: the data is lost.
//   - never: shards (immutable; changing the shard count would remap every key).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=txc,categories=rdx
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`,description="replicas per shard"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="ready pods over all shards"
// +kubebuilder:printcolumn:name="Txn",type=string,JSONPath=`.spec.transactions.protocol`
// +kubebuilder:printcolumn:name="Replication",type=string,JSONPath=`.spec.replication.protocol`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.spec.transport.kind`
// +kubebuilder:printcolumn:name="RDMA",type=string,JSONPath=`.spec.transport.rdma.mode`,priority=1
// +kubebuilder:printcolumn:name="Epoch",type=integer,JSONPath=`.status.epoch`,priority=1
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Writable",type=string,JSONPath=`.status.conditions[?(@.type=="Writable")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 40 characters: it prefixes StatefulSet, Service and pod names"
type TxCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired database.
	// +required
	Spec TxClusterSpec `json:"spec"`
	// status is what the operator observed; written by the operator only.
	// +optional
	Status TxClusterStatus `json:"status,omitempty"`
}

// TxClusterSpec is the desired state of a TxCluster.
// +kubebuilder:validation:XValidation:rule="!self.transport.hugepages.enabled || (has(self.resources) && ((has(self.resources.requests) && ('cpu' in self.resources.requests || 'memory' in self.resources.requests)) || (has(self.resources.limits) && ('cpu' in self.resources.limits || 'memory' in self.resources.limits))))",message="transport.hugepages needs a cpu or memory request or limit in resources (Kubernetes rejects pods that request only huge pages)",fieldPath=".resources"
// +kubebuilder:validation:XValidation:rule="!has(self.resources) || ((!has(self.resources.requests) || !self.resources.requests.exists(k, k.startsWith('hugepages-'))) && (!has(self.resources.limits) || !self.resources.limits.exists(k, k.startsWith('hugepages-'))))",message="set huge pages with transport.hugepages, not in resources",fieldPath=".resources"
// +kubebuilder:validation:XValidation:rule="!(self.replication.protocol in ['abd', 'paxos', 'hermes', 'craq', 'zab']) || self.transactions.protocol == 'none'",messageExpression="'replication.protocol ' + self.replication.protocol + ' replicates single keys only: it cannot carry transactions (set transactions.protocol to none)'",fieldPath=".transactions.protocol"
// +kubebuilder:validation:XValidation:rule="self.transport.primitives == 'rpc' || self.transactions.protocol in ['occ', 'mvcc', 'sundial']",messageExpression="'transport.primitives ' + self.transport.primitives + ' is honoured by transactions.protocol occ, mvcc or sundial only: ' + self.transactions.protocol + ' runs every phase over RPC (set primitives to rpc)'",fieldPath=".transport.primitives"
// +kubebuilder:validation:XValidation:rule="!has(self.transport.onesidedPhases) || self.transport.primitives == 'hybrid'",messageExpression="'transport.onesidedPhases chooses the phases of primitives hybrid, and primitives is ' + self.transport.primitives + ' (remove it, or set primitives to hybrid)'",fieldPath=".transport.onesidedPhases"
// +kubebuilder:validation:XValidation:rule="self.transport.kind != 'verbs' || self.transport.rdma.mode != 'none'",message="transport.kind verbs needs RDMA devices in the pods: set transport.rdma.mode to sharedDevice, sriov or hostDevice",fieldPath=".transport"
// +kubebuilder:validation:XValidation:rule="self.transport.kind == 'verbs' || self.transport.rdma.mode == 'none'",message="transport.rdma.mode applies only to transport.kind verbs; tcp needs no RDMA device (set rdma.mode none)",fieldPath=".transport"
// +kubebuilder:validation:XValidation:rule="!(self.transport.rdma.mode in ['sharedDevice', 'sriov']) || (has(self.transport.rdma.resourceName) && size(self.transport.rdma.resourceName) > 0)",messageExpression="'transport.rdma.resourceName is required with rdma.mode ' + self.transport.rdma.mode + ' (the device plugin resource, e.g. rdma/rdma_shared_device_a or nvidia.com/sriov_rdma)'",fieldPath=".transport.rdma"
// +kubebuilder:validation:XValidation:rule="self.transport.rdma.mode in ['sharedDevice', 'sriov'] || (!has(self.transport.rdma.resourceName) && !has(self.transport.rdma.resourceCount))",message="transport.rdma.resourceName and resourceCount apply only to rdma.mode sharedDevice or sriov",fieldPath=".transport.rdma"
// +kubebuilder:validation:XValidation:rule="self.transport.rdma.mode != 'sriov' || (has(self.transport.rdma.networks) && size(self.transport.rdma.networks) > 0)",message="transport.rdma.networks is required with rdma.mode sriov (the NetworkAttachmentDefinition of the SR-IOV network)",fieldPath=".transport.rdma"
// +kubebuilder:validation:XValidation:rule="self.transport.rdma.mode in ['sharedDevice', 'sriov'] || !has(self.transport.rdma.networks) || size(self.transport.rdma.networks) == 0",message="transport.rdma.networks applies only to rdma.mode sharedDevice or sriov",fieldPath=".transport.rdma"
// +kubebuilder:validation:XValidation:rule="self.transport.rdma.mode == 'hostDevice' || (!has(self.transport.rdma.hostNetwork) || !self.transport.rdma.hostNetwork) && !has(self.transport.rdma.privileged)",message="transport.rdma.hostNetwork and privileged apply only to rdma.mode hostDevice",fieldPath=".transport.rdma"
// +kubebuilder:validation:XValidation:rule="!self.transport.hugepages.enabled || !has(self.transport.hugepages.size) || quantity(string(self.transport.hugepages.size)).compareTo(quantity(string(self.storeMemory))) >= 0",messageExpression="'transport.hugepages.size ' + string(self.transport.hugepages.size) + ' is below storeMemory ' + string(self.storeMemory) + ': the store arena lives on the huge pages'",fieldPath=".transport.hugepages.size"
// +kubebuilder:validation:XValidation:rule="!self.transport.hugepages.enabled || has(self.transport.hugepages.size)",message="transport.hugepages.size is required when hugepages are enabled (the hugepages-2Mi amount per pod, e.g. 1Gi)",fieldPath=".transport.hugepages"
// +kubebuilder:validation:XValidation:rule="self.transport.hugepages.enabled || !has(self.transport.hugepages.size)",message="transport.hugepages.size applies only when hugepages are enabled (set enabled: true, or remove size)",fieldPath=".transport.hugepages"
// +kubebuilder:validation:XValidation:rule="self.transport.rdma.mode != 'none' || (!has(self.transport.rdma.interface) && !has(self.transport.rdma.device) && !has(self.transport.rdma.gidIndex))",message="transport.rdma.interface, device and gidIndex apply only to transport.kind verbs with an rdma.mode other than none",fieldPath=".transport.rdma"
type TxClusterSpec struct {
	// shards is the number of shards; keys map to shards by hash. Immutable: changing it would remap every key.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="shards is immutable: changing it would remap every key; create a new TxCluster instead"
	Shards int32 `json:"shards,omitempty"`

	// replicas is the number of replicas of each shard (1 to 7); the first is the shard's first primary.
	// Changing it steps topology epochs one data node at a time, each applied live: a new pod copies its shard while
	// the others serve, the last pod goes first when scaling in; no other pod restarts and no data is lost.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	Replicas int32 `json:"replicas,omitempty"`

	// storeMemory is the in-memory store of each rdxd node (index and records; topology memory_mb), allocated and
	// registered for RDMA at start-up: it bounds how much data a node holds. A multiple of 1Mi from 16Mi to 1Ti.
	// rdxd needs about 64Mi of process memory besides it: when resources set no memory request or limit the
	// operator requests both, and a memory limit below both (without huge pages) gets a MemoryTooSmall warning
	// event, as the pod would be OOM-killed once the store fills up. With transport.hugepages the store lives on the
	// huge pages, so hugepages.size must cover it. Changing it restarts every pod with a new epoch.
	// +optional
	// +kubebuilder:default="256Mi"
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isInteger() && quantity(string(self)).asInteger() % 1048576 == 0 && quantity(string(self)).asInteger() >= 16777216 && quantity(string(self)).asInteger() <= 1099511627776",message="storeMemory must be a multiple of 1Mi from 16Mi to 1Ti (e.g. 256Mi or 4Gi)"
	StoreMemory *resource.Quantity `json:"storeMemory,omitempty"`

	// image is the rdx engine image (it must contain rdxd on PATH). Default: the operator's --engine-image
	// (ghcr.io/rdx-dev/rdx-engine:<operator version>).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the rdxd container.
	// +optional
	// +kubebuilder:default=IfNotPresent
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// workers is the number of rdxd worker threads per node (topology `workers`); worker i talks to worker i of
	// every peer. Changing it restarts every pod with a new epoch.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Workers int32 `json:"workers,omitempty"`

	// transport selects the network between rdxd nodes and how pods get RDMA devices.
	// +optional
	// +kubebuilder:default={}
	Transport TransportSpec `json:"transport,omitempty"`

	// transactions configures the commit protocol.
	// +optional
	// +kubebuilder:default={}
	Transactions TransactionsSpec `json:"transactions,omitempty"`

	// replication configures replication inside each shard.
	// +optional
	// +kubebuilder:default={}
	Replication ReplicationSpec `json:"replication,omitempty"`

	// endpoint configures the Service applications connect to (Redis protocol, RESP2/3).
	// +optional
	// +kubebuilder:default={}
	Endpoint EndpointSpec `json:"endpoint,omitempty"`

	// resources of the rdxd container. The operator adds the RDMA device resource and hugepages-2Mi from transport,
	// and, when no memory request or limit is set, a memory request of what rdxd needs (storeMemory + 64Mi, or 64Mi
	// when the store is on huge pages); do not list huge pages here.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// scheduling places the pods. Without an affinity the operator prefers to spread the replicas of a shard over
	// nodes (preferred pod anti-affinity on kubernetes.io/hostname).
	// +optional
	Scheduling SchedulingSpec `json:"scheduling,omitempty"`

	// podTemplate holds overrides merged into every rdxd pod; the operator's own labels, annotations, volumes and
	// RDMA wiring take precedence.
	// +optional
	PodTemplate PodOverrides `json:"podTemplate,omitempty"`
}

// TransportKind is the network backend of rdxd.
// +kubebuilder:validation:Enum=tcp;verbs
type TransportKind string

// Transport kinds.
const (
	TransportTCP   TransportKind = "tcp"
	TransportVerbs TransportKind = "verbs"
)

// OneSidedPhase names a transaction protocol phase that can run one-sided.
// +kubebuilder:validation:Enum=read
type OneSidedPhase string

// Primitives selects which network primitives the transaction protocol uses.
// +kubebuilder:validation:Enum=rpc;onesided;hybrid
type Primitives string

// Primitives rdxd implements.
const (
	// PrimitivesRPC runs every protocol phase over messages (RPC).
	PrimitivesRPC Primitives = "rpc"
	// PrimitivesOneSided runs the phases the protocol can run one-sided with one-sided RDMA (occ, mvcc and
	// sundial: execution reads).
	PrimitivesOneSided Primitives = "onesided"
	// PrimitivesHybrid runs the protocol's chosen subset of phases one-sided (occ, mvcc and sundial: execution
	// reads).
	PrimitivesHybrid Primitives = "hybrid"
)

// TransportSpec selects the network between rdxd nodes.
type TransportSpec struct {
	// kind is the network backend: `tcp` (works everywhere) or `verbs` (RDMA through rdma-core: InfiniBand, RoCE or
	// soft-RoCE; needs rdma.mode other than none).
	// Changing it restarts every pod with a new epoch.
	// +optional
	// +kubebuilder:default=tcp
	Kind TransportKind `json:"kind,omitempty"`

	// primitives of the transaction protocol: `rpc` (every phase over messages), or `onesided` or `hybrid`, which
	// `occ`, `mvcc` and `sundial` honour: their execution reads a remote record with one one-sided READ of the
	// primary's memory (mvcc's and sundial's then record no timestamp or lease, and the commit renews them; mvcc's
	// read the latest version only); their commit phases stay RPC, so the two are the same today. On transport
	// kind tcp the target's CPU executes a one-sided operation (emulated). Written to topology
	// transport.primitives.
	// +optional
	// +kubebuilder:default=rpc
	Primitives Primitives `json:"primitives,omitempty"`

	// onesidedPhases chooses, with primitives `hybrid` only, the phases that run one-sided (RCC's per-phase choice);
	// omitted, hybrid runs the protocol's own choice. This rdx version runs one phase one-sided, the `read` of
	// occ, mvcc and sundial (so today hybrid with [read] is what onesided does); a phase that runs over RPC only is
	// refused. Written to topology transport.onesided_phases.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=9
	OneSidedPhases []OneSidedPhase `json:"onesidedPhases,omitempty"`

	// rdma says how pods get RDMA devices (kind verbs only).
	// +optional
	// +kubebuilder:default={}
	RDMA RDMASpec `json:"rdma,omitempty"`

	// hugepages puts rdxd's registered memory on 2 MiB huge pages.
	// +optional
	// +kubebuilder:default={}
	Hugepages HugepagesSpec `json:"hugepages,omitempty"`

	// batching controls opportunistic per-destination message batching.
	// +optional
	// +kubebuilder:default={}
	Batching BatchingSpec `json:"batching,omitempty"`
}

// RDMAMode is how a pod gets an RDMA device.
// +kubebuilder:validation:Enum=none;sharedDevice;sriov;hostDevice
type RDMAMode string

// RDMA wiring modes.
const (
	RDMANone         RDMAMode = "none"
	RDMASharedDevice RDMAMode = "sharedDevice"
	RDMASRIOV        RDMAMode = "sriov"
	RDMAHostDevice   RDMAMode = "hostDevice"
)

// RDMASpec says how pods get RDMA devices. In every mode other than none the rdxd container runs as uid 0 with the
// IPC_LOCK capability (and no other, unless privileged), which lifts the memlock limit for memory registration
// (Kubernetes has no memlock setting, and a capability never takes effect for a non-root process).
type RDMASpec struct {
	// mode of RDMA wiring:
	//   - none: no RDMA device (transport kind tcp).
	//   - sharedDevice: request resourceName from the network-operator's RDMA shared device plugin
	//     (e.g. rdma/rdma_shared_device_a); optionally attach Multus networks (e.g. macvlan over the RDMA port).
	//   - sriov: request resourceName (a VF) from the SR-IOV device plugin and attach the SR-IOV
	//     NetworkAttachmentDefinitions in networks through Multus (annotation k8s.v1.cni.cncf.io/networks).
	//   - hostDevice: mount the host's /dev/infiniband (soft-RoCE and development clusters); the container runs
	//     privileged unless privileged is false (then the runtime's device cgroup must allow the devices);
	//     optionally hostNetwork so rdxd sees the host's RDMA-capable interface.
	// Changes to the wiring roll the pods; changes to the interface, device or gidIndex restart them with a new epoch.
	// +optional
	// +kubebuilder:default=none
	Mode RDMAMode `json:"mode,omitempty"`

	// resourceName is the extended resource a device plugin advertises for the RDMA device (sharedDevice, sriov).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	ResourceName string `json:"resourceName,omitempty"`

	// resourceCount is how many of resourceName each pod requests (requests = limits). Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	ResourceCount *int32 `json:"resourceCount,omitempty"`

	// networks are NetworkAttachmentDefinitions attached through Multus, each `name`, `namespace/name` or either
	// with `@interface`; they become the pod annotation k8s.v1.cni.cncf.io/networks in this order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(@[a-zA-Z0-9_.-]{1,15})?$`
	Networks []string `json:"networks,omitempty"`

	// interface is the pod's RDMA network interface, written to the topology as transport.rdma_interface: rdxd
	// reads its own RDMA IP there and announces it to peers. Default: net1 when networks are set (Multus names the
	// first secondary interface net1), otherwise empty (the interface holding the pod IP).
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_.-]{1,15}$`
	Interface string `json:"interface,omitempty"`

	// device is the ibv device name (topology transport.device); empty = the device that owns the RDMA IP.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_.-]{1,64}$`
	Device string `json:"device,omitempty"`

	// gidIndex is the RoCE GID index (topology transport.gid_index); unset or -1 = detect (RoCEv2, IPv4-mapped).
	// +optional
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=255
	GIDIndex *int32 `json:"gidIndex,omitempty"`

	// hostNetwork runs the pods in the host's network namespace (hostDevice only). The pods of shard s then bind
	// 7000+s (transport), 6379+s (Redis) and 9100+s (HTTP) on the node: shards share a node, while the replicas of
	// one shard need distinct nodes (the scheduler keeps pods with the same host ports apart).
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`

	// privileged runs the rdxd container privileged so it may open /dev/infiniband (hostDevice only; default true).
	// +optional
	Privileged *bool `json:"privileged,omitempty"`
}

// HugepagesSpec puts registered memory on 2 MiB huge pages.
type HugepagesSpec struct {
	// enabled requests hugepages-2Mi for each pod (requests = limits, plus a HugePages-2Mi emptyDir at
	// /dev/hugepages) and tells rdxd to use them (topology transport.hugepages). Turning it on or off restarts every
	// pod with a new epoch.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled,omitempty"`

	// size is the hugepages-2Mi amount per pod, a positive multiple of 2Mi; set it only with enabled.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isInteger() && quantity(string(self)).asInteger() >= 2097152 && quantity(string(self)).asInteger() % 2097152 == 0",message="transport.hugepages.size must be a positive multiple of 2Mi (e.g. 512Mi or 1Gi)"
	Size *resource.Quantity `json:"size,omitempty"`
}

// BatchingSpec controls opportunistic per-destination batching (topology transport.batching).
// Changing it restarts every pod with a new epoch.
type BatchingSpec struct {
	// enabled batches messages to the same destination into one packet.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// maxBytes caps the bytes of one batched packet (unused while enabled is false).
	// +optional
	// +kubebuilder:default=4096
	// +kubebuilder:validation:Minimum=64
	// +kubebuilder:validation:Maximum=65536
	MaxBytes int32 `json:"maxBytes,omitempty"`
	// maxMessages caps the messages in one batched packet (unused while enabled is false).
	// +optional
	// +kubebuilder:default=64
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	MaxMessages int32 `json:"maxMessages,omitempty"`
}

// TransactionProtocol is a commit protocol rdxd implements, or none.
// +kubebuilder:validation:Enum=dnl4;dnl2;dnl1;nowait;waitdie;occ;mvcc;sundial;none
type TransactionProtocol string

// Commit protocols (Dandelion variants and RCC's OCC, MVCC, SUNDIAL and 2PL ones), and none: single-key commands only.
const (
	ProtocolDNL4    TransactionProtocol = "dnl4"
	ProtocolDNL2    TransactionProtocol = "dnl2"
	ProtocolDNL1    TransactionProtocol = "dnl1"
	ProtocolNoWait  TransactionProtocol = "nowait"
	ProtocolWaitDie TransactionProtocol = "waitdie"
	ProtocolOCC     TransactionProtocol = "occ"
	ProtocolMVCC    TransactionProtocol = "mvcc"
	ProtocolSundial TransactionProtocol = "sundial"
	ProtocolNone    TransactionProtocol = "none"
)

// TransactionsSpec configures the commit protocol. Every change restarts every pod with a new epoch.
type TransactionsSpec struct {
	// protocol is the commit protocol: one of the Dandelion variants dnl4, dnl2 or dnl1 (optimistic reads), one of
	// RCC's two-phase-locking protocols nowait or waitdie (each read locks its key at the primary; a held key aborts
	// the transaction, or under waitdie waits for a younger holder), RCC's occ (optimistic reads, one-sided with
	// transport.primitives onesided or hybrid; commit as dnl4), RCC's mvcc (timestamp ordering over a few versions
	// per key at the primary, reads at the primary; with onesided or hybrid, one-sided reads of the latest version,
	// renewed at commit; commit as occ), RCC's sundial (logical leases per key at the primary, renewed at commit;
	// with onesided or hybrid, one-sided reads without a lease; commit as occ), or none (no transactions:
	// MULTI/EXEC and multi-key commands are refused, single-key commands run; required by replication protocols
	// abd, paxos, hermes, craq and zab), written verbatim to topology txn.protocol.
	// +optional
	// +kubebuilder:default=dnl4
	Protocol TransactionProtocol `json:"protocol,omitempty"`
	// localBackupReads lets a read be served by a local backup replica instead of the primary: a Dandelion
	// transaction's reads, and single-key reads (topology txn.local_backup_reads). nowait, waitdie, mvcc and sundial
	// read every key a transaction reads at its primary (where its lock, timestamps or lease live), so with them it
	// applies to single-key reads only.
	// +optional
	// +kubebuilder:default=true
	LocalBackupReads *bool `json:"localBackupReads,omitempty"`
	// hashTableBatching batches hash-table operations of concurrent transactions (topology txn.ht_batching).
	// +optional
	// +kubebuilder:default=true
	HashTableBatching *bool `json:"hashTableBatching,omitempty"`
}

// ReplicationProtocol is a replication protocol inside a shard that rdxd implements.
// +kubebuilder:validation:Enum=primary-backup;abd;paxos;hermes;craq;zab
type ReplicationProtocol string

const (
	// ReplicationPrimaryBackup: the shard's primary orders writes and copies them to the others; a lost primary is
	// replaced by a backup a majority of the data nodes elects.
	ReplicationPrimaryBackup ReplicationProtocol = "primary-backup"
	// ReplicationABD: leaderless quorum reads and writes per key (Odyssey's ABD); single keys only.
	ReplicationABD ReplicationProtocol = "abd"
	// ReplicationPaxos: Classic Paxos per key (Odyssey's CP): leaderless consensus on each key's next write, so
	// read-modify-writes run too; single keys only.
	ReplicationPaxos ReplicationProtocol = "paxos"
	// ReplicationHermes: Hermes (Odyssey's): any member updates a key by invalidating it at every other member;
	// reads are local; every member must acknowledge, so a member's loss stops its shard's updates; single keys only.
	ReplicationHermes ReplicationProtocol = "hermes"
	// ReplicationCRAQ: CRAQ, chain replication with apportioned queries (Odyssey's): the chain's head orders every
	// write, its tail commits it; any member reads a clean key locally; the chain needs every member, so a member's
	// loss stops its shard's writes; single keys only.
	ReplicationCRAQ ReplicationProtocol = "craq"
	// ReplicationZAB: ZAB (Odyssey's): the shard's leader orders every write and commits it once a majority of the
	// members holds it; every member reads its own committed copy, so reads are sequentially consistent, not
	// linearizable; a follower's loss costs no pause; when the leader is lost, a majority elects another, which
	// gathers a majority's copies before it serves; single keys only.
	ReplicationZAB ReplicationProtocol = "zab"
)

// ReplicationSpec configures replication inside each shard.
type ReplicationSpec struct {
	// protocol replicates the shard. `primary-backup`: the shard's primary, its first member until a failover, orders
	// writes and copies them to the other members; when it is lost, a majority of the data nodes elects a backup in
	// its place. `abd`: any member coordinates any key's read or write with a majority of the shard's members (no
	// primary, no election: a minority may be down without a pause); reads and plain writes only (GET, SET, DEL;
	// INCR, SETNX, GETSET and other read-modify-writes are refused), and no transactions (transactions.protocol must
	// be none). `paxos`: Classic Paxos per key; any member proposes a key's next write to a majority (prepare,
	// accept, commit), so every single-key command runs, read-modify-writes included, with ABD's reads and, like
	// abd, no primary, no pause while a minority is down, and no transactions (transactions.protocol must be none).
	// `hermes`: any member updates a key (every single-key command) by invalidating it at every other member and
	// validating it once all acknowledged; reads are served by the member asked, without a round trip. Every member
	// must acknowledge an update: while a member is down or restarting (a rolling update too) its shard's updates
	// fail and reads of keys with an update in flight wait; no transactions (transactions.protocol must be none).
	// `craq`: chain replication with apportioned queries; the shard's members form a chain in their order: its head
	// (the shard's first member) orders every write (every single-key command), its tail (the last member) commits
	// it. Every member answers reads of a clean key itself and asks the tail about a key with a write in flight.
	// Every member must be up for writes: while a member is down or restarting (a rolling update too) its shard's
	// writes fail (so do reads of a key with a write in flight while the tail is down); no transactions
	// (transactions.protocol must be none).
	// `zab`: the shard's leader (its first member until an election) orders every write (every single-key command,
	// forwarded to it from any member) and commits it once a majority of the members holds it. Every member answers
	// reads from its own committed copy without a round trip, so reads are sequentially consistent per client
	// session (a session sees its own writes and never goes back), not linearizable: another member may still return
	// an older value. A follower's loss costs no pause (a majority still acknowledges); when the leader is lost
	// (down, or restarting in a rolling update), a majority of the members elects another, which copies a
	// majority's records before it serves: the shard's writes fail until then (failureDetection.timeoutMilliseconds,
	// up to twice that per candidate ahead in member order, then the copies); no transactions (transactions.protocol
	// must be none).
	// Written to topology replication.protocol.
	// +optional
	// +kubebuilder:default=primary-backup
	Protocol ReplicationProtocol `json:"protocol,omitempty"`
	// failureDetection times the heartbeats every data node sends every other one (topology failure_detection). A
	// node silent for the timeout is suspected (a backup is excluded until it copies its shard again; a primary is
	// replaced by an elected backup), and each answer is a lease of that length: a backup reads its own copy only
	// while it holds one from every other data node, a primary serves only while it holds one from a majority.
	// +optional
	// +kubebuilder:default={heartbeatMilliseconds: 50, timeoutMilliseconds: 500}
	FailureDetection FailureDetectionSpec `json:"failureDetection,omitempty"`
}

// FailureDetectionSpec times failure detection. Every change restarts every pod with a new epoch.
// +kubebuilder:validation:XValidation:rule="self.timeoutMilliseconds >= 4 * self.heartbeatMilliseconds",message="failureDetection.timeoutMilliseconds must be at least 4 heartbeats (4 x heartbeatMilliseconds)"
type FailureDetectionSpec struct {
	// heartbeatMilliseconds is how often each data node heartbeats each other one.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=10000
	HeartbeatMilliseconds int32 `json:"heartbeatMilliseconds,omitempty"`
	// timeoutMilliseconds is the silence after which a node is suspected, and the length of a lease.
	// +optional
	// +kubebuilder:default=500
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=60000
	TimeoutMilliseconds int32 `json:"timeoutMilliseconds,omitempty"`
}

// EndpointSpec configures the endpoint Service <name>.
// +kubebuilder:validation:XValidation:rule="!has(self.tlsSecretRef)",message="endpoint.tlsSecretRef: rdxd does not serve TLS yet; the endpoint speaks plain RESP (remove tlsSecretRef; terminate TLS in front of the endpoint Service if clients need it)",fieldPath=".tlsSecretRef"
type EndpointSpec struct {
	// serviceType of the endpoint Service <name>. Changes apply live.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// port of the endpoint Services (Redis protocol); pods always listen on 6379. Changes apply live.
	// +optional
	// +kubebuilder:default=6379
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// annotations added to the endpoint Service <name> (e.g. for a load balancer controller).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// authSecretRef requires clients to AUTH with the password in this Secret key. The Secret is mounted at
	// /etc/rdx/auth and its file path written to topology auth.password_file. Adding or removing it restarts every
	// pod with a new epoch; a changed password reaches the pods through the mounted file.
	// +optional
	AuthSecretRef *SecretKeyReference `json:"authSecretRef,omitempty"`

	// tlsSecretRef is refused at admission: rdxd does not serve TLS, the endpoint speaks plain RESP. The field
	// exists so that setting it is refused with that message instead of being dropped silently.
	// +optional
	TLSSecretRef *LocalObjectReference `json:"tlsSecretRef,omitempty"`
}

// SchedulingSpec places the rdxd pods.
type SchedulingSpec struct {
	// nodeSelector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// affinity of the pods; replaces the operator's default preferred anti-affinity between replicas of a shard.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// tolerations of the pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// topologySpreadConstraints of the pods.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// priorityClassName of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// PodOverrides are merged into every rdxd pod template; changing them rolls the pods (same epoch).
type PodOverrides struct {
	// labels added to the pods; the operator's labels (app.kubernetes.io/*, rdx.dev/*) win on conflict.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations added to the pods; the operator's annotations (rdx.dev/*, k8s.v1.cni.cncf.io/networks) win.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// serviceAccountName of the pods (rdxd needs no Kubernetes API access).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// imagePullSecrets of the pods.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// securityContext of the pods.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// env added to the rdxd container after the operator's (POD_NAME, POD_NAMESPACE).
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// terminationGracePeriodSeconds of the pods; rdxd drains in at most 10 s after SIGTERM. Default 30.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// TxClusterPhase summarises the conditions in one word.
// +kubebuilder:validation:Enum=Pending;Running;Updating;Degraded
type TxClusterPhase string

// TxCluster phases.
const (
	// PhasePending: no replica is ready yet.
	PhasePending TxClusterPhase = "Pending"
	// PhaseRunning: Ready is True.
	PhaseRunning TxClusterPhase = "Running"
	// PhaseUpdating: some replicas are ready and a rollout, restart or scale is in progress.
	PhaseUpdating TxClusterPhase = "Updating"
	// PhaseDegraded: Degraded is True.
	PhaseDegraded TxClusterPhase = "Degraded"
)

// TxClusterStatus is what the operator observed.
type TxClusterStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase summarises the conditions: Pending, Running, Updating or Degraded.
	// +optional
	Phase TxClusterPhase `json:"phase,omitempty"`
	// epoch is the configuration epoch in the topology ConfigMap; it grows by one whenever the topology changes.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// replicas is the number of data pods wanted over all shards (shards x replicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// readyReplicas is the number of data pods that run the current topology and pass /readyz.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// endpoint is the in-cluster address of the endpoint Service, host:port.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// shards lists the members of every shard as written in the topology.
	// +optional
	// +listType=map
	// +listMapKey=id
	Shards []ShardStatus `json:"shards,omitempty"`
	// conditions: Ready, Progressing, Degraded, Writable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ShardStatus describes one shard.
type ShardStatus struct {
	// id of the shard, 0 to shards-1.
	ID int32 `json:"id"`
	// members are the node (pod) names of the shard's replicas in topology order.
	// +optional
	// +listType=atomic
	Members []string `json:"members,omitempty"`
	// primary is the member that orders writes: the one that says it is the primary in the newest view (read from
	// the pods' /metrics; the first member until a failover). Empty when no member says so.
	// +optional
	Primary string `json:"primary,omitempty"`
	// view counts the shard's primaries: 0 for the first member, one more per failover.
	// +optional
	View int64 `json:"view,omitempty"`
	// primaryReady: the primary runs the current configuration and passes /readyz (the shard takes writes).
	// +optional
	PrimaryReady bool `json:"primaryReady,omitempty"`
	// readyMembers is the number of members that pass /readyz.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
}

// +kubebuilder:object:root=true

// TxClusterList is a list of TxCluster.
type TxClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TxCluster `json:"items"`
}
