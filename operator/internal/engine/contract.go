// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package engine is the operator's side of the contract with rdxd (engine/docs/topology.md): the topology file a
// TxCluster renders to, the rdxd container (command line, ports 7000/6379/9100, probes, volumes, RDMA wiring) and
// its pod template, and the names and labels the topology and the pods agree on.
package engine

import (
	"fmt"
	"maps"
	"strconv"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
)

// Container contract (engine/docs/topology.md).
const (
	TransportPort    = 7000
	RedisPort        = 6379
	HTTPPort         = 9100
	TopologyKey      = "topology.json"
	ConfigDir        = "/etc/rdx"
	AuthDir          = "/etc/rdx/auth"
	HugepagesDir     = "/dev/hugepages"
	InfinibandDir    = "/dev/infiniband"
	ContainerName    = "rdxd"
	HugepagesRes     = "hugepages-2Mi"
	DefaultInterface = "net1"
)

// Labels and annotations of rdxd pods.
const (
	// LabelShard is the shard of a data pod.
	LabelShard = "rdx.dev/shard"
	// LabelRole is a pod's topology role: RoleData (a shard replica) or RoleRO (a read replica).
	LabelRole = "rdx.dev/role"
	RoleData  = "data"
	RoleRO    = "ro"
	// LabelPodIndex is set by the StatefulSet controller on every pod; ordinal 0 is a shard's first primary.
	LabelPodIndex = "apps.kubernetes.io/pod-index"

	// AnnotationRestartHash on the pod template changes whenever the topology file changes in something other than
	// its epoch and members (see Topology.RestartHash); pods carrying another value are restarted together.
	AnnotationRestartHash = "rdx.dev/restart-hash"
	// AnnotationTopologyEpoch is stamped on each pod (never the template) when the topology epoch moves: updating a
	// pod makes kubelet refresh its mounted ConfigMap at once.
	AnnotationTopologyEpoch = "rdx.dev/topology-epoch"
	// AnnotationMultusNetworks attaches secondary networks through Multus.
	AnnotationMultusNetworks = "k8s.v1.cni.cncf.io/networks"
)

// NodePorts are the transport, Redis and HTTP ports of one shard's pods. In their own network namespaces every pod
// uses the contract's ports. On the host's network (hostDevice + hostNetwork) shard s adds s to each, so the pods
// of different shards fit on one node; replicas of one shard still need distinct nodes (the scheduler keeps them
// apart: their ports conflict).
type NodePorts struct{ Transport, Redis, HTTP int32 }

// PortsOf returns the ports of the pods of one shard.
func PortsOf(c *rdxv1.TxCluster, shard int32) NodePorts {
	p := NodePorts{TransportPort, RedisPort, HTTPPort}
	if OnHostNetwork(c) {
		p.Transport += shard
		p.Redis += shard
		p.HTTP += shard
	}
	return p
}

// OnHostNetwork tells whether the pods run in the host's network namespace.
func OnHostNetwork(c *rdxv1.TxCluster) bool {
	rdma := &c.Spec.Transport.RDMA
	return rdma.Mode == rdxv1.RDMAHostDevice && rdma.HostNetwork
}

// HeadlessName is the headless Service that gives every pod the DNS name the topology lists as its host.
func HeadlessName(c *rdxv1.TxCluster) string { return c.Name + "-hl" }

// TopologyName is the ConfigMap holding the topology file, mounted at ConfigDir.
func TopologyName(c *rdxv1.TxCluster) string { return c.Name + "-topology" }

// StatefulSetName is the StatefulSet of one shard.
func StatefulSetName(c *rdxv1.TxCluster, shard int32) string {
	return fmt.Sprintf("%s-s%d", c.Name, shard)
}

// PodName is the pod of one replica, and its rdxd node name.
func PodName(c *rdxv1.TxCluster, shard, ordinal int32) string {
	return fmt.Sprintf("%s-%d", StatefulSetName(c, shard), ordinal)
}

// PodHost is the stable DNS name of a pod through the headless Service.
func PodHost(c *rdxv1.TxCluster, shard, ordinal int32) string {
	return fmt.Sprintf("%s.%s.%s.svc", PodName(c, shard, ordinal), HeadlessName(c), c.Namespace)
}

// DataSelector selects every data pod of the cluster.
func DataSelector(c *rdxv1.TxCluster) map[string]string {
	return map[string]string{apply.LabelCluster: c.Name, LabelRole: RoleData}
}

// PrimarySelector selects the shards' first primaries (ordinal 0 of every shard; after a failover a backup,
// which forwards writes to the current primary).
func PrimarySelector(c *rdxv1.TxCluster) map[string]string {
	s := DataSelector(c)
	s[LabelPodIndex] = "0"
	return s
}

// ShardSelector selects the data pods of one shard (a StatefulSet's selector).
func ShardSelector(c *rdxv1.TxCluster, shard int32) map[string]string {
	s := DataSelector(c)
	s[LabelShard] = strconv.Itoa(int(shard))
	return s
}

// ShardLabels are the labels of one shard's StatefulSet and pods.
func ShardLabels(c *rdxv1.TxCluster, shard int32) map[string]string {
	l := apply.Labels(c, c.Name)
	l[apply.LabelComponent] = RoleData
	maps.Copy(l, ShardSelector(c, shard))
	return l
}
