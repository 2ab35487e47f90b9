// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeState is what one rdxd says about itself on /metrics: whether it is its shard's primary, and in which view
// (one more per failover, engine/src/cluster/membership.h). Whether that primary serves (holds its leases) is what
// its readiness says (/readyz).
type NodeState struct {
	Primary bool
	View    int64
	Epoch   int64 // the topology epoch it runs (membership epochs are applied live)
}

// NodeProber asks one engine pod for its NodeState.
type NodeProber interface {
	Probe(ctx context.Context, pod *corev1.Pod, port int32) (NodeState, error)
}

// HTTPProber reads a pod's /metrics on its HTTP port (the operator must reach the pods' network).
type HTTPProber struct{ Client *http.Client }

// Probe implements NodeProber.
func (p HTTPProber) Probe(ctx context.Context, pod *corev1.Pod, port int32) (NodeState, error) {
	if pod.Status.PodIP == "" {
		return NodeState{}, fmt.Errorf("no pod IP yet")
	}
	url := fmt.Sprintf("http://%s/metrics", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return NodeState{}, err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return NodeState{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return NodeState{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseNodeState(io.LimitReader(resp.Body, 4<<20))
}

// ParseNodeState reads rdx_primary, rdx_shard_view and rdx_epoch from a Prometheus text exposition. A data node exports both;
// their absence is an error (not an rdxd, or not a data node).
func ParseNodeState(r io.Reader) (NodeState, error) {
	var st NodeState
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		} else {
			name, rest, _ = strings.Cut(line, " ")
		}
		switch name {
		case "rdx_primary", "rdx_shard_view", "rdx_epoch":
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return NodeState{}, fmt.Errorf("metric %s: %w", name, err)
		}
		seen[name] = true
		switch name {
		case "rdx_primary":
			st.Primary = v == 1
		case "rdx_shard_view":
			st.View = int64(v)
		case "rdx_epoch":
			st.Epoch = int64(v)
		}
	}
	if err := sc.Err(); err != nil {
		return NodeState{}, err
	}
	for _, m := range []string{"rdx_primary", "rdx_shard_view", "rdx_epoch"} {
		if !seen[m] {
			return NodeState{}, fmt.Errorf("metric %s missing", m)
		}
	}
	return st, nil
}
