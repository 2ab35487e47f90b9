// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package controller

import (
	"fmt"
	"strconv"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// Labels and annotations the operator sets. Selectors use only the rdx.dev/* labels, which never change for an
// object's lifetime (StatefulSet selectors are immutable).
const (
	LabelCluster   = "rdx.dev/cluster"
	LabelShard     = "rdx.dev/shard"
	LabelRole      = "rdx.dev/role"
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelPodIndex is set by the StatefulSet controller on every pod; ordinal 0 is a shard's primary.
	LabelPodIndex = "apps.kubernetes.io/pod-index"

	// AnnotationRestartHash on the pod template changes whenever the topology file changes (rdxd reads it only at
	// start-up); pods carrying another value are restarted together.
	AnnotationRestartHash = "rdx.dev/restart-hash"
	// AnnotationMultusNetworks attaches secondary networks through Multus.
	AnnotationMultusNetworks = "k8s.v1.cni.cncf.io/networks"

	ManagedBy = "rdx-operator"
	RoleData  = "data"
	RoleRO    = "ro"

	// Container contract (engine/docs/topology.md).
	TransportPort    = 7000
	RedisPort        = 6379
	HTTPPort         = 9100
	TopologyKey      = "topology.json"
	ConfigDir        = "/etc/rdx"
	AuthDir          = "/etc/rdx/auth"
	TLSDir           = "/etc/rdx/tls"
	HugepagesDir     = "/dev/hugepages"
	InfinibandDir    = "/dev/infiniband"
	ContainerName    = "rdxd"
	HugepagesRes     = "hugepages-2Mi"
	DefaultInterface = "net1"
)

// nodePorts are the transport, Redis and HTTP ports of one shard's pods. In their own network namespaces every pod
// uses the contract's ports. On the host's network (hostDevice + hostNetwork) shard s adds s to each, so the pods
// of different shards fit on one node; replicas of one shard still need distinct nodes (the scheduler keeps them
// apart: their ports conflict).
type nodePorts struct{ transport, redis, http int32 }

func portsOf(c *rdxv1.TxCluster, shard int32) nodePorts {
	p := nodePorts{TransportPort, RedisPort, HTTPPort}
	if onHostNetwork(c) {
		p.transport += shard
		p.redis += shard
		p.http += shard
	}
	return p
}

func onHostNetwork(c *rdxv1.TxCluster) bool {
	rdma := &c.Spec.Transport.RDMA
	return rdma.Mode == rdxv1.RDMAHostDevice && rdma.HostNetwork
}

func headlessName(c *rdxv1.TxCluster) string { return c.Name + "-hl" }
func topologyName(c *rdxv1.TxCluster) string { return c.Name + "-topology" }
func endpointName(c *rdxv1.TxCluster) string { return c.Name }
func writersName(c *rdxv1.TxCluster) string  { return c.Name + "-rw" }
func readersName(c *rdxv1.TxCluster) string  { return c.Name + "-ro" }
func pdbName(c *rdxv1.TxCluster) string      { return c.Name }

func statefulSetName(c *rdxv1.TxCluster, shard int32) string {
	return fmt.Sprintf("%s-s%d", c.Name, shard)
}

// podName is also the rdxd node name of the replica.
func podName(c *rdxv1.TxCluster, shard, ordinal int32) string {
	return fmt.Sprintf("%s-%d", statefulSetName(c, shard), ordinal)
}

// podHost is the stable DNS name of a pod through the headless Service.
func podHost(c *rdxv1.TxCluster, shard, ordinal int32) string {
	return fmt.Sprintf("%s.%s.%s.svc", podName(c, shard, ordinal), headlessName(c), c.Namespace)
}

// commonLabels mark every object the operator creates for a cluster.
func commonLabels(c *rdxv1.TxCluster) map[string]string {
	return map[string]string{
		LabelName:      "rdx",
		LabelInstance:  c.Name,
		LabelManagedBy: ManagedBy,
		LabelCluster:   c.Name,
	}
}

// dataSelector selects every data pod of the cluster.
func dataSelector(c *rdxv1.TxCluster) map[string]string {
	return map[string]string{LabelCluster: c.Name, LabelRole: RoleData}
}

// shardSelector selects the data pods of one shard (a StatefulSet's selector).
func shardSelector(c *rdxv1.TxCluster, shard int32) map[string]string {
	s := dataSelector(c)
	s[LabelShard] = strconv.Itoa(int(shard))
	return s
}

func shardLabels(c *rdxv1.TxCluster, shard int32) map[string]string {
	l := commonLabels(c)
	l[LabelComponent] = RoleData
	for k, v := range shardSelector(c, shard) {
		l[k] = v
	}
	return l
}

func mergeMaps(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
