// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// object builds an rdx.dev/v1alpha1 object from the YAML of its spec.
func object(t *testing.T, kind, name, specYAML string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("rdx.dev/v1alpha1")
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// expectInvalid asserts the API server rejected a write as invalid with a message containing want.
func expectInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want rejection containing %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error containing %q, got %v", want, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("rejection does not contain %q:\n%v", want, err)
	}
}

// createCases: every CEL rule on create, and a few schema rules, each with the message users will see.
var createCases = []struct {
	name, kind, objName, spec, want string
}{
	{"txc name too long", "TxCluster", strings.Repeat("a", 41), ``,
		"metadata.name must be a DNS-1035 label of at most 40 characters"},
	{"txc name starts with digit", "TxCluster", "1db", ``,
		"metadata.name must be a DNS-1035 label"},
	{"failure timeout under 4 heartbeats", "TxCluster", "db",
		`{replication: {failureDetection: {heartbeatMilliseconds: 200, timeoutMilliseconds: 500}}}`,
		"failureDetection.timeoutMilliseconds must be at least 4 heartbeats"},
	{"failure timeout too short", "TxCluster", "db", `{replication: {failureDetection: {timeoutMilliseconds: 5}}}`,
		"timeoutMilliseconds: Invalid value: 5: spec.replication.failureDetection.timeoutMilliseconds in body should be greater than or equal to 20"},
	{"hugepages without cpu or memory", "TxCluster", "db",
		`{transport: {hugepages: {enabled: true, size: 1Gi}}}`,
		"transport.hugepages needs a cpu or memory request or limit in resources"},
	{"hugepages in resources", "TxCluster", "db",
		`{resources: {limits: {hugepages-2Mi: 1Gi, memory: 2Gi}}}`,
		"set huge pages with transport.hugepages, not in resources"},
	{"hugepages without size", "TxCluster", "db",
		`{transport: {hugepages: {enabled: true}}, resources: {requests: {memory: 1Gi}}}`,
		"transport.hugepages.size is required when hugepages are enabled"},
	{"hugepages size without hugepages", "TxCluster", "db",
		`{transport: {hugepages: {size: 1Gi}}, resources: {requests: {memory: 1Gi}}}`,
		"transport.hugepages.size applies only when hugepages are enabled"},
	{"rdma interface on tcp", "TxCluster", "db", `{transport: {rdma: {interface: eth1}}}`,
		"transport.rdma.interface, device and gidIndex apply only to transport.kind verbs"},
	{"rdma device on tcp", "TxCluster", "db", `{transport: {kind: tcp, rdma: {device: mlx5_0}}}`,
		"transport.rdma.interface, device and gidIndex apply only to transport.kind verbs"},
	{"rdma gidIndex on tcp", "TxCluster", "db", `{transport: {rdma: {mode: none, gidIndex: 3}}}`,
		"transport.rdma.interface, device and gidIndex apply only to transport.kind verbs"},
	{"storeMemory not whole MiB", "TxCluster", "db", `{storeMemory: 1500Ki}`,
		"storeMemory must be a multiple of 1Mi from 16Mi to 1Ti"},
	{"storeMemory too small", "TxCluster", "db", `{storeMemory: 8Mi}`,
		"storeMemory must be a multiple of 1Mi from 16Mi to 1Ti"},
	{"storeMemory too large", "TxCluster", "db", `{storeMemory: 2Ti}`,
		"storeMemory must be a multiple of 1Mi from 16Mi to 1Ti"},
	{"huge pages below the store", "TxCluster", "db",
		`{storeMemory: 1Gi, transport: {hugepages: {enabled: true, size: 512Mi}}, resources: {requests: {memory: 1Gi}}}`,
		"transport.hugepages.size 512Mi is below storeMemory 1Gi"},
	{"hugepages size not a multiple of 2Mi", "TxCluster", "db",
		`{transport: {hugepages: {enabled: true, size: 3Mi}}, resources: {requests: {memory: 1Gi}}}`,
		"transport.hugepages.size must be a positive multiple of 2Mi"},
	{"verbs without rdma", "TxCluster", "db", `{transport: {kind: verbs}}`,
		"transport.kind verbs needs RDMA devices in the pods"},
	{"tcp with rdma", "TxCluster", "db",
		`{transport: {kind: tcp, rdma: {mode: sharedDevice, resourceName: rdma/hca}}}`,
		"transport.rdma.mode applies only to transport.kind verbs"},
	{"sharedDevice without resourceName", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: sharedDevice}}}`,
		"transport.rdma.resourceName is required with rdma.mode sharedDevice"},
	{"sriov without resourceName", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: sriov, networks: [sriov-rdma]}}}`,
		"transport.rdma.resourceName is required with rdma.mode sriov"},
	{"hostDevice with resourceName", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: hostDevice, resourceName: rdma/hca}}}`,
		"transport.rdma.resourceName and resourceCount apply only to rdma.mode sharedDevice or sriov"},
	{"sriov without networks", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: sriov, resourceName: nvidia.com/sriov_rdma}}}`,
		"transport.rdma.networks is required with rdma.mode sriov"},
	{"hostDevice with networks", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: hostDevice, networks: [macvlan]}}}`,
		"transport.rdma.networks applies only to rdma.mode sharedDevice or sriov"},
	{"hostNetwork outside hostDevice", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: sharedDevice, resourceName: rdma/hca, hostNetwork: true}}}`,
		"transport.rdma.hostNetwork and privileged apply only to rdma.mode hostDevice"},
	{"privileged outside hostDevice", "TxCluster", "db",
		`{transport: {kind: verbs, rdma: {mode: sriov, resourceName: a.b/c, networks: [sriov-net], privileged: false}}}`,
		"transport.rdma.hostNetwork and privileged apply only to rdma.mode hostDevice"},
	{"unknown transaction protocol", "TxCluster", "db", `{transactions: {protocol: 2pl}}`,
		`spec.transactions.protocol: Unsupported value: "2pl": supported values: "dnl4", "dnl2", "dnl1", "nowait", "waitdie", "occ", "mvcc", "sundial"`},
	{"one-sided primitives with a protocol that runs over RPC only", "TxCluster", "db", `{transport: {primitives: onesided}}`,
		"transport.primitives onesided is honoured by transactions.protocol occ, mvcc or sundial only: dnl4 runs every phase over RPC"},
	{"unknown primitives", "TxCluster", "db", `{transactions: {protocol: occ}, transport: {primitives: rdma}}`,
		`spec.transport.primitives: Unsupported value: "rdma": supported values: "rpc", "onesided", "hybrid"`},
	{"unknown transport kind", "TxCluster", "db", `{transport: {kind: udp}}`,
		`spec.transport.kind: Unsupported value: "udp": supported values: "tcp", "verbs"`},
	{"tls secret", "TxCluster", "db", `{endpoint: {tlsSecretRef: {name: db-tls}}}`,
		"endpoint.tlsSecretRef: rdxd does not serve TLS yet"},
	{"too many replicas", "TxCluster", "db", `{replicas: 8}`,
		"spec.replicas: Invalid value: 8"},
}

func TestCreateRejections(t *testing.T) {
	ns := env.Namespace(t)
	for _, tc := range createCases {
		t.Run(tc.name, func(t *testing.T) {
			o := object(t, tc.kind, tc.objName, tc.spec)
			o.SetNamespace(ns)
			expectInvalid(t, env.Client.Create(context.Background(), o), tc.want)
		})
	}
}

// updateCases: immutability rules. base is created, then changed by update (merged into spec).
var updateCases = []struct {
	name, kind, base, update, want string
}{
	{"txc shards immutable", "TxCluster", `{shards: 2}`, `{shards: 3}`,
		"shards is immutable: changing it would remap every key"},
	{"txc defaulted shards immutable", "TxCluster", `{}`, `{shards: 4}`,
		"shards is immutable"},
	{"txc tls secret added", "TxCluster", `{}`, `{endpoint: {tlsSecretRef: {name: db-tls}}}`,
		"endpoint.tlsSecretRef: rdxd does not serve TLS yet"},
}

func TestUpdateRejections(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	for i, tc := range updateCases {
		t.Run(tc.name, func(t *testing.T) {
			o := object(t, tc.kind, fmt.Sprintf("u%d", i), tc.base)
			o.SetNamespace(ns)
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatalf("create base: %v", err)
			}
			changes := object(t, tc.kind, "", tc.update).Object["spec"].(map[string]any)
			spec := o.Object["spec"].(map[string]any)
			for k, v := range changes {
				spec[k] = v
			}
			expectInvalid(t, env.Client.Update(ctx, o), tc.want)
		})
	}
}

// TestValidObjects: each RDMA mode and each implemented protocol are accepted, and the server fills in the
// defaults the controller relies on.
func TestValidObjects(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	valid := map[string]struct{ kind, spec string }{
		"tcp":    {"TxCluster", `{}`},
		"shared": {"TxCluster", `{transport: {kind: verbs, rdma: {mode: sharedDevice, resourceName: rdma/rdma_shared_device_a, networks: [rdma-macvlan]}}}`},
		"sriov":  {"TxCluster", `{transport: {kind: verbs, rdma: {mode: sriov, resourceName: nvidia.com/sriov_rdma, resourceCount: 1, networks: [sriov-ns/sriov-rdma@net1]}}}`},
		"host":   {"TxCluster", `{transport: {kind: verbs, rdma: {mode: hostDevice, hostNetwork: true, privileged: false}}}`},
		"addr":   {"TxCluster", `{transport: {kind: verbs, rdma: {mode: hostDevice, interface: eth1, device: rxe0, gidIndex: 1}}}`},
		"huge":   {"TxCluster", `{transport: {hugepages: {enabled: true, size: 512Mi}}, resources: {limits: {memory: 2Gi}}}`},
		"dnl2":   {"TxCluster", `{replicas: 2, transactions: {protocol: dnl2}, replication: {protocol: primary-backup}, transport: {primitives: rpc}}`},
		"dnl1":   {"TxCluster", `{replicas: 1, transactions: {protocol: dnl1}}`},
		"fd":     {"TxCluster", `{replication: {failureDetection: {heartbeatMilliseconds: 100, timeoutMilliseconds: 2000}}}`},
		"store":  {"TxCluster", `{storeMemory: 4Gi, resources: {limits: {memory: 4160Mi}}}`},
		"hstore": {"TxCluster", `{storeMemory: 1Gi, transport: {hugepages: {enabled: true, size: 1Gi}}, resources: {limits: {memory: 64Mi}}}`},
	}
	for name, v := range valid {
		o := object(t, v.kind, name, v.spec)
		o.SetNamespace(ns)
		if err := env.Client.Create(ctx, o); err != nil {
			t.Errorf("%s: rejected: %v", name, err)
		}
	}

	tcp := &unstructured.Unstructured{}
	tcp.SetAPIVersion("rdx.dev/v1alpha1")
	tcp.SetKind("TxCluster")
	if err := env.Client.Get(ctx, keyOf(ns, "tcp"), tcp); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]any{
		"spec.shards": int64(1), "spec.replicas": int64(3), "spec.workers": int64(2),
		"spec.imagePullPolicy": "IfNotPresent", "spec.transport.kind": "tcp", "spec.transport.primitives": "rpc",
		"spec.transport.rdma.mode": "none", "spec.transport.hugepages.enabled": false,
		"spec.transport.batching.enabled": true, "spec.transport.batching.maxBytes": int64(4096),
		"spec.transport.batching.maxMessages": int64(64), "spec.transactions.protocol": "dnl4",
		"spec.transactions.localBackupReads": true, "spec.transactions.hashTableBatching": true,
		"spec.endpoint.serviceType": "ClusterIP", "spec.endpoint.port": int64(6379), "spec.storeMemory": "256Mi",
		"spec.replication.protocol":                               "primary-backup",
		"spec.replication.failureDetection.heartbeatMilliseconds": int64(50),
		"spec.replication.failureDetection.timeoutMilliseconds":   int64(500),
	}
	for path, want := range defaults {
		got, found, err := unstructured.NestedFieldNoCopy(tcp.Object, strings.Split(path, ".")...)
		if err != nil || !found || got != want {
			t.Errorf("default %s = %v (found %v, err %v), want %v", path, got, found, err, want)
		}
	}
}

// TestReplicaSetRefused: no controller acts on ReplicaSets, so the API server refuses to create them with a
// message that says so, whatever their spec (a valid one included).
func TestReplicaSetRefused(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	const rorsMsg = "ReplicaSet objects are not acted upon by this rdx version yet (no ReplicaSet controller): it runs no read replicas; see operator/README.md"
	for name, spec := range map[string]string{
		"ro":           `{clusterRef: {name: db}}`,
		"ro-autoscale": `{clusterRef: {name: db}, replicas: 2, consistency: stale, autoscaling: {minReplicas: 1, maxReplicas: 8, metric: readsPerSecond, target: 50000}}`,
	} {
		t.Run(name, func(t *testing.T) {
			o := object(t, "ReplicaSet", name, spec)
			o.SetNamespace(ns)
			expectInvalid(t, env.Client.Create(ctx, o), rorsMsg)
		})
	}
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("rdx.dev/v1alpha1")
	l.SetKind("ReplicaSetList")
	if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil || len(l.Items) != 0 {
		t.Errorf("ReplicaSetList: %d items, err %v; want none", len(l.Items), err)
	}
}
