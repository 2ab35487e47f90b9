// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

// defaulted returns a TxCluster as the API server stores it after defaulting.
func defaulted(name string) *rdxv1.TxCluster {
	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	c.Spec = rdxv1.TxClusterSpec{
		Shards: 2, Replicas: 3, Workers: 2, ImagePullPolicy: corev1.PullIfNotPresent,
		Transport: rdxv1.TransportSpec{
			Kind: rdxv1.TransportTCP, Primitives: rdxv1.PrimitivesRPC,
			RDMA:     rdxv1.RDMASpec{Mode: rdxv1.RDMANone},
			Batching: rdxv1.BatchingSpec{Enabled: ptr.To(true), MaxBytes: 4096, MaxMessages: 64},
		},
		Transactions: rdxv1.TransactionsSpec{Protocol: rdxv1.ProtocolDNL4, LocalBackupReads: ptr.To(true), HashTableBatching: ptr.To(true)},
		Replication: rdxv1.ReplicationSpec{Protocol: rdxv1.ReplicationPrimaryBackup,
			FailureDetection: rdxv1.FailureDetectionSpec{HeartbeatMilliseconds: 50, TimeoutMilliseconds: 500}},
		Endpoint: rdxv1.EndpointSpec{ServiceType: corev1.ServiceTypeClusterIP, Port: 6379},
	}
	return c
}

// engineExample is the JSON example of engine/docs/topology.md, the contract with rdxd.
func engineExample(t *testing.T) map[string]any {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "engine", "docs", "topology.md"))
	if err != nil {
		t.Fatalf("the topology contract must be readable: %v", err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no ```json block in engine/docs/topology.md")
	}
	var example map[string]any
	if err := json.Unmarshal(m[1], &example); err != nil {
		t.Fatalf("engine/docs/topology.md example: %v", err)
	}
	return example
}

// keyPaths lists every key path of a JSON value; arrays contribute their first element's paths.
func keyPaths(prefix string, v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			out[prefix+"."+k] = true
			keyPaths(prefix+"."+k, child, out)
		}
	case []any:
		if len(v) > 0 {
			keyPaths(prefix+"[]", v[0], out)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestTopologyMatchesEngineContract: the rendered file has exactly the keys of the engine's documented example
// (rdxd rejects unknown keys), and the values the container contract fixes.
func TestTopologyMatchesEngineContract(t *testing.T) {
	c := defaulted("demo")
	c.Namespace = "default"
	c.Spec.Endpoint.AuthSecretRef = &rdxv1.SecretKeyReference{Name: "pw", Key: "password"}
	data, err := BuildTopology(c, 1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var rendered map[string]any
	if err := json.Unmarshal([]byte(data), &rendered); err != nil {
		t.Fatal(err)
	}
	want, got := map[string]bool{}, map[string]bool{}
	keyPaths("", engineExample(t), want)
	keyPaths("", rendered, got)
	if w, g := strings.Join(sortedKeys(want), " "), strings.Join(sortedKeys(got), " "); w != g {
		t.Fatalf("topology keys differ from engine/docs/topology.md\n doc: %s\n ours: %s", w, g)
	}

	topo := BuildTopology(c, 1)
	if topo.Cluster != "demo" || len(topo.Shards) != 2 || len(topo.Nodes) != 6 {
		t.Fatalf("want cluster demo with 2 shards and 6 nodes, got %+v", topo)
	}
	if m := topo.Shards[1].Members; strings.Join(m, ",") != "demo-s1-0,demo-s1-1,demo-s1-2" {
		t.Errorf("shard 1 members = %v", m)
	}
	// Ordinal-major: scaling replicas appends nodes at the end or removes them from it (ids keep their meaning).
	var names []string
	for _, x := range topo.Nodes {
		names = append(names, x.Name)
	}
	if got := strings.Join(names, ","); got != "demo-s0-0,demo-s1-0,demo-s0-1,demo-s1-1,demo-s0-2,demo-s1-2" {
		t.Errorf("node order = %s", got)
	}
	n := topo.Nodes[1]
	if n.Name != "demo-s1-0" || n.Host != "demo-s1-0.demo-hl.default.svc" || n.Port != 7000 || n.RedisPort != 6379 ||
		n.HTTPPort != 9100 || n.Role != "data" {
		t.Errorf("node 1 = %+v", n)
	}
	if topo.Replication.Protocol != "primary-backup" || topo.Txn.Protocol != "dnl4" || topo.Auth.PasswordFile != "/etc/rdx/auth/password" {
		t.Errorf("protocols/auth = %+v %+v %+v", topo.Replication, topo.Txn, topo.Auth)
	}
	if f := topo.Failure; !f.Enabled || f.HeartbeatMs != 50 || f.TimeoutMs != 500 {
		t.Errorf("failure detection = %+v, want enabled, 50 ms heartbeats, 500 ms timeout (the CRD's defaults)", f)
	}
	if topo.Transport.GIDIndex != -1 || topo.Transport.RDMAInterface != "" || topo.Transport.Primitives != "rpc" {
		t.Errorf("tcp transport = %+v", topo.Transport)
	}
	// The only values rdxd implements, as the file carries them.
	for _, want := range []string{`"primitives": "rpc"`, `"replication": {
    "protocol": "primary-backup"
  }`} {
		if !strings.Contains(data, want) {
			t.Errorf("topology file lacks %s:\n%s", want, data)
		}
	}
}

func TestRDMAInterfaceDefaults(t *testing.T) {
	for _, tc := range []struct {
		rdma rdxv1.RDMASpec
		want string
	}{
		{rdxv1.RDMASpec{Mode: rdxv1.RDMASRIOV, Networks: []string{"sriov"}}, "net1"},
		{rdxv1.RDMASpec{Mode: rdxv1.RDMASRIOV, Networks: []string{"sriov"}, Interface: "ib0"}, "ib0"},
		{rdxv1.RDMASpec{Mode: rdxv1.RDMASharedDevice}, ""},
		{rdxv1.RDMASpec{Mode: rdxv1.RDMAHostDevice, Interface: "eth0"}, "eth0"},
	} {
		if got := rdmaInterface(&tc.rdma); got != tc.want {
			t.Errorf("rdmaInterface(%+v) = %q, want %q", tc.rdma, got, tc.want)
		}
	}
}

func always(Topology, Topology) bool { return true }

// TestEpochDecisions: what bumps the epoch, and what changes the restart hash.
func TestEpochDecisions(t *testing.T) {
	base := defaulted("db")
	first, firstData, err := NextTopology(base, nil, "", 0, 0, always)
	if err != nil || first.Epoch != 1 {
		t.Fatalf("new cluster: epoch %d, err %v; want 1", first.Epoch, err)
	}

	same, _, _ := NextTopology(base, &first, firstData, 1, 0, always)
	if same.Epoch != 1 {
		t.Errorf("unchanged spec bumped the epoch to %d", same.Epoch)
	}

	// spec.replicas 3 -> 5: one node per epoch, only once the cluster can take it, and never a restart.
	scaled := base.DeepCopy()
	scaled.Spec.Replicas = 5
	held, _, _ := NextTopology(scaled, &first, firstData, 1, 0, func(Topology, Topology) bool { return false })
	if held.Epoch != 1 {
		t.Errorf("replicas change before the cluster can take it: epoch %d, want 1", held.Epoch)
	}
	cur, curData := first, firstData
	for want := len(first.Nodes) + 1; want <= 5*int(base.Spec.Shards); want++ {
		next, data, _ := NextTopology(scaled, &cur, curData, cur.Epoch, 0, always)
		if next.Epoch != cur.Epoch+1 || len(next.Nodes) != want || next.RestartHash() != first.RestartHash() {
			t.Fatalf("scale-out step to %d nodes: epoch %d (want %d), %d nodes, restart hash changed %v", want, next.Epoch,
				cur.Epoch+1, len(next.Nodes), next.RestartHash() != first.RestartHash())
		}
		cur, curData = next, data
	}
	if done, _, _ := NextTopology(scaled, &cur, curData, cur.Epoch, 0, always); done.Epoch != cur.Epoch {
		t.Errorf("scaled cluster: epoch moved to %d", done.Epoch)
	}
	down, _, _ := NextTopology(base, &cur, curData, cur.Epoch, 0, always)
	if len(down.Nodes) != len(cur.Nodes)-1 || down.Nodes[len(down.Nodes)-1].Name != cur.Nodes[len(cur.Nodes)-2].Name {
		t.Errorf("scale-in step: %d nodes, want %d, the last one removed", len(down.Nodes), len(cur.Nodes)-1)
	}

	for name, mutate := range map[string]func(*rdxv1.TxClusterSpec){
		"txn protocol": func(s *rdxv1.TxClusterSpec) { s.Transactions.Protocol = rdxv1.ProtocolDNL1 },
		"ht batching":  func(s *rdxv1.TxClusterSpec) { s.Transactions.HashTableBatching = ptr.To(false) },
		"hugepages on": func(s *rdxv1.TxClusterSpec) { s.Transport.Hugepages.Enabled = true },
		"workers":      func(s *rdxv1.TxClusterSpec) { s.Workers = 4 },
		"batching":     func(s *rdxv1.TxClusterSpec) { s.Transport.Batching.MaxMessages = 8 },
		"auth": func(s *rdxv1.TxClusterSpec) {
			s.Endpoint.AuthSecretRef = &rdxv1.SecretKeyReference{Name: "a", Key: "k"}
		},
		"local reads off": func(s *rdxv1.TxClusterSpec) { s.Transactions.LocalBackupReads = ptr.To(false) },
	} {
		changed := base.DeepCopy()
		mutate(&changed.Spec)
		got, _, _ := NextTopology(changed, &first, firstData, 1, 0, always)
		if got.Epoch != 2 || got.RestartHash() == first.RestartHash() {
			t.Errorf("%s: epoch %d (want 2), restart hash unchanged %v (want false)", name, got.Epoch, got.RestartHash() == first.RestartHash())
		}
	}

	for name, mutate := range map[string]func(*rdxv1.TxClusterSpec){
		"image":        func(s *rdxv1.TxClusterSpec) { s.Image = "other:1" },
		"service type": func(s *rdxv1.TxClusterSpec) { s.Endpoint.ServiceType = corev1.ServiceTypeNodePort },
		"port":         func(s *rdxv1.TxClusterSpec) { s.Endpoint.Port = 7777 },
	} {
		changed := base.DeepCopy()
		mutate(&changed.Spec)
		if got, _, _ := NextTopology(changed, &first, firstData, 1, 0, always); got.Epoch != 1 {
			t.Errorf("%s changed the topology epoch to %d", name, got.Epoch)
		}
	}

	// Lost while stepping (7 nodes of a 10-node target): the status's member count, not the target, at a new epoch;
	// the next step comes from there.
	lost, _, _ := NextTopology(scaled, nil, "", cur.Epoch, 7, always)
	if lost.Epoch != cur.Epoch+1 || len(lost.Nodes) != 7 {
		t.Errorf("ConfigMap lost at 7 nodes: epoch %d (want %d), %d nodes (want 7)", lost.Epoch, cur.Epoch+1, len(lost.Nodes))
	}

	// An older operator's hash of the current file is recognised (pods are adopted, not restarted, on upgrade).
	if first.LegacyRestartHash() == first.RestartHash() || len(first.LegacyRestartHash()) != 16 {
		t.Errorf("legacy restart hash %q vs %q", first.LegacyRestartHash(), first.RestartHash())
	}

	// A lost ConfigMap is written again at a new epoch; with the same settings the running pods take it live.
	if got, _, _ := NextTopology(base, nil, "", 7, 0, always); got.Epoch != 8 || got.RestartHash() != first.RestartHash() {
		t.Errorf("ConfigMap lost at status epoch 7: new epoch %d (want 8), restart hash changed %v (want false)",
			got.Epoch, got.RestartHash() != first.RestartHash())
	}
	if got, _, _ := NextTopology(base, &first, firstData+" ", 7, 0, always); got.Epoch != 8 {
		t.Errorf("edited ConfigMap at epoch 1 with status epoch 7: new epoch %d, want 8", got.Epoch)
	}
}

// spec.storeMemory reaches the topology as memory_mb, and a container without a memory request or limit requests
// what rdxd needs: the store (unless it is on huge pages) plus its process memory. A user's request or limit stays.
func TestStoreMemory(t *testing.T) {
	for _, tc := range []struct {
		store, request, limit string
		huge                  bool
		wantMB                int32
		wantRequest           string // "" : no memory request
	}{
		{store: "", wantMB: 256, wantRequest: "320Mi"},
		{store: "4Gi", wantMB: 4096, wantRequest: "4160Mi"},
		{store: "4Gi", huge: true, wantMB: 4096, wantRequest: "64Mi"},
		{store: "1Gi", request: "2Gi", wantMB: 1024, wantRequest: "2Gi"},
		{store: "1Gi", limit: "3Gi", wantMB: 1024, wantRequest: ""},
	} {
		c := defaulted("m")
		if tc.store != "" {
			c.Spec.StoreMemory = ptr.To(resource.MustParse(tc.store))
		}
		if tc.request != "" {
			c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tc.request)}
		}
		if tc.limit != "" {
			c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tc.limit)}
		}
		if tc.huge {
			c.Spec.Transport.Hugepages = rdxv1.HugepagesSpec{Enabled: true, Size: ptr.To(resource.MustParse("8Gi"))}
		}
		if got := BuildTopology(c, 1).MemoryMB; got != tc.wantMB {
			t.Errorf("%+v: memory_mb %d, want %d", tc, got, tc.wantMB)
		}
		tmpl, err := PodTemplate(c, "img", 0, "h")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if r := tmpl.Spec.Containers[0].Resources; r != nil && r.Requests != nil {
			if q, ok := (*r.Requests)[corev1.ResourceMemory]; ok {
				got = q.String()
			}
		}
		if got != tc.wantRequest {
			t.Errorf("%+v: memory request %q, want %q", tc, got, tc.wantRequest)
		}
	}
}

func TestMemoryShortfall(t *testing.T) {
	for _, tc := range []struct {
		store, limit string
		huge, short  bool
	}{
		{"", "", false, false}, {"", "320Mi", false, false}, {"", "319Mi", false, true}, {"", "256Mi", false, true},
		{"4Gi", "4160Mi", false, false}, {"4Gi", "4Gi", false, true}, {"4Gi", "64Mi", true, false},
	} {
		c := defaulted("m")
		if tc.store != "" {
			c.Spec.StoreMemory = ptr.To(resource.MustParse(tc.store))
		}
		if tc.limit != "" {
			c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tc.limit)}
		}
		c.Spec.Transport.Hugepages.Enabled = tc.huge
		if got := MemoryShortfall(c) != ""; got != tc.short {
			t.Errorf("%+v: shortfall reported %v (%s)", tc, got, MemoryShortfall(c))
		}
	}
}

func TestParseTopologyRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"", "{", `{"epoch": 0}`, `[]`} {
		if _, err := ParseTopology(bad); err == nil {
			t.Errorf("ParseTopology(%q) accepted", bad)
		}
	}
}
