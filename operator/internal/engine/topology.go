// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// Topology is the file rdxd reads (engine/docs/topology.md). Field names and order follow that document; every
// field is written explicitly so the file says exactly what runs, independent of rdxd's defaults.
type Topology struct {
	Cluster     string              `json:"cluster"`
	Epoch       int64               `json:"epoch"`
	Transport   TopologyTransport   `json:"transport"`
	Workers     int32               `json:"workers"`
	MemoryMB    int32               `json:"memory_mb"`
	Replication TopologyReplication `json:"replication"`
	Txn         TopologyTxn         `json:"txn"`
	Auth        TopologyAuth        `json:"auth"`
	Failure     TopologyFailure     `json:"failure_detection"`
	Shards      []TopologyShard     `json:"shards"`
	Nodes       []TopologyNode      `json:"nodes"`
}

// TopologyTransport is the topology's transport section.
type TopologyTransport struct {
	Kind       string `json:"kind"`
	Primitives string `json:"primitives"`
	// OneSidedPhases is written only when the spec chooses them (absent: the protocol's own hybrid choice).
	OneSidedPhases []string         `json:"onesided_phases,omitempty"`
	Device         string           `json:"device"`
	GIDIndex       int32            `json:"gid_index"`
	RDMAInterface  string           `json:"rdma_interface"`
	Hugepages      bool             `json:"hugepages"`
	Batching       TopologyBatching `json:"batching"`
}

// TopologyBatching is the topology's transport.batching section.
type TopologyBatching struct {
	Enabled     bool  `json:"enabled"`
	MaxBytes    int32 `json:"max_bytes"`
	MaxMessages int32 `json:"max_messages"`
}

// TopologyReplication is the topology's replication section.
type TopologyReplication struct {
	Protocol string `json:"protocol"`
}

// TopologyTxn is the topology's txn section.
type TopologyTxn struct {
	Protocol         string `json:"protocol"`
	LocalBackupReads bool   `json:"local_backup_reads"`
	HTBatching       bool   `json:"ht_batching"`
}

// TopologyAuth is the topology's auth section.
type TopologyAuth struct {
	PasswordFile string `json:"password_file"`
}

// TopologyFailure is the topology's failure_detection section. The operator always enables it: without it a backup
// that resumes after a pause may serve reads from a copy that missed writes.
type TopologyFailure struct {
	Enabled     bool  `json:"enabled"`
	HeartbeatMs int32 `json:"heartbeat_ms"`
	TimeoutMs   int32 `json:"timeout_ms"`
}

// TopologyShard lists one shard's members; the first is the primary.
type TopologyShard struct {
	ID      int32    `json:"id"`
	Members []string `json:"members"`
}

// TopologyNode is one rdxd node.
type TopologyNode struct {
	Name      string `json:"name"`
	Host      string `json:"host"`
	RDMAAddr  string `json:"rdma_addr"`
	Port      int32  `json:"port"`
	RedisPort int32  `json:"redis_port"`
	HTTPPort  int32  `json:"http_port"`
	Role      string `json:"role"`
}

// MemoryOverheadMB is the process memory rdxd needs besides its store (spec.storeMemory, topology memory_mb).
const MemoryOverheadMB = 64

// DefaultStoreMemory is spec.storeMemory's default (the API server fills it in; objects built in Go may lack it).
var DefaultStoreMemory = resource.MustParse("256Mi")

// StoreMemoryMB is the store arena of each node in MiB (the API guarantees a multiple of 1Mi).
func StoreMemoryMB(c *rdxv1.TxCluster) int32 {
	q := ptr.Deref(c.Spec.StoreMemory, DefaultStoreMemory)
	return int32(q.Value() >> 20)
}

// BuildTopology renders the topology for a cluster at the given epoch from a spec the API server defaulted: every
// shard with spec.replicas members.
func BuildTopology(c *rdxv1.TxCluster, epoch int64) Topology {
	return BuildTopologyNodes(c, epoch, c.Spec.Shards*c.Spec.Replicas)
}

// BuildTopologyNodes renders the topology with the first `nodes` data nodes of the ordinal-major layout: node i is
// ordinal i / shards of shard i % shards. Scaling replicas then appends nodes at the end or removes them from it, one
// per epoch, which is what rdxd applies without a restart (engine/docs/topology.md, "Membership epochs").
func BuildTopologyNodes(c *rdxv1.TxCluster, epoch int64, nodes int32) Topology {
	s := &c.Spec
	t := Topology{
		Cluster: c.Name,
		Epoch:   epoch,
		Transport: TopologyTransport{
			Kind:           string(s.Transport.Kind),
			Primitives:     string(s.Transport.Primitives),
			OneSidedPhases: oneSidedPhases(s.Transport.OneSidedPhases),
			Device:         s.Transport.RDMA.Device,
			GIDIndex:       ptr.Deref(s.Transport.RDMA.GIDIndex, -1),
			RDMAInterface:  rdmaInterface(&s.Transport.RDMA),
			Hugepages:      s.Transport.Hugepages.Enabled,
			Batching: TopologyBatching{
				Enabled:     ptr.Deref(s.Transport.Batching.Enabled, true),
				MaxBytes:    s.Transport.Batching.MaxBytes,
				MaxMessages: s.Transport.Batching.MaxMessages,
			},
		},
		Workers:     s.Workers,
		MemoryMB:    StoreMemoryMB(c),
		Replication: TopologyReplication{Protocol: string(s.Replication.Protocol)},
		Txn: TopologyTxn{
			Protocol:         string(s.Transactions.Protocol),
			LocalBackupReads: ptr.Deref(s.Transactions.LocalBackupReads, true),
			HTBatching:       ptr.Deref(s.Transactions.HashTableBatching, true),
		},
		Failure: TopologyFailure{
			Enabled:     true,
			HeartbeatMs: s.Replication.FailureDetection.HeartbeatMilliseconds,
			TimeoutMs:   s.Replication.FailureDetection.TimeoutMilliseconds,
		},
	}
	if ref := s.Endpoint.AuthSecretRef; ref != nil {
		t.Auth.PasswordFile = path.Join(AuthDir, ref.Key)
	}
	for shard := int32(0); shard < s.Shards; shard++ {
		t.Shards = append(t.Shards, TopologyShard{ID: shard, Members: []string{}})
	}
	for i := int32(0); i < nodes; i++ {
		shard, ord := i%s.Shards, i/s.Shards
		ports := PortsOf(c, shard)
		name := PodName(c, shard, ord)
		t.Shards[shard].Members = append(t.Shards[shard].Members, name)
		t.Nodes = append(t.Nodes, TopologyNode{
			Name: name, Host: PodHost(c, shard, ord),
			Port: ports.Transport, RedisPort: ports.Redis, HTTPPort: ports.HTTP, Role: RoleData,
		})
	}
	return t
}

// Members is how many data nodes of shard `shard` the topology has (its StatefulSet's replicas).
func (t Topology) Members(shard int32) int32 {
	for _, s := range t.Shards {
		if s.ID == shard {
			return int32(len(s.Members))
		}
	}
	return 0
}

// MemoryShortfall describes a memory limit too small for rdxd's store plus its process memory (the pod would be
// OOM-killed once the store fills up), or returns "" when the limit is unset or covers it. (The API server cannot
// check it: a CEL rule over resource quantities in resources.limits exceeds the validation cost budget.)
func MemoryShortfall(c *rdxv1.TxCluster) string {
	limit, ok := c.Spec.Resources.Limits[corev1.ResourceMemory]
	need := memoryNeed(c)
	if !ok || limit.Cmp(need) >= 0 {
		return ""
	}
	return fmt.Sprintf("resources.limits.memory %s is below the %s rdxd needs (storeMemory %dMi + ~%dMi of process memory)",
		limit.String(), need.String(), StoreMemoryMB(c), MemoryOverheadMB)
}

// rdmaInterface is the interface rdxd reads its RDMA address from: the explicit one, net1 when Multus attaches
// secondary networks, else empty (the interface holding the pod IP).
func rdmaInterface(r *rdxv1.RDMASpec) string {
	if r.Interface != "" {
		return r.Interface
	}
	if len(r.Networks) > 0 {
		return DefaultInterface
	}
	return ""
}

// Marshal renders the topology file.
func (t Topology) Marshal() (string, error) {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

// RestartHash identifies what a running rdxd cannot change: the topology without its epoch and its members (the
// first node of each shard stands for the others' addresses and ports). rdxd applies a change of the members alone
// without a restart; any other change needs new processes, and nodes started from files that differ in it refuse
// each other, so all pods restart together when it changes.
func (t Topology) RestartHash() string {
	settings := t
	settings.Epoch = 0
	settings.Shards = nil
	for _, s := range t.Shards {
		settings.Shards = append(settings.Shards, TopologyShard{ID: s.ID})
	}
	settings.Nodes = nil
	if len(t.Nodes) >= len(t.Shards) {
		settings.Nodes = t.Nodes[:len(t.Shards)]
	}
	return shortHash(settings)
}

// ParseTopology reads a topology file written by the operator (unknown keys are tolerated so a newer file does not
// block reconciliation; any difference from the rendered file bumps the epoch anyway).
func ParseTopology(data string) (Topology, error) {
	var t Topology
	if err := json.Unmarshal([]byte(data), &t); err != nil {
		return t, fmt.Errorf("parse %s: %w", TopologyKey, err)
	}
	if t.Epoch < 1 {
		return t, fmt.Errorf("parse %s: epoch %d < 1", TopologyKey, t.Epoch)
	}
	return t, nil
}

// NextTopology decides the next file and its epoch (always one more than the highest known: the current file's, or
// knownEpoch, the highest the status or a pod reported, when the ConfigMap is gone or unreadable, so an epoch never
// names two files).
//   - The rendered file equals the current one: unchanged.
//   - Only the number of data nodes differs (spec.replicas changed): one node more or less, in the ordinal-major
//     layout, once canStep(current, next) says the cluster can take it (the nodes that stay serve and run the
//     current epoch, the last removed pod is gone); until then unchanged. rdxd applies such an epoch live; one node
//     per epoch keeps majorities overlapping.
//   - Anything else (a setting changed, the ConfigMap edited or lost): the rendered file with as many data nodes as
//     the current one has (knownNodes, from the status, when it is gone), at a new epoch; stepping goes on from there.
func NextTopology(c *rdxv1.TxCluster, current *Topology, currentData string, knownEpoch int64, knownNodes int32,
	canStep func(current, next Topology) bool) (Topology, string, error) {
	floor := knownEpoch
	target := c.Spec.Shards * c.Spec.Replicas
	have := target
	if current != nil {
		have = int32(len(current.Nodes))
		same := BuildTopologyNodes(c, current.Epoch, have)
		data, err := same.Marshal()
		if err != nil {
			return Topology{}, "", err
		}
		if data == currentData {
			if have == target {
				return same, data, nil
			}
			step := have + 1
			if have > target {
				step = have - 1
			}
			next := BuildTopologyNodes(c, max(floor, current.Epoch)+1, step)
			if !canStep(same, next) {
				return same, data, nil
			}
			data, err := next.Marshal()
			return next, data, err
		}
		floor = max(floor, current.Epoch)
	} else if knownNodes > 0 {
		have = knownNodes
	}
	t := BuildTopologyNodes(c, floor+1, min(max(have, c.Spec.Shards), c.Spec.Shards*maxReplicas))
	data, err := t.Marshal()
	return t, data, err
}

// maxReplicas is the API's bound on spec.replicas (a file with more nodes per shard is not one this operator wrote).
const maxReplicas = 7

// LegacyRestartHash is the restart hash of operators before membership epochs were stepped (a hash of the whole
// file, epoch and members included). A pod that carries it for the current file runs exactly that file: it is
// adopted (its annotation rewritten) instead of being restarted with all the others when the operator is upgraded.
func (t Topology) LegacyRestartHash() string { return shortHash(t) }

// shortHash is 16 hex digits of the SHA-256 of v's JSON (plain structs of strings, ints and bools: cannot fail).
func shortHash(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// oneSidedPhases renders transport.onesidedPhases (nil when the spec leaves hybrid's choice to the protocol).
func oneSidedPhases(phases []rdxv1.OneSidedPhase) []string {
	if len(phases) == 0 {
		return nil
	}
	out := make([]string, len(phases))
	for i, p := range phases {
		out[i] = string(p)
	}
	return out
}
