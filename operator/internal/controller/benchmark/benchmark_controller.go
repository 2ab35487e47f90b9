// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package benchmark holds the Benchmark controller. A Benchmark becomes a sequence of Jobs running rdx-bench against
// its TxClusters (a load per target, then one run per sweep value); the controller creates one Job at a time,
// follows it (live progress from rdx-bench's log), records each finished run's summary in status, and at the end
// writes the results, the checker's verdict and a report with plots into the ConfigMap <name>-results.
package benchmark

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
)

// LogTailer returns the last lines of a container's log (the API server's pods/log; kubelet serves it).
type LogTailer interface {
	Tail(ctx context.Context, namespace, pod, container string, lines int64) (string, error)
}

// Reconciler reconciles Benchmark objects.
type Reconciler struct {
	client.Client
	// APIReader reads the Benchmark, its Jobs and their pods uncached: a step's outcome must never be taken from,
	// nor a step be created twice because of, a stale copy.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// EngineImage runs rdx-bench when neither the Benchmark nor the target names an image.
	EngineImage string
	// Logs reads rdx-bench's progress lines while a Job runs; nil leaves live progress out.
	Logs LogTailer
	// Poll is how often a running Job is looked at for progress.
	Poll time.Duration
}

// +kubebuilder:rbac:groups=rdx.dev,resources=benchmarks,verbs=get;list;watch
// +kubebuilder:rbac:groups=rdx.dev,resources=benchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rdx.dev,resources=benchmarks/finalizers,verbs=update
// +kubebuilder:rbac:groups=rdx.dev,resources=txclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile advances a Benchmark by at most one Job: it records the outcome of the current Job, starts the next one
// when its target is ready, and writes status. A finished Benchmark only keeps its results ConfigMap in place.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b rdxv1.Benchmark
	if err := r.APIReader.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // owner references let the garbage collector delete the Jobs and the ConfigMap
	}
	st := b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	steps := plan(&b)
	st.StepsTotal = int32(len(steps))

	var result ctrl.Result
	var stepErr error
	if !finished(st.Phase) {
		result, stepErr = r.advance(ctx, &b, st, steps)
	}
	if finished(st.Phase) && st.ResultsConfigMap == nil && stepErr == nil {
		stepErr = r.writeResults(ctx, &b, st)
	}
	if stepErr != nil {
		r.Recorder.Eventf(&b, nil, corev1.EventTypeWarning, "ReconcileFailed", "Reconcile", "%v", stepErr)
	}
	if !equality.Semantic.DeepEqual(st, &b.Status) {
		if err := r.applier().Status(ctx, &b, st); apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("status: %w", err)
		}
		r.reportTransition(&b, st)
	}
	return result, stepErr
}

func finished(p rdxv1.BenchmarkPhase) bool {
	return p == rdxv1.BenchmarkSucceeded || p == rdxv1.BenchmarkFailed
}

// advance runs the step machine: every finished Job is recorded and the next one started, until a Job is running,
// a target is not ready, or the Benchmark finished.
func (r *Reconciler) advance(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus, steps []step) (ctrl.Result, error) {
	poll := ctrl.Result{RequeueAfter: r.poll()}
	for int(st.StepsDone) < len(steps) {
		index := int(st.StepsDone)
		s := steps[index]
		var j batchv1.Job
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: s.jobName(b)}, &j)
		switch {
		case apierrors.IsNotFound(err):
			return r.start(ctx, b, st, s, index, len(steps))
		case err != nil:
			return ctrl.Result{}, err
		}
		if !metav1.IsControlledBy(&j, b) {
			fail(st, "JobConflict", fmt.Sprintf("Job %s exists and is not controlled by this Benchmark", j.Name))
			return ctrl.Result{}, nil
		}
		switch jobOutcome(&j) {
		case jobRunning:
			r.observeRunning(ctx, b, st, s, index, len(steps), &j)
			return poll, nil
		case jobFailed:
			r.recordFailure(ctx, b, st, s, &j)
			return ctrl.Result{}, nil
		}
		if err := r.recordSuccess(ctx, b, st, s, &j); err != nil {
			return ctrl.Result{}, err
		}
	}
	succeed(st)
	return ctrl.Result{}, nil
}

// start creates the Job of a step once its target exists and is Ready.
func (r *Reconciler) start(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus, s step, index, total int) (ctrl.Result, error) {
	ref := b.Spec.Targets[s.target]
	var c rdxv1.TxCluster
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}, &c)
	switch {
	case apierrors.IsNotFound(err):
		waitFor(st, "TargetNotFound", fmt.Sprintf("TxCluster %s does not exist in namespace %s", ref.Name, b.Namespace))
		return ctrl.Result{}, nil // the TxCluster watch brings the Benchmark back when it appears
	case err != nil:
		return ctrl.Result{}, err
	case !meta.IsStatusConditionTrue(c.Status.Conditions, rdxv1.ConditionReady):
		waitFor(st, "TargetNotReady", fmt.Sprintf("waiting for TxCluster %s to be Ready", ref.Name))
		return ctrl.Result{}, nil
	}
	if why := unsupportedBy(&b.Spec, &c); why != "" {
		fail(st, "TargetUnsupported", why)
		return ctrl.Result{}, nil
	}
	spec, err := effectiveSpec(b, s)
	if err != nil {
		fail(st, "InvalidSweep", err.Error())
		return ctrl.Result{}, nil
	}
	image := b.Spec.Image
	if image == "" {
		image = c.Spec.Image
	}
	if image == "" {
		image = r.EngineImage
	}
	ac := job(b, s, &c, image, benchArgs(spec, s, r.ledgerBase(b, st, s)))
	if err := r.applier().Owned(ctx, b, ac, ac.ObjectMetaApplyConfiguration, &batchv1.Job{}); err != nil {
		return ctrl.Result{}, err
	}
	if st.StartTime == nil {
		now := metav1.Now()
		st.StartTime = &now
	}
	running(st, s, s.describe(b, index, total))
	return ctrl.Result{RequeueAfter: r.poll()}, nil
}

// ledgerBase is the balance delta the earlier runs committed on the data this Benchmark loaded into the step's
// target (the runs of the same sweep value, when every value loads its own data); nil when the Benchmark did not
// load it.
func (r *Reconciler) ledgerBase(b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus, s step) *int64 {
	if s.phase != rdxv1.BenchmarkRun || !hasPhase(b, rdxv1.BenchmarkLoad) || b.Spec.Workload.Type == rdxv1.WorkloadKV {
		return nil
	}
	var base int64
	for _, res := range st.Results {
		if res.Target == b.Spec.Targets[s.target].Name && (!reloadsPerPoint(b) || res.SweepValue == s.sweepValue(b)) {
			base += res.BalanceDelta
		}
	}
	return &base
}

func (r *Reconciler) poll() time.Duration {
	if r.Poll > 0 {
		return r.Poll
	}
	return 2 * time.Second
}

func (r *Reconciler) applier() *apply.Applier {
	return &apply.Applier{Client: r.Client, Recorder: r.Recorder}
}

// reportTransition records an event when the Benchmark finished.
func (r *Reconciler) reportTransition(b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus) {
	if st.Phase == b.Status.Phase || !finished(st.Phase) {
		return
	}
	cond := meta.FindStatusCondition(st.Conditions, rdxv1.ConditionReady)
	msg := ""
	if cond != nil {
		msg = cond.Message
	}
	if st.Phase == rdxv1.BenchmarkSucceeded {
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "Succeeded", "Run", "%s", msg)
	} else {
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, "Failed", "Run", "%s", msg)
	}
}

// SetupWithManager registers the controller: Benchmarks, their Jobs, and TxClusters (a Benchmark waiting for its
// target starts when the target appears or becomes Ready).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	targetToBenchmarks := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
		var list rdxv1.BenchmarkList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var reqs []ctrl.Request
		for _, b := range list.Items {
			if finished(b.Status.Phase) {
				continue
			}
			for _, t := range b.Spec.Targets {
				if t.Name == o.GetName() {
					reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
					break
				}
			}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("benchmark").
		For(&rdxv1.Benchmark{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&rdxv1.TxCluster{}, targetToBenchmarks).
		Complete(r)
}

// unsupportedBy says why target c cannot run the workload, "" when it can: a transactional workload needs a
// transaction protocol, and incr and cas writes need a replication protocol that offers read-modify-writes (abd
// offers reads and plain writes only). Refused before any Job starts, instead of a run failing on every operation.
func unsupportedBy(spec *rdxv1.BenchmarkSpec, c *rdxv1.TxCluster) string {
	if spec.Workload.Type != rdxv1.WorkloadKV {
		if c.Spec.Transactions.Protocol == rdxv1.ProtocolNone {
			return fmt.Sprintf("workload %s runs transactions and TxCluster %s runs none (transactions.protocol none)",
				spec.Workload.Type, c.Name)
		}
		return ""
	}
	if kv := spec.Workload.KV; kv != nil && c.Spec.Replication.Protocol == rdxv1.ReplicationABD &&
		(slices.Contains(kv.WriteMix, "incr") || slices.Contains(kv.WriteMix, "cas")) {
		return fmt.Sprintf("kv.writeMix %v needs read-modify-writes, and TxCluster %s replicates with abd, which offers "+
			"reads and plain writes only", kv.WriteMix, c.Name)
	}
	return ""
}
