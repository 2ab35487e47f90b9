// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package txcluster holds the TxCluster controller. It turns a TxCluster into the engine's topology ConfigMap,
// Services, one StatefulSet per shard and a PodDisruptionBudget, all server-side applied by one field manager and
// owned by the TxCluster (package apply), and reports what exists in the TxCluster's status.
package txcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
	"github.com/rdx-dev/rdx/operator/internal/engine"
)

// Reconciler reconciles TxCluster objects.
type Reconciler struct {
	client.Client
	// APIReader reads the TxCluster and its topology ConfigMap uncached: an epoch must never be derived from, nor
	// a condition transition compared with, a stale copy.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// EngineImage is used when spec.image is empty.
	EngineImage string
	// DegradedAfter is how long a pod may stay unready before the cluster reports Degraded.
	DegradedAfter time.Duration
	// Prober asks engine pods whether they are their shard's primary; nil: their /metrics over HTTP.
	Prober engine.NodeProber
}

// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile applies every object of one TxCluster in order and then writes its status. Each step is idempotent;
// the first failing step stops the pass, is reported as an event and in the Degraded condition, and is retried.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read uncached: the status written by the previous pass must be seen (it holds the last epoch and the
	// conditions whose transitions become events), and the cache may not have caught up with it yet.
	var c rdxv1.TxCluster
	if err := r.APIReader.Get(ctx, req.NamespacedName, &c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // owner references let the garbage collector delete the rest
	}

	obs := observation{cluster: &c, now: time.Now(), degradedAfter: r.DegradedAfter}
	// What the pods run decides whether the next membership epoch may be written, and is what the status reports.
	pods, err := r.listPods(ctx, &c)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("list pods: %w", err)
	}
	obs.pods = pods
	obs.nodes = r.probeNodes(ctx, &c, obs.pods)
	steps := []struct {
		name string
		run  func(context.Context, *rdxv1.TxCluster, *observation) error
	}{
		{"Topology", r.reconcileTopology},
		{"Services", r.reconcileServices},
		{"StatefulSets", r.reconcileStatefulSets},
		{"PodDisruptionBudget", r.reconcilePDB},
		{"Pods", r.reconcilePods},
	}
	for _, s := range steps {
		if err := s.run(ctx, &c, &obs); err != nil {
			obs.stepErr = fmt.Errorf("%s: %w", s.name, err)
			r.Recorder.Eventf(&c, nil, corev1.EventTypeWarning, s.name+"Failed", "Reconcile", "%v", err)
			break
		}
	}
	if msg := engine.MemoryShortfall(&c); msg != "" {
		r.Recorder.Eventf(&c, nil, corev1.EventTypeWarning, "MemoryTooSmall", "Reconcile", "%s", msg)
	}

	status, recheck := computeStatus(obs)
	if err := r.applier().Status(ctx, &c, &status); apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil // deleted while reconciling
	} else if err != nil {
		return ctrl.Result{}, errors.Join(obs.stepErr, fmt.Errorf("status: %w", err))
	}
	r.applier().ReportReadyTransition(&c, c.Status.Conditions, status.Conditions)
	r.reportPrimaryChanges(&c, c.Status.Shards, status.Shards)
	r.applier().ReportTransition(&c, c.Status.Conditions, status.Conditions, rdxv1.ConditionWritable, "Writable",
		"PrimaryUnavailable")
	if obs.stepErr != nil {
		return ctrl.Result{}, obs.stepErr
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// reconcileTopology renders the topology ConfigMap and decides its epoch against the live copy.
func (r *Reconciler) reconcileTopology(ctx context.Context, c *rdxv1.TxCluster, obs *observation) error {
	var cm corev1.ConfigMap
	var current *engine.Topology
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: engine.TopologyName(c)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		t, perr := engine.ParseTopology(cm.Data[engine.TopologyKey])
		if perr != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "TopologyUnreadable", "Reconcile",
				"ConfigMap %s: %v; rewriting it with a new epoch", cm.Name, perr)
		} else {
			current = &t
		}
	}
	knownEpoch, knownNodes := c.Status.Epoch, int32(0)
	for _, p := range obs.nodes {
		if p.err == nil {
			knownEpoch = max(knownEpoch, p.state.Epoch)
		}
	}
	for _, s := range c.Status.Shards {
		knownNodes += int32(len(s.Members))
	}
	topo, data, err := engine.NextTopology(c, current, cm.Data[engine.TopologyKey], knownEpoch, knownNodes,
		func(cur, next engine.Topology) bool {
			obs.stepBlocked = stepBlocker(cur, next, obs.pods, obs.nodes)
			return obs.stepBlocked == ""
		})
	if err != nil {
		return err
	}
	if current != nil && topo.Epoch == current.Epoch {
		obs.legacyHash = current.LegacyRestartHash()
	}
	ac := topologyConfigMap(c, data, &cm)
	if err := r.applier().Owned(ctx, c, ac, ac.ObjectMetaApplyConfiguration, &cm); err != nil {
		return err
	}
	if current != nil && topo.Epoch != current.Epoch {
		r.Recorder.Eventf(c, &cm, corev1.EventTypeNormal, "EpochBumped", "Reconcile",
			"topology epoch %d -> %d", current.Epoch, topo.Epoch)
	}
	obs.topology, obs.restartHash, obs.topologyConfigMap = topo, topo.RestartHash(), &cm
	return nil
}

// stepBlocker says why the cluster cannot take the membership epoch `next` after `cur` yet, or "" when it can: every
// node of both (the ones that stay) has a ready pod that runs its restart hash (the last joiner serves) and says it
// runs epoch cur.Epoch, and no pod of a node `cur` does not have is left (the last one removed is gone). rdxd follows
// one data node per epoch: a node still on an older epoch that got the next one would have to copy its shard again
// (engine/docs/topology.md, "Membership epochs"). A node that `next` removes need not serve: a joiner that never
// became ready can be removed again.
func stepBlocker(cur, next engine.Topology, pods []corev1.Pod, probes map[string]nodeProbe) string {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	staying := map[string]bool{}
	for _, n := range next.Nodes {
		staying[n.Name] = true
	}
	hash := cur.RestartHash()
	for _, n := range cur.Nodes {
		p, probe := byName[n.Name], probes[n.Name]
		delete(byName, n.Name)
		switch {
		case !staying[n.Name]:
		case p == nil || p.DeletionTimestamp != nil:
			return fmt.Sprintf("pod %s is not there", n.Name)
		case !runsCurrent(p, hash) || !podReady(p):
			return fmt.Sprintf("pod %s is not ready", n.Name)
		case probe.err != nil:
			return fmt.Sprintf("pod %s does not say which epoch it runs: %v", n.Name, probe.err)
		case probe.state.Epoch < cur.Epoch:
			return fmt.Sprintf("pod %s runs epoch %d, not %d yet", n.Name, probe.state.Epoch, cur.Epoch)
		}
	}
	for name := range byName {
		return fmt.Sprintf("pod %s of a removed node is still there", name)
	}
	return ""
}

func (r *Reconciler) reconcileServices(ctx context.Context, c *rdxv1.TxCluster, _ *observation) error {
	hl := headlessService(c)
	if err := r.applier().Owned(ctx, c, hl, hl.ObjectMetaApplyConfiguration, &corev1.Service{}); err != nil {
		return err
	}
	for _, svc := range endpointServices(c) {
		if err := r.applier().Owned(ctx, c, svc, svc.ObjectMetaApplyConfiguration, &corev1.Service{}); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) reconcileStatefulSets(ctx context.Context, c *rdxv1.TxCluster, obs *observation) error {
	image := c.Spec.Image
	if image == "" {
		image = r.EngineImage
	}
	for shard := int32(0); shard < c.Spec.Shards; shard++ {
		ac, err := statefulSet(c, image, shard, obs.topology.Members(shard), obs.restartHash)
		if err != nil {
			return err
		}
		if err := r.applier().Owned(ctx, c, ac, ac.ObjectMetaApplyConfiguration, &appsv1.StatefulSet{}); err != nil {
			return err
		}
		var applied appsv1.StatefulSet // the apply response: generation and status as the server has them now
		if err := apply.Convert(ac, &applied); err != nil {
			return err
		}
		obs.statefulSets = append(obs.statefulSets, applied)
	}
	return nil
}

func (r *Reconciler) reconcilePDB(ctx context.Context, c *rdxv1.TxCluster, _ *observation) error {
	pdb := podDisruptionBudget(c)
	return r.applier().Owned(ctx, c, pdb, pdb.ObjectMetaApplyConfiguration, &policyv1.PodDisruptionBudget{})
}

// reconcilePods restarts, all at once, the pods whose configuration rdxd cannot change while running (a restart
// hash other than the template's): nodes started from different settings refuse each other, so a one-by-one roll
// would stall.
// It waits until every StatefulSet has observed its new template, so the replacements are created from it.
func (r *Reconciler) reconcilePods(ctx context.Context, c *rdxv1.TxCluster, obs *observation) error {
	if err := r.adoptLegacyPods(ctx, obs); err != nil {
		return err
	}
	if err := r.announceEpoch(ctx, obs); err != nil {
		return err
	}
	for i := range obs.statefulSets {
		if s := &obs.statefulSets[i]; s.Status.ObservedGeneration < s.Generation {
			return nil
		}
	}
	var stale, kept []corev1.Pod
	for _, p := range obs.pods {
		// A pod that carries the legacy hash is adopted, never restarted: it may have got it after adoptLegacyPods
		// looked (a patch above returns the pod as the server has it now).
		if p.DeletionTimestamp == nil && !runsCurrent(&p, obs.restartHash) && !legacy(&p, obs) {
			stale = append(stale, p)
		} else {
			kept = append(kept, p)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	r.Recorder.Eventf(c, obs.topologyConfigMap, corev1.EventTypeNormal, "Restarting", "Restart",
		"restarting %d pods together for topology epoch %d: the change cannot be applied to a running rdxd",
		len(stale), obs.topology.Epoch)
	for i := range stale {
		p := &stale[i]
		err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
	}
	obs.pods = kept
	for i := range stale {
		delete(obs.nodes, stale[i].Name)
	}
	return nil
}

// adoptLegacyPods rewrites the restart hash of pods that carry the hash an older operator computed for the current
// file (Topology.LegacyRestartHash): they run exactly that file, so they are not restarted together; the
// StatefulSet rolls them to the new template one at a time instead.
func (r *Reconciler) adoptLegacyPods(ctx context.Context, obs *observation) error {
	return r.annotatePods(ctx, obs, engine.AnnotationRestartHash, obs.restartHash, func(p *corev1.Pod) bool {
		return legacy(p, obs)
	})
}

// legacy tells whether the pod carries an older operator's restart hash of the current file (adoptLegacyPods).
func legacy(p *corev1.Pod, obs *observation) bool {
	return obs.legacyHash != "" && obs.legacyHash != obs.restartHash &&
		p.Annotations[engine.AnnotationRestartHash] == obs.legacyHash
}

// annotatePods sets annotation key to value on every pod of obs that `want` selects and does not have it yet (the
// copies in obs too).
func (r *Reconciler) annotatePods(ctx context.Context, obs *observation, key, value string, want func(*corev1.Pod) bool) error {
	for i := range obs.pods {
		p := &obs.pods[i]
		if p.DeletionTimestamp != nil || !want(p) || p.Annotations[key] == value {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
		if err := r.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotate pod %s with %s=%s: %w", p.Name, key, value, err)
		}
	}
	return nil
}

// announceEpoch stamps the topology epoch on every pod that runs the current restart hash. kubelet refreshes a
// pod's mounted ConfigMap when it syncs the pod, which an update of the pod triggers; otherwise the new file may
// take a minute or more to appear (its periodic sync). One pod with the file is enough: rdxd hands a newer epoch to
// its peers with its heartbeats.
func (r *Reconciler) announceEpoch(ctx context.Context, obs *observation) error {
	return r.annotatePods(ctx, obs, engine.AnnotationTopologyEpoch, strconv.FormatInt(obs.topology.Epoch, 10),
		func(p *corev1.Pod) bool { return runsCurrent(p, obs.restartHash) })
}

func (r *Reconciler) listPods(ctx context.Context, c *rdxv1.TxCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(engine.DataSelector(c))); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// applier writes the cluster's objects and status, with events about them on the TxCluster.
func (r *Reconciler) applier() *apply.Applier {
	return &apply.Applier{Client: r.Client, Recorder: r.Recorder}
}

// SetupWithManager registers the controller: TxCluster spec changes, changes to every owned object, and pods of a
// cluster (they are owned by StatefulSets, so they are mapped back through the rdx.dev/cluster label).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	podToCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		name := o.GetLabels()[apply.LabelCluster]
		if name == "" || o.GetLabels()[engine.LabelRole] != engine.RoleData {
			return nil
		}
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("txcluster").
		For(&rdxv1.TxCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, podToCluster).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}
