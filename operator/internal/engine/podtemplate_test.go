// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package engine

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// On the host's network every shard gets its own ports (pods of different shards share a node); in pod networks
// every pod keeps the contract's ports. The pod template and the topology must agree, or rdxd binds ports the
// probes and Services do not use.
func TestHostNetworkGivesEachShardItsOwnPorts(t *testing.T) {
	for _, host := range []bool{false, true} {
		c := defaulted("ports")
		c.Spec.Transport.Kind = rdxv1.TransportVerbs
		c.Spec.Transport.RDMA = rdxv1.RDMASpec{Mode: rdxv1.RDMAHostDevice, HostNetwork: host}
		topo := BuildTopology(c, 1)
		for shard := int32(0); shard < c.Spec.Shards; shard++ {
			want := map[string]int32{"transport": 7000, "redis": 6379, "http": 9100}
			if host {
				for k := range want {
					want[k] += shard
				}
			}
			for _, n := range topo.Nodes {
				if !strings.HasPrefix(n.Name, StatefulSetName(c, shard)+"-") {
					continue
				}
				if n.Port != want["transport"] || n.RedisPort != want["redis"] || n.HTTPPort != want["http"] {
					t.Errorf("hostNetwork=%v node %s ports %d/%d/%d, want %v", host, n.Name, n.Port, n.RedisPort, n.HTTPPort, want)
				}
			}
			tmpl, err := PodTemplate(c, "img", shard, "h")
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tmpl.Spec.Containers[0].Ports {
				if *p.ContainerPort != want[*p.Name] {
					t.Errorf("hostNetwork=%v shard %d container port %s = %d, want %d", host, shard, *p.Name, *p.ContainerPort, want[*p.Name])
				}
			}
			if got := ptr.Deref(tmpl.Spec.HostNetwork, false); got != host {
				t.Errorf("shard %d hostNetwork = %v, want %v", shard, got, host)
			}
		}
	}
}
