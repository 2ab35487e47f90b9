// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Labels the operator puts on every data pod of a TxCluster; the StatefulSet controller adds the pod index.
const (
	labelCluster  = "rdx.dev/cluster"
	labelRole     = "rdx.dev/role"
	labelShard    = "rdx.dev/shard"
	labelPodIndex = "apps.kubernetes.io/pod-index"
	roleData      = "data"
)

// status prints a TxCluster's summary and a table of every shard's pods.
func (a *app) status(ctx context.Context, name string) error {
	txc, err := a.dyn.Resource(txclusterGVR).Namespace(a.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("txcluster.rdx.dev %q not found in namespace %q", name, a.namespace)
	} else if err != nil {
		return fmt.Errorf("get txcluster.rdx.dev %q: %w", name, err)
	}
	pods, err := a.kube.CoreV1().Pods(a.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelCluster + "=" + name + "," + labelRole + "=" + roleData,
	})
	if err != nil {
		return fmt.Errorf("list the pods of txcluster %s: %w", name, err)
	}
	writeStatus(a.stdout, txc, pods.Items)
	return nil
}

// shardStatus is one entry of status.shards.
type shardStatus struct {
	id      int
	members []string
	primary string
}

func shardsOf(txc *unstructured.Unstructured) []shardStatus {
	list, _, _ := unstructured.NestedSlice(txc.Object, "status", "shards")
	var out []shardStatus
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		id, _, _ := unstructured.NestedInt64(m, "id")
		members, _, _ := unstructured.NestedStringSlice(m, "members")
		primary, _, _ := unstructured.NestedString(m, "primary")
		out = append(out, shardStatus{int(id), members, primary})
	}
	return out
}

// podRow is one line of the pod table.
type podRow struct {
	shard    int // -1: the pod has no (numeric) shard label
	index    int // pod index in its StatefulSet; large when unknown, so such pods sort last
	name     string
	role     string
	ready    string
	status   string
	restarts string
	node     string
	ip       string
}

func writeStatus(w io.Writer, txc *unstructured.Unstructured, pods []corev1.Pod) {
	name := txc.GetName()
	shards := shardsOf(txc)
	wantShards := str(txc, "spec", "shards")
	if wantShards == "" {
		wantShards = strconv.Itoa(len(shards))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TxCluster:\t%s/%s\n", txc.GetNamespace(), name)
	fmt.Fprintf(tw, "Phase:\t%s\n", orDash(str(txc, "status", "phase")))
	ready := "- (no Ready condition yet)"
	var others []condition
	for _, c := range conditions(txc) {
		line := strings.TrimSpace(c.status + "  " + c.reason + "  " + c.message)
		if c.typ == "Ready" {
			ready = line
		} else {
			others = append(others, condition{typ: c.typ, message: line})
		}
	}
	fmt.Fprintf(tw, "Ready:\t%s\n", ready)
	for _, c := range others {
		fmt.Fprintf(tw, "%s:\t%s\n", c.typ, c.message)
	}
	fmt.Fprintf(tw, "Epoch:\t%s\n", orDash(str(txc, "status", "epoch")))
	endpoint := str(txc, "status", "endpoint")
	if endpoint == "" {
		endpoint = "- (not recorded yet)"
	}
	fmt.Fprintf(tw, "Endpoint:\t%s  (Service %s)\n", endpoint, name)
	fmt.Fprintf(tw, "Shards:\t%s x %s replicas, %s/%s pods ready\n", wantShards, orDash(str(txc, "spec", "replicas")),
		orDash(str(txc, "status", "readyReplicas")), orDash(str(txc, "status", "replicas")))
	fmt.Fprintf(tw, "Protocols:\ttransactions %s, replication %s, transport %s\n",
		orDash(str(txc, "spec", "transactions", "protocol")), orDash(str(txc, "spec", "replication", "protocol")),
		orDash(str(txc, "spec", "transport", "kind")))
	_ = tw.Flush()
	fmt.Fprintln(w)

	rows := podRows(shards, pods)
	if len(rows) == 0 {
		fmt.Fprintf(w, "No data pods (selector %s=%s,%s=%s).\n", labelCluster, name, labelRole, roleData)
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tPOD\tROLE\tREADY\tSTATUS\tRESTARTS\tNODE\tIP")
	for _, r := range rows {
		shard := "?"
		if r.shard >= 0 {
			shard = strconv.Itoa(r.shard)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shard, r.name, r.role, r.ready, r.status,
			orDash(r.restarts), orDash(r.node), orDash(r.ip))
	}
	_ = tw.Flush()
}

// podRows joins the pods with status.shards: every pod, plus a "missing" row for each member the topology names
// but no pod exists for. The primary is the one status.shards names (the operator reads it from the engine).
func podRows(shards []shardStatus, pods []corev1.Pod) []podRow {
	primaries := map[string]bool{}
	members := map[string]int{}
	for _, s := range shards {
		primaries[s.primary] = true
		for _, m := range s.members {
			members[m] = s.id
		}
	}
	var rows []podRow
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		seen[p.Name] = true
		r := podRow{shard: -1, index: 1 << 30, name: p.Name, role: "backup", node: p.Spec.NodeName, ip: p.Status.PodIP}
		if s, err := strconv.Atoi(p.Labels[labelShard]); err == nil {
			r.shard = s
		} else if s, ok := members[p.Name]; ok {
			r.shard = s
		}
		if idx, err := strconv.Atoi(p.Labels[labelPodIndex]); err == nil {
			r.index = idx
		}
		if primaries[p.Name] {
			r.role = "primary"
		}
		r.ready, r.status, r.restarts = podState(p)
		rows = append(rows, r)
	}
	for _, s := range shards {
		for i, m := range s.members {
			if seen[m] {
				continue
			}
			role := "backup"
			if m == s.primary {
				role = "primary"
			}
			rows = append(rows, podRow{shard: s.id, index: i, name: m, role: role, ready: "false", status: "Missing"})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].shard != rows[j].shard {
			return rows[i].shard < rows[j].shard
		}
		if rows[i].index != rows[j].index {
			return rows[i].index < rows[j].index
		}
		return rows[i].name < rows[j].name
	})
	return rows
}

// podState is the pod's Ready condition, a one-word status like kubectl's STATUS column (Terminating, a waiting
// container's reason such as CrashLoopBackOff, else the phase) and its containers' restarts.
func podState(p *corev1.Pod) (ready, status, restarts string) {
	ready = "false"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = "true"
		}
	}
	status = string(p.Status.Phase)
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			status = cs.State.Waiting.Reason
		}
	}
	if p.DeletionTimestamp != nil {
		status = "Terminating"
	}
	if status == "" {
		status = "Unknown"
	}
	return ready, status, strconv.Itoa(int(n))
}
