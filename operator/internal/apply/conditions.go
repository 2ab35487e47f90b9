// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package apply

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// SetCondition sets the condition typ in conds to True (ok) or False at the given observed generation; its
// lastTransitionTime changes only when its status does.
func SetCondition(conds *[]metav1.Condition, generation int64, typ string, ok bool, reason, message string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}

// ReportReadyTransition records a Normal Ready event on owner when its Ready condition became True between before
// and after, and a Warning NotReady event when it stopped being True; each carries the new condition's message.
func (a *Applier) ReportReadyTransition(owner client.Object, before, after []metav1.Condition) {
	a.ReportTransition(owner, before, after, rdxv1.ConditionReady, "Ready", "NotReady")
}

// ReportTransition records a Normal event `became` when condition typ became True between before and after, and a
// Warning event `lost` when it stopped being True; each carries the new condition's message.
func (a *Applier) ReportTransition(owner client.Object, before, after []metav1.Condition, typ, became, lost string) {
	was := meta.IsStatusConditionTrue(before, typ)
	now := meta.FindStatusCondition(after, typ)
	switch {
	case now == nil:
	case !was && now.Status == metav1.ConditionTrue:
		a.Recorder.Eventf(owner, nil, corev1.EventTypeNormal, became, "Reconcile", "%s", now.Message)
	case was && now.Status != metav1.ConditionTrue:
		a.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, lost, "Reconcile", "%s", now.Message)
	}
}
