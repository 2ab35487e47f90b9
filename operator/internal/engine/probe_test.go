// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package engine

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// rdxdMetrics is an excerpt of what rdxd's /metrics printed (engine/src/server/node.cc) for a deposed primary: it
// still says it is the primary, of view 0, but holds no leases.
const rdxdMetrics = `# HELP rdx_ready 1 when the node serves (in sync and connected to every primary).
# TYPE rdx_ready gauge
rdx_ready{cluster="local",node="n0"} 0
# HELP rdx_shard_view The view of this node's shard (one more per failover).
# TYPE rdx_shard_view gauge
rdx_shard_view{cluster="local",node="n0"} 0
# HELP rdx_primary 1 when this node is its shard's primary.
# TYPE rdx_primary gauge
rdx_primary{cluster="local",node="n0"} 1
# HELP rdx_primary_authority 1 when this node holds leases from a majority of the data nodes (a primary serves only then).
# TYPE rdx_primary_authority gauge
rdx_primary_authority{cluster="local",node="n0"} 0
rdx_peer_suspected{cluster="local",node="n0",peer="n1"} 1
# HELP rdx_epoch The topology epoch this node runs (a membership epoch is applied without a restart).
# TYPE rdx_epoch gauge
rdx_epoch{cluster="local",node="n0"} 3
`

func TestParseNodeState(t *testing.T) {
	st, err := ParseNodeState(strings.NewReader(rdxdMetrics))
	if err != nil || st != (NodeState{Primary: true, View: 0, Epoch: 3}) {
		t.Fatalf("ParseNodeState = %+v, %v", st, err)
	}
	backup := strings.NewReplacer(`rdx_primary{cluster="local",node="n0"} 1`, `rdx_primary{cluster="a}b",node="n0"} 0`,
		`rdx_shard_view{cluster="local",node="n0"} 0`, `rdx_shard_view 7`).Replace(rdxdMetrics)
	if st, err := ParseNodeState(strings.NewReader(backup)); err != nil || st != (NodeState{View: 7, Epoch: 3}) {
		t.Errorf("a backup of view 7: %+v, %v", st, err)
	}
	for name, text := range map[string]string{
		"not an rdxd":   "# nothing\nprocess_cpu_seconds_total 3\n",
		"a ro node":     "rdx_ready 1\n",
		"no epoch":      strings.Replace(rdxdMetrics, `rdx_epoch{cluster="local",node="n0"} 3`, "", 1),
		"garbage value": strings.Replace(rdxdMetrics, `node="n0"} 1`, `node="n0"} one`, 1),
	} {
		if st, err := ParseNodeState(strings.NewReader(text)); err == nil {
			t.Errorf("%s: parsed as %+v, want an error", name, st)
		}
	}
}

func TestHTTPProberReadsMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(rdxdMetrics))
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p, _ := strconv.Atoi(port)
	pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: host}}
	st, err := HTTPProber{Client: srv.Client()}.Probe(context.Background(), pod, int32(p))
	if err != nil || !st.Primary {
		t.Fatalf("Probe = %+v, %v", st, err)
	}
	if _, err := (HTTPProber{Client: srv.Client()}).Probe(context.Background(), &corev1.Pod{}, int32(p)); err == nil {
		t.Error("a pod without an IP must not be probed")
	}
}
