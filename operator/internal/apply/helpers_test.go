// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package apply

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

func TestLabels(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "bench-1"}
	got := Labels(owner, "db")
	want := map[string]string{
		"app.kubernetes.io/name": "rdx", "app.kubernetes.io/instance": "bench-1",
		"app.kubernetes.io/managed-by": "rdx-operator", "rdx.dev/cluster": "db",
	}
	if len(got) != len(want) {
		t.Fatalf("Labels = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestOwnerReference(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "ro", UID: "u-1"}
	ref := OwnerReference(owner, schema.GroupVersionKind{Group: "rdx.dev", Version: "v1alpha1", Kind: "ReplicaSet"})
	if *ref.APIVersion != "rdx.dev/v1alpha1" || *ref.Kind != "ReplicaSet" || *ref.Name != "ro" || *ref.UID != "u-1" ||
		!*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("OwnerReference = %+v", ref)
	}
	core := OwnerReference(owner, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if *core.APIVersion != "v1" {
		t.Errorf("core group apiVersion = %q, want v1", *core.APIVersion)
	}
}

// TestSetCondition: a condition's transition time moves only when its status changes.
func TestSetCondition(t *testing.T) {
	var conds []metav1.Condition
	SetCondition(&conds, 1, rdxv1.ConditionReady, false, "Waiting", "a")
	first := meta.FindStatusCondition(conds, rdxv1.ConditionReady)
	if first == nil || first.Status != metav1.ConditionFalse || first.ObservedGeneration != 1 || first.Message != "a" {
		t.Fatalf("conditions = %+v", conds)
	}
	first.LastTransitionTime = metav1.NewTime(time.Unix(1000, 0))
	SetCondition(&conds, 2, rdxv1.ConditionReady, false, "Waiting", "b")
	if c := conds[0]; c.LastTransitionTime.Unix() != 1000 || c.Message != "b" || c.ObservedGeneration != 2 {
		t.Errorf("same status: %+v, want the old transition time and the new message", c)
	}
	SetCondition(&conds, 2, rdxv1.ConditionReady, true, "Done", "c")
	if c := conds[0]; c.LastTransitionTime.Unix() == 1000 || c.Status != metav1.ConditionTrue || len(conds) != 1 {
		t.Errorf("status change: %+v", conds)
	}
}

func TestReportReadyTransition(t *testing.T) {
	ready := func(ok bool, msg string) []metav1.Condition {
		var conds []metav1.Condition
		SetCondition(&conds, 1, rdxv1.ConditionReady, ok, "R", msg)
		return conds
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "any-kind"}}
	for name, tc := range map[string]struct {
		before, after []metav1.Condition
		want          string
	}{
		"becomes ready":  {nil, ready(true, "all up"), "Normal Ready all up"},
		"was not ready":  {ready(false, "x"), ready(true, "all up"), "Normal Ready all up"},
		"stops ready":    {ready(true, "x"), ready(false, "1/3 down"), "Warning NotReady 1/3 down"},
		"stays ready":    {ready(true, "x"), ready(true, "y"), ""},
		"stays unready":  {ready(false, "x"), ready(false, "y"), ""},
		"no condition":   {ready(true, "x"), nil, ""},
		"unknown status": {nil, ready(false, "starting"), ""},
	} {
		a, rec := newFakeApplier()
		a.ReportReadyTransition(owner, tc.before, tc.after)
		if got := nextEvent(rec); got != tc.want {
			t.Errorf("%s: event %q, want %q", name, got, tc.want)
		}
	}
}

// TestConvert: a typed value becomes an apply configuration with only the fields it sets, and back.
func TestConvert(t *testing.T) {
	in := corev1.Toleration{Key: "rdma", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](5)}
	ac := &corev1ac.TolerationApplyConfiguration{}
	if err := Convert(&in, ac); err != nil {
		t.Fatal(err)
	}
	if *ac.Key != "rdma" || *ac.Operator != corev1.TolerationOpExists || *ac.TolerationSeconds != 5 || ac.Value != nil || ac.Effect != nil {
		t.Errorf("apply configuration = %+v", ac)
	}
	var back corev1.Toleration
	if err := Convert(ac, &back); err != nil {
		t.Fatal(err)
	}
	if back.Key != in.Key || back.Operator != in.Operator || *back.TolerationSeconds != 5 {
		t.Errorf("round trip = %+v, want %+v", back, in)
	}
}
