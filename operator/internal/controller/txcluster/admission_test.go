// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/engine"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

// refusal is a TxCluster spec the API server must refuse, with the message it must give.
type refusal struct {
	name   string
	mutate func(*rdxv1.TxCluster)
	want   string
}

// unimplemented lists every value the API once named and rdxd does not implement, and a TLS secret rdxd would not
// serve.
func unimplemented() []refusal {
	var cases []refusal
	for _, p := range []string{"calvin"} {
		cases = append(cases, refusal{"txn-" + p,
			func(c *rdxv1.TxCluster) { c.Spec.Transactions.Protocol = rdxv1.TransactionProtocol(p) },
			fmt.Sprintf(`spec.transactions.protocol: Unsupported value: %q: supported values: "dnl4", "dnl2", "dnl1", "nowait", "waitdie", "occ", "mvcc", "sundial", "none"`, p)})
	}
	for _, p := range []string{"multipaxos", "derecho", "allaboard", "cht", "chtmultileader"} {
		cases = append(cases, refusal{"repl-" + p,
			func(c *rdxv1.TxCluster) { c.Spec.Replication.Protocol = rdxv1.ReplicationProtocol(p) },
			fmt.Sprintf(`spec.replication.protocol: Unsupported value: %q: supported values: "primary-backup", "abd", "paxos", "hermes", "craq", "zab"`, p)})
	}
	// Families and keys: abd, paxos, hermes, craq and zab carry no transactions, so a TxCluster with one must run none.
	for _, p := range []rdxv1.ReplicationProtocol{rdxv1.ReplicationABD, rdxv1.ReplicationPaxos, rdxv1.ReplicationHermes,
		rdxv1.ReplicationCRAQ, rdxv1.ReplicationZAB} {
		cases = append(cases, refusal{string(p) + "-with-transactions",
			func(c *rdxv1.TxCluster) { c.Spec.Replication.Protocol = p },
			fmt.Sprintf("replication.protocol %s replicates single keys only: it cannot carry transactions (set "+
				"transactions.protocol to none)", p)})
	}
	// One-sided primitives are honoured by occ, mvcc and sundial only: with the default dnl4 they are refused.
	for _, p := range []string{"onesided", "hybrid"} {
		cases = append(cases, refusal{"prim-" + p,
			func(c *rdxv1.TxCluster) { c.Spec.Transport.Primitives = rdxv1.Primitives(p) },
			fmt.Sprintf("transport.primitives %s is honoured by transactions.protocol occ, mvcc or sundial only: dnl4 "+
				"runs every phase over RPC (set primitives to rpc)", p)})
	}
	cases = append(cases, refusal{"prim-unknown",
		func(c *rdxv1.TxCluster) {
			c.Spec.Transactions.Protocol = rdxv1.ProtocolOCC
			c.Spec.Transport.Primitives = "rdma"
		},
		`spec.transport.primitives: Unsupported value: "rdma": supported values: "rpc", "onesided", "hybrid"`})
	// hybrid's per-phase choice: only phases a protocol runs one-sided (occ's read), and only with hybrid.
	cases = append(cases, refusal{"phase-over-rpc-only",
		func(c *rdxv1.TxCluster) {
			c.Spec.Transactions.Protocol = rdxv1.ProtocolOCC
			c.Spec.Transport.Primitives = rdxv1.PrimitivesHybrid
			c.Spec.Transport.OneSidedPhases = []rdxv1.OneSidedPhase{"read", "lock"}
		},
		`spec.transport.onesidedPhases[1]: Unsupported value: "lock": supported values: "read"`})
	cases = append(cases, refusal{"phases-without-hybrid",
		func(c *rdxv1.TxCluster) {
			c.Spec.Transactions.Protocol = rdxv1.ProtocolOCC
			c.Spec.Transport.Primitives = rdxv1.PrimitivesOneSided
			c.Spec.Transport.OneSidedPhases = []rdxv1.OneSidedPhase{"read"}
		},
		"transport.onesidedPhases chooses the phases of primitives hybrid, and primitives is onesided"})
	return append(cases, refusal{"tls",
		func(c *rdxv1.TxCluster) { c.Spec.Endpoint.TLSSecretRef = &rdxv1.LocalObjectReference{Name: "tls"} },
		"spec.endpoint.tlsSecretRef: Invalid value: endpoint.tlsSecretRef: rdxd does not serve TLS yet; " +
			"the endpoint speaks plain RESP"})
}

// TestUnimplementedValuesRefused: with the operator running, a TxCluster naming a value rdxd does not implement
// is refused at admission with a message naming what exists, and nothing is created for it (before, such a value
// was admitted and its pods crash-looped).
func TestUnimplementedValuesRefused(t *testing.T) {
	ns := env.Namespace(t)
	for _, tc := range unimplemented() {
		c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns}}
		tc.mutate(c)
		err := env.Client.Create(context.Background(), c)
		switch {
		case err == nil:
			t.Errorf("%s: admitted; want a refusal containing %q", tc.name, tc.want)
		case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: refusal %v\nwant an Invalid error containing %q", tc.name, err, tc.want)
		}
	}
	waitIdle(t)
	testenv.Consistently(t, 2*time.Second, func() error {
		var (
			sets appsv1.StatefulSetList
			pods corev1.PodList
			cms  corev1.ConfigMapList
		)
		for _, l := range []client.ObjectList{&sets, &pods, &cms} {
			if err := env.Client.List(context.Background(), l, client.InNamespace(ns)); err != nil {
				return err
			}
		}
		var made []string
		for _, s := range sets.Items {
			made = append(made, "StatefulSet "+s.Name)
		}
		for _, p := range pods.Items {
			made = append(made, "Pod "+p.Name)
		}
		for _, cm := range cms.Items {
			if cm.Name != "kube-root-ca.crt" { // published into every namespace by kube-controller-manager, if any
				made = append(made, "ConfigMap "+cm.Name)
			}
		}
		if len(made) > 0 {
			return fmt.Errorf("objects created for refused TxClusters: %v", made)
		}
		return nil
	})
}

// TestCombinationsAdmitted: abd with transactions.protocol none, and occ, mvcc and sundial with primitives onesided,
// are admitted, and their topologies name what was asked for.
func TestCombinationsAdmitted(t *testing.T) {
	type admitted struct {
		name   string
		mutate func(*rdxv1.TxCluster)
		want   renderedTopology
	}
	cases := []admitted{
		{"abd", func(c *rdxv1.TxCluster) {
			c.Spec.Replication.Protocol = rdxv1.ReplicationABD
			c.Spec.Transactions.Protocol = rdxv1.ProtocolNone
		}, topologyNaming("abd", "none", "rpc")},
		{"occ-hybrid-read", func(c *rdxv1.TxCluster) {
			c.Spec.Transactions.Protocol = rdxv1.ProtocolOCC
			c.Spec.Transport.Primitives = rdxv1.PrimitivesHybrid
			c.Spec.Transport.OneSidedPhases = []rdxv1.OneSidedPhase{"read"}
		}, topologyNaming("primary-backup", "occ", "hybrid", "read")},
	}
	for _, p := range []rdxv1.TransactionProtocol{rdxv1.ProtocolOCC, rdxv1.ProtocolMVCC, rdxv1.ProtocolSundial} {
		cases = append(cases, admitted{string(p), func(c *rdxv1.TxCluster) {
			c.Spec.Transactions.Protocol = p
			c.Spec.Transport.Primitives = rdxv1.PrimitivesOneSided
		}, topologyNaming("primary-backup", string(p), "onesided")})
	}
	ns := env.Namespace(t)
	for _, tc := range cases {
		c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns}}
		tc.mutate(c)
		expectAdmitted(t, c, func(topo renderedTopology) error {
			if !reflect.DeepEqual(topo, tc.want) {
				return fmt.Errorf("topology names %+v, want %+v", topo, tc.want)
			}
			return nil
		})
	}
}

func topologyNaming(replication, txn, primitives string, phases ...string) renderedTopology {
	var r renderedTopology
	r.Replication.Protocol, r.Txn.Protocol, r.Transport.Primitives = replication, txn, primitives
	r.Transport.OneSidedPhases = phases
	return r
}

// renderedTopology is the part of the topology ConfigMap the admission tests look at.
type renderedTopology struct {
	Replication struct{ Protocol string } `json:"replication"`
	Txn         struct{ Protocol string } `json:"txn"`
	Transport   struct {
		Primitives     string
		OneSidedPhases []string `json:"onesided_phases"`
	} `json:"transport"`
}

// expectAdmitted creates c, which must be admitted, and waits until its topology ConfigMap passes check.
func expectAdmitted(t *testing.T, c *rdxv1.TxCluster, check func(renderedTopology) error) {
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatalf("%s refused: %v", c.Name, err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		var cm corev1.ConfigMap
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: engine.TopologyName(c)}, &cm); err != nil {
			return err
		}
		var topo renderedTopology
		if err := json.Unmarshal([]byte(cm.Data[engine.TopologyKey]), &topo); err != nil {
			return err
		}
		return check(topo)
	})
}
