// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package controller holds the TxCluster reconciler. It turns a TxCluster into the engine's topology ConfigMap,
// Services, one StatefulSet per shard and a PodDisruptionBudget, all server-side applied by one field manager and
// owned by the TxCluster, and reports what exists in the TxCluster's status.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// FieldManager owns every field the operator writes with server-side apply.
const FieldManager = "rdx-operator"

// TxClusterReconciler reconciles TxCluster objects.
type TxClusterReconciler struct {
	client.Client
	// APIReader reads the TxCluster and its topology ConfigMap uncached: an epoch must never be derived from, nor
	// a condition transition compared with, a stale copy.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// EngineImage is used when spec.image is empty.
	EngineImage string
	// DegradedAfter is how long a pod may stay unready before the cluster reports Degraded.
	DegradedAfter time.Duration
}

// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile applies every object of one TxCluster in order and then writes its status. Each step is idempotent;
// the first failing step stops the pass, is reported as an event and in the Degraded condition, and is retried.
func (r *TxClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	if obs.pods == nil && obs.stepErr != nil {
		if pods, err := r.listPods(ctx, &c); err == nil {
			obs.pods = pods
		}
	}
	if msg := memoryShortfall(&c); msg != "" {
		r.Recorder.Eventf(&c, nil, corev1.EventTypeWarning, "MemoryTooSmall", "Reconcile", "%s", msg)
	}
	if c.Spec.Endpoint.TLSSecretRef != nil {
		r.Recorder.Eventf(&c, nil, corev1.EventTypeWarning, "TLSNotServed", "Reconcile",
			"Secret %s is mounted at %s but this rdxd's topology has no TLS settings: the endpoint serves plain RESP",
			c.Spec.Endpoint.TLSSecretRef.Name, TLSDir)
	}

	status, recheck := computeStatus(obs)
	if err := r.applyStatus(ctx, &c, status); apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil // deleted while reconciling
	} else if err != nil {
		return ctrl.Result{}, errors.Join(obs.stepErr, fmt.Errorf("status: %w", err))
	}
	r.reportReadyTransition(&c, status)
	if obs.stepErr != nil {
		return ctrl.Result{}, obs.stepErr
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// reconcileTopology renders the topology ConfigMap and decides its epoch against the live copy.
func (r *TxClusterReconciler) reconcileTopology(ctx context.Context, c *rdxv1.TxCluster, obs *observation) error {
	var cm corev1.ConfigMap
	var current *Topology
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: topologyName(c)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		t, perr := ParseTopology(cm.Data[TopologyKey])
		if perr != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "TopologyUnreadable", "Reconcile",
				"ConfigMap %s: %v; rewriting it with a new epoch", cm.Name, perr)
		} else {
			current = &t
		}
	}
	topo, data, err := nextTopology(c, current, cm.Data[TopologyKey], c.Status.Epoch)
	if err != nil {
		return err
	}
	ac := topologyConfigMap(c, data, cm.ResourceVersion)
	if err := r.applyOwned(ctx, c, ac, ac.ObjectMetaApplyConfiguration, &cm); err != nil {
		return err
	}
	if current != nil && topo.Epoch != current.Epoch {
		r.Recorder.Eventf(c, &cm, corev1.EventTypeNormal, "EpochBumped", "Reconcile",
			"topology epoch %d -> %d", current.Epoch, topo.Epoch)
	}
	obs.topology, obs.restartHash, obs.topologyConfigMap = topo, topo.RestartHash(), &cm
	return nil
}

func (r *TxClusterReconciler) reconcileServices(ctx context.Context, c *rdxv1.TxCluster, _ *observation) error {
	hl := headlessService(c)
	if err := r.applyOwned(ctx, c, hl, hl.ObjectMetaApplyConfiguration, &corev1.Service{}); err != nil {
		return err
	}
	for _, svc := range endpointServices(c) {
		if err := r.applyOwned(ctx, c, svc, svc.ObjectMetaApplyConfiguration, &corev1.Service{}); err != nil {
			return err
		}
	}
	return nil
}

func (r *TxClusterReconciler) reconcileStatefulSets(ctx context.Context, c *rdxv1.TxCluster, obs *observation) error {
	image := c.Spec.Image
	if image == "" {
		image = r.EngineImage
	}
	for shard := int32(0); shard < c.Spec.Shards; shard++ {
		ac, err := statefulSet(c, image, shard, obs.restartHash)
		if err != nil {
			return err
		}
		if err := r.applyOwned(ctx, c, ac, ac.ObjectMetaApplyConfiguration, &appsv1.StatefulSet{}); err != nil {
			return err
		}
		var applied appsv1.StatefulSet // the apply response: generation and status as the server has them now
		if err := convert(ac, &applied); err != nil {
			return err
		}
		obs.statefulSets = append(obs.statefulSets, applied)
	}
	return nil
}

func (r *TxClusterReconciler) reconcilePDB(ctx context.Context, c *rdxv1.TxCluster, _ *observation) error {
	pdb := podDisruptionBudget(c)
	return r.applyOwned(ctx, c, pdb, pdb.ObjectMetaApplyConfiguration, &policyv1.PodDisruptionBudget{})
}

// reconcilePods restarts, all at once, the pods whose configuration rdxd cannot change while running (a restart
// hash other than the template's): nodes of different epochs ignore each other, so a one-by-one roll would stall.
// It waits until every StatefulSet has observed its new template, so the replacements are created from it.
func (r *TxClusterReconciler) reconcilePods(ctx context.Context, c *rdxv1.TxCluster, obs *observation) error {
	pods, err := r.listPods(ctx, c)
	if err != nil {
		return err
	}
	obs.pods = pods
	for i := range obs.statefulSets {
		if s := &obs.statefulSets[i]; s.Status.ObservedGeneration < s.Generation {
			return nil
		}
	}
	var stale, kept []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && !runsCurrent(&p, obs.restartHash) {
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
	return nil
}

func (r *TxClusterReconciler) listPods(ctx context.Context, c *rdxv1.TxCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(dataSelector(c))); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// namedApplyConfiguration is what every generated apply configuration offers.
type namedApplyConfiguration interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetKind() *string
}

// applyOwned server-side applies one object of the cluster and records an event when it was created or changed.
// existing receives the cached object unless the caller already read it (non-empty resourceVersion). An object
// with the same name controlled by something else is left alone.
func (r *TxClusterReconciler) applyOwned(ctx context.Context, c *rdxv1.TxCluster, ac namedApplyConfiguration,
	m *metav1ac.ObjectMetaApplyConfiguration, existing client.Object) error {
	name, kind := *ac.GetName(), *ac.GetKind()
	if existing.GetResourceVersion() == "" {
		err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, existing)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	before := existing.GetResourceVersion()
	if owner := metav1.GetControllerOf(existing); before != "" && owner != nil && owner.UID != c.UID {
		return fmt.Errorf("%s %s exists and is controlled by %s %s; delete or rename it", kind, name, owner.Kind, owner.Name)
	}
	if err := r.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", kind, name, err)
	}
	// existing now stands for the applied version; as the event's related object (name and resourceVersion) it
	// keeps events about different objects and versions from being folded into one series.
	existing.SetName(name)
	existing.SetNamespace(c.Namespace)
	existing.SetUID(ptr.Deref(m.UID, ""))
	existing.SetResourceVersion(ptr.Deref(m.ResourceVersion, ""))
	switch {
	case before == "":
		r.Recorder.Eventf(c, existing, corev1.EventTypeNormal, "Created", "Apply", "created %s %s", kind, name)
	case existing.GetResourceVersion() != before:
		r.Recorder.Eventf(c, existing, corev1.EventTypeNormal, "Updated", "Apply", "updated %s %s", kind, name)
	}
	return nil
}

// applyStatus writes the whole status with server-side apply; the operator is its only writer.
func (r *TxClusterReconciler) applyStatus(ctx context.Context, c *rdxv1.TxCluster, status rdxv1.TxClusterStatus) error {
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": fields}}
	u.SetAPIVersion(rdxv1.GroupVersion.String())
	u.SetKind("TxCluster")
	u.SetNamespace(c.Namespace)
	u.SetName(c.Name)
	return r.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership)
}

func (r *TxClusterReconciler) reportReadyTransition(c *rdxv1.TxCluster, status rdxv1.TxClusterStatus) {
	was := meta.IsStatusConditionTrue(c.Status.Conditions, rdxv1.ConditionReady)
	now := meta.FindStatusCondition(status.Conditions, rdxv1.ConditionReady)
	switch {
	case now == nil:
	case !was && now.Status == metav1.ConditionTrue:
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Ready", "Reconcile", "%s", now.Message)
	case was && now.Status != metav1.ConditionTrue:
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "NotReady", "Reconcile", "%s", now.Message)
	}
}

// SetupWithManager registers the controller: TxCluster spec changes, changes to every owned object, and pods of a
// cluster (they are owned by StatefulSets, so they are mapped back through the rdx.dev/cluster label).
func (r *TxClusterReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	podToCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		name := o.GetLabels()[LabelCluster]
		if name == "" || o.GetLabels()[LabelRole] != RoleData {
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
