// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/engine"
)

const (
	probeTimeout = 2 * time.Second
	// A shard with ready members but no ready primary is looked at again soon (an election takes about a second);
	// a cluster with running pods now and then (the engine may fail over without any pod event: a paused primary
	// stays Ready for a while).
	recheckWithoutPrimary = 2 * time.Second
	recheckPrimaries      = 30 * time.Second
	// While membership is stepped, whether every node runs the last epoch is looked at every second: rdxd applying
	// it is no pod event.
	recheckStepping = time.Second
)

var defaultProber = engine.HTTPProber{Client: &http.Client{Timeout: probeTimeout}}

// nodeProbe is what one pod said about itself, or why it said nothing.
type nodeProbe struct {
	state engine.NodeState
	err   error
}

// probeNodes asks every running data pod, in parallel, whether it is its shard's primary: the engine elects a new
// primary when one is lost (engine/src/replication/primary_backup/election.cc; zab's leader likewise,
// replication/zab/election.cc), so ordinal 0 is only the first.
func (r *Reconciler) probeNodes(ctx context.Context, c *rdxv1.TxCluster, pods []corev1.Pod) map[string]nodeProbe {
	prober := r.Prober
	if prober == nil {
		prober = defaultProber
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]nodeProbe{}
	for i := range pods {
		p := &pods[i]
		shard, err := strconv.Atoi(p.Labels[engine.LabelShard])
		if err != nil || p.Labels[engine.LabelRole] != engine.RoleData || p.Status.Phase != corev1.PodRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := prober.Probe(ctx, p, engine.PortsOf(c, int32(shard)).HTTP)
			mu.Lock()
			out[p.Name] = nodeProbe{st, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// shardPrimary is the member that says it is the primary in the newest view (a deposed primary that has not heard
// of its successor yet still says so, in an older view), and its view; "" when no member says so, with why.
func shardPrimary(members []string, probes map[string]nodeProbe) (string, int64, string) {
	best, view := "", int64(-1)
	answered := false
	var failed []string
	for _, m := range members {
		p, ok := probes[m]
		switch {
		case !ok:
		case p.err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", m, p.err))
		default:
			answered = true
			if p.state.Primary && p.state.View > view {
				best, view = m, p.state.View
			}
		}
	}
	switch {
	case best != "":
		return best, view, ""
	case answered:
		return "", 0, "no member says it is the primary"
	case len(failed) > 0:
		return "", 0, "no member answered (" + summarize(failed) + ")"
	default:
		return "", 0, "no member is running"
	}
}

// reportPrimaryChanges records an event for every shard whose primary changed since the last status.
func (r *Reconciler) reportPrimaryChanges(c *rdxv1.TxCluster, before, after []rdxv1.ShardStatus) {
	if len(before) == 0 {
		return // the first status: nothing changed
	}
	was := map[int32]string{}
	for _, s := range before {
		was[s.ID] = s.Primary
	}
	for _, s := range after {
		if s.Primary == "" || s.Primary == was[s.ID] {
			continue
		}
		prev := was[s.ID]
		if prev == "" {
			prev = "none"
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "PrimaryChanged", "Failover",
			"shard %d: %s is the primary (view %d); it was %s", s.ID, s.Primary, s.View, prev)
	}
}
