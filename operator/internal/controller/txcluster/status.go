// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
	"github.com/rdx-dev/rdx/operator/internal/engine"
)

// Condition reasons.
const (
	ReasonAllReplicasReady  = "AllReplicasReady"
	ReasonReplicasNotReady  = "ReplicasNotReady"
	ReasonReconcileFailed   = "ReconcileFailed"
	ReasonRolloutComplete   = "RolloutComplete"
	ReasonRollingOut        = "RollingOut"
	ReasonWaitingForPods    = "WaitingForReplicas"
	ReasonPodsFailing       = "PodsFailing"
	ReasonAsExpected        = "AsExpected"
	ReasonPrimariesReady    = "AllPrimariesReady"
	ReasonPrimaryNotReady   = "PrimaryNotReady"
	maxConditionMessageItem = 5
)

// waitingReasons of a container that mean it will not start without a change.
var failingWaitingReasons = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// observation is what one reconcile saw; status is a pure function of it.
type observation struct {
	cluster           *rdxv1.TxCluster
	topology          engine.Topology
	topologyConfigMap *corev1.ConfigMap // as applied; events about an epoch refer to it
	restartHash       string
	legacyHash        string               // an older operator's restart hash of the current file (adoptLegacyPods)
	stepBlocked       string               // why the next membership epoch waits (stepBlocker), "" if it does not
	statefulSets      []appsv1.StatefulSet // as returned by the apply, one per shard (fewer if a step failed)
	pods              []corev1.Pod
	stepErr           error
	nodes             map[string]nodeProbe // what each running data pod said about itself (primaries.go)
	now               time.Time
	degradedAfter     time.Duration
}

// computeStatus derives the TxCluster status and how long until it should be looked at again (0 = only on events).
func computeStatus(o observation) (rdxv1.TxClusterStatus, time.Duration) {
	c := o.cluster
	st := rdxv1.TxClusterStatus{
		ObservedGeneration: c.Generation,
		Epoch:              o.topology.Epoch,
		Replicas:           c.Spec.Shards * c.Spec.Replicas,
		Endpoint:           fmt.Sprintf("%s.%s.svc:%d", endpointName(c), c.Namespace, c.Spec.Endpoint.Port),
		Conditions:         append([]metav1.Condition(nil), c.Status.Conditions...),
	}
	if st.Epoch == 0 {
		st.Epoch = c.Status.Epoch
	}

	pods := map[string]*corev1.Pod{}
	for i := range o.pods {
		pods[o.pods[i].Name] = &o.pods[i]
	}
	var waiting, noPrimary []string
	electing := false // a shard has live members but no ready primary: an election may be under way
	for _, shard := range o.topology.Shards {
		ss := rdxv1.ShardStatus{ID: shard.ID, Members: shard.Members}
		primary, view, why := shardPrimary(shard.Members, o.nodes)
		ss.Primary, ss.View = primary, view
		for _, m := range shard.Members {
			if p := pods[m]; p != nil && runsCurrent(p, o.restartHash) && podReady(p) {
				ss.ReadyMembers++
				ss.PrimaryReady = ss.PrimaryReady || m == ss.Primary
			}
		}
		switch {
		case primary == "":
			noPrimary = append(noPrimary, fmt.Sprintf("shard %d: %s", shard.ID, why))
		case !ss.PrimaryReady:
			noPrimary = append(noPrimary, fmt.Sprintf("shard %d: primary %s not ready", shard.ID, ss.Primary))
		}
		electing = electing || (!ss.PrimaryReady && ss.ReadyMembers > 0)
		if ss.ReadyMembers < int32(len(shard.Members)) {
			waiting = append(waiting, fmt.Sprintf("shard %d: %d/%d ready", shard.ID, ss.ReadyMembers, len(shard.Members)))
		}
		st.ReadyReplicas += ss.ReadyMembers
		st.Shards = append(st.Shards, ss)
	}

	var rolling []string
	stepping := false // membership epochs are still being stepped towards spec.replicas
	for _, shard := range o.topology.Shards {
		if n := int32(len(shard.Members)); n != c.Spec.Replicas {
			stepping = true
			msg := fmt.Sprintf("shard %d: %d of %d members, one node per topology epoch", shard.ID, n, c.Spec.Replicas)
			if o.stepBlocked != "" {
				msg += " (next epoch waits: " + o.stepBlocked + ")"
			}
			rolling = append(rolling, msg)
		}
	}
	for i := range o.statefulSets {
		if msg := rolloutPending(&o.statefulSets[i], c.Spec.Replicas); msg != "" {
			rolling = append(rolling, msg)
		}
	}
	if missing := int(c.Spec.Shards) - len(o.statefulSets); missing > 0 && o.stepErr == nil {
		rolling = append(rolling, fmt.Sprintf("%d StatefulSets not created yet", missing))
	}

	var failing []string
	var recheck time.Duration
	for _, p := range o.pods {
		problem, after := podProblem(&p, o.restartHash, o.now, o.degradedAfter)
		if problem != "" {
			failing = append(failing, fmt.Sprintf("pod %s: %s", p.Name, problem))
		}
		recheck = minRecheck(recheck, after)
	}
	sort.Strings(failing)

	gen := c.Generation
	set := func(t string, ok bool, reason, msg string) {
		apply.SetCondition(&st.Conditions, gen, t, ok, reason, msg)
	}

	switch {
	case o.stepErr != nil:
		set(rdxv1.ConditionReady, false, ReasonReconcileFailed, o.stepErr.Error())
	case len(waiting)+len(rolling) > 0:
		set(rdxv1.ConditionReady, false, ReasonReplicasNotReady, summarize(append(waiting, rolling...)))
	default:
		set(rdxv1.ConditionReady, true, ReasonAllReplicasReady,
			fmt.Sprintf("%d shards x %d replicas ready at epoch %d", c.Spec.Shards, c.Spec.Replicas, st.Epoch))
	}

	switch {
	case len(rolling) > 0:
		set(rdxv1.ConditionProgressing, true, ReasonRollingOut, summarize(rolling))
	case len(waiting) > 0:
		set(rdxv1.ConditionProgressing, true, ReasonWaitingForPods, summarize(waiting))
	default:
		set(rdxv1.ConditionProgressing, false, ReasonRolloutComplete, "every pod runs the current spec")
	}

	switch {
	case o.stepErr != nil:
		set(rdxv1.ConditionDegraded, true, ReasonReconcileFailed, o.stepErr.Error())
	case len(failing) > 0:
		set(rdxv1.ConditionDegraded, true, ReasonPodsFailing, summarize(failing))
	default:
		set(rdxv1.ConditionDegraded, false, ReasonAsExpected, "no failures observed")
	}

	if len(noPrimary) > 0 {
		set(rdxv1.ConditionWritable, false, ReasonPrimaryNotReady,
			summarize(noPrimary)+" (its keys refuse writes until it is back or another member is elected)")
	} else {
		set(rdxv1.ConditionWritable, true, ReasonPrimariesReady,
			fmt.Sprintf("the primaries of all %d shards are ready", len(o.topology.Shards)))
	}
	switch { // primaries and epochs change without pod events; with no pod running, a pod event comes first
	case stepping:
		recheck = minRecheck(recheck, recheckStepping)
	case electing:
		recheck = minRecheck(recheck, recheckWithoutPrimary)
	case len(o.nodes) > 0:
		recheck = minRecheck(recheck, recheckPrimaries)
	}

	switch {
	case meta.IsStatusConditionTrue(st.Conditions, rdxv1.ConditionDegraded):
		st.Phase = rdxv1.PhaseDegraded
	case meta.IsStatusConditionTrue(st.Conditions, rdxv1.ConditionReady):
		st.Phase = rdxv1.PhaseRunning
	case st.ReadyReplicas == 0:
		st.Phase = rdxv1.PhasePending
	default:
		st.Phase = rdxv1.PhaseUpdating
	}
	return st, recheck
}

// rolloutPending says why a StatefulSet has not finished applying its current template, or "" when it has.
func rolloutPending(s *appsv1.StatefulSet, want int32) string {
	switch {
	case s.Status.ObservedGeneration < s.Generation:
		return fmt.Sprintf("StatefulSet %s: generation %d not observed yet", s.Name, s.Generation)
	case s.Status.UpdatedReplicas < want || (s.Status.UpdateRevision != "" && s.Status.CurrentRevision != s.Status.UpdateRevision):
		return fmt.Sprintf("StatefulSet %s: %d/%d pods updated", s.Name, s.Status.UpdatedReplicas, want)
	case s.Status.Replicas != want:
		return fmt.Sprintf("StatefulSet %s: %d pods, want %d", s.Name, s.Status.Replicas, want)
	case s.Status.ReadyReplicas < want:
		return fmt.Sprintf("StatefulSet %s: %d/%d pods ready", s.Name, s.Status.ReadyReplicas, want)
	}
	return ""
}

// podProblem reports why a pod needs attention ("" if it does not) and, for a pod that is not ready yet but not
// for long, how long until it would count as a problem.
func podProblem(p *corev1.Pod, restartHash string, now time.Time, degradedAfter time.Duration) (string, time.Duration) {
	if p.DeletionTimestamp != nil {
		return "", 0
	}
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Sprintf("failed (%s)", p.Status.Reason), 0
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return "unschedulable: " + cond.Message, 0
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && failingWaitingReasons[w.Reason] {
			return fmt.Sprintf("container %s %s: %s", cs.Name, w.Reason, w.Message), 0
		}
	}
	if podReady(p) || !runsCurrent(p, restartHash) {
		return "", 0 // pods of an old configuration are about to be replaced; the rollout reports them
	}
	since := p.CreationTimestamp.Time
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && !cond.LastTransitionTime.IsZero() {
			since = cond.LastTransitionTime.Time
		}
	}
	if left := since.Add(degradedAfter).Sub(now); left > 0 {
		return "", left
	}
	return fmt.Sprintf("not ready for %s", now.Sub(since).Round(time.Second)), 0
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runsCurrent tells whether a pod was created from a template with the current restart hash.
func runsCurrent(p *corev1.Pod, restartHash string) bool {
	return p.Annotations[engine.AnnotationRestartHash] == restartHash
}

// minRecheck is the sooner of two rechecks (0: none).
func minRecheck(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

func summarize(items []string) string {
	if len(items) > maxConditionMessageItem {
		return strings.Join(items[:maxConditionMessageItem], "; ") + fmt.Sprintf("; and %d more", len(items)-maxConditionMessageItem)
	}
	return strings.Join(items, "; ")
}
