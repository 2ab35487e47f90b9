// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package apply

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

var env *testenv.Env

// TestMain runs these tests against a real kube-apiserver; without one (KUBEBUILDER_ASSETS unset) they fail.
func TestMain(m *testing.M) { testenv.Main(m, &env) }

// newApplier writes through the test API server and records events in memory.
func newApplier() (*Applier, *events.FakeRecorder) {
	a, rec := newFakeApplier()
	a.Client = env.Client
	return a, rec
}

// newFakeApplier has no client: for what only records events.
func newFakeApplier() (*Applier, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(100)
	return &Applier{Recorder: rec}, rec
}

// nextEvent returns the next recorded event, or "" when none was recorded.
func nextEvent(rec *events.FakeRecorder) string {
	select {
	case e := <-rec.Events:
		return e
	default:
		return ""
	}
}

func create(t *testing.T, o client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), o); err != nil {
		t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

// TestOwnedForAnyOwnerKind: a ConfigMap applied for owners of unrelated kinds (a core ServiceAccount and an rdx
// TxCluster) is controlled by that owner, with the owner's group, version and kind taken from the scheme, written
// by the operator's field manager, and reported by one event per creation or change.
func TestOwnedForAnyOwnerKind(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	owners := []struct {
		owner      client.Object
		apiVersion string
		kind       string
	}{
		{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: ns}}, "v1", "ServiceAccount"},
		{&rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}}, "rdx.dev/v1alpha1", "TxCluster"},
	}
	for _, o := range owners {
		t.Run(o.kind, func(t *testing.T) {
			create(t, o.owner)
			a, rec := newApplier()
			name := "owned-by-" + o.owner.GetName()
			configMap := func(value string) *corev1ac.ConfigMapApplyConfiguration {
				return corev1ac.ConfigMap(name, ns).WithLabels(Labels(o.owner, "db")).WithData(map[string]string{"k": value})
			}

			ac := configMap("1")
			applied := &corev1.ConfigMap{}
			if err := a.Owned(ctx, o.owner, ac, ac.ObjectMetaApplyConfiguration, applied); err != nil {
				t.Fatal(err)
			}
			if want := "Normal Created created ConfigMap " + name; nextEvent(rec) != want {
				t.Errorf("want event %q", want)
			}
			var cm corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
				t.Fatal(err)
			}
			if applied.GetUID() != cm.UID || applied.GetResourceVersion() != cm.ResourceVersion {
				t.Errorf("existing names uid %s version %s, the server has %s %s",
					applied.GetUID(), applied.GetResourceVersion(), cm.UID, cm.ResourceVersion)
			}
			ref := metav1.GetControllerOf(&cm)
			if ref == nil || ref.APIVersion != o.apiVersion || ref.Kind != o.kind || ref.Name != o.owner.GetName() ||
				ref.UID != o.owner.GetUID() || !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("controller reference %+v, want %s %s %s (%s) blocking owner deletion",
					ref, o.apiVersion, o.kind, o.owner.GetName(), o.owner.GetUID())
			}
			if cm.Labels[LabelManagedBy] != ManagedBy || cm.Labels[LabelInstance] != o.owner.GetName() {
				t.Errorf("labels %v", cm.Labels)
			}
			if !appliedBy(&cm, FieldManager, "") {
				t.Errorf("not applied by %s: %+v", FieldManager, cm.ManagedFields)
			}

			ac = configMap("1") // unchanged: no write, no event
			if err := a.Owned(ctx, o.owner, ac, ac.ObjectMetaApplyConfiguration, &corev1.ConfigMap{}); err != nil {
				t.Fatal(err)
			}
			if e := nextEvent(rec); e != "" {
				t.Errorf("unchanged apply recorded %q", e)
			}
			ac = configMap("2")
			if err := a.Owned(ctx, o.owner, ac, ac.ObjectMetaApplyConfiguration, &corev1.ConfigMap{}); err != nil {
				t.Fatal(err)
			}
			if want := "Normal Updated updated ConfigMap " + name; nextEvent(rec) != want {
				t.Errorf("want event %q", want)
			}
		})
	}
}

func appliedBy(o client.Object, manager, subresource string) bool {
	for _, m := range o.GetManagedFields() {
		if m.Operation == metav1.ManagedFieldsOperationApply && m.Manager == manager && m.Subresource == subresource {
			return true
		}
	}
	return false
}

// TestOwnedRefusesForeignController: an object of the same name controlled by another owner is not taken over and
// not changed; one without a controller is adopted.
func TestOwnedRefusesForeignController(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	owner := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "me", Namespace: ns}}
	create(t, owner)
	create(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "0000", Controller: ptr.To(true)}}},
		Data: map[string]string{"k": "theirs"},
	})
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "loose", Namespace: ns}})

	a, rec := newApplier()
	ac := corev1ac.ConfigMap("taken", ns).WithData(map[string]string{"k": "mine"})
	err := a.Owned(ctx, owner, ac, ac.ObjectMetaApplyConfiguration, &corev1.ConfigMap{})
	if want := "ConfigMap taken exists and is controlled by Deployment other; delete or rename it"; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "theirs" || len(cm.OwnerReferences) != 1 || appliedBy(&cm, FieldManager, "") {
		t.Errorf("foreign ConfigMap changed: data %v owners %+v", cm.Data, cm.OwnerReferences)
	}
	if e := nextEvent(rec); e != "" {
		t.Errorf("refusal recorded %q", e)
	}

	ac = corev1ac.ConfigMap("loose", ns).WithData(map[string]string{"k": "mine"})
	if err := a.Owned(ctx, owner, ac, ac.ObjectMetaApplyConfiguration, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("uncontrolled object: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "loose"}, &cm); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&cm); ref == nil || ref.UID != owner.UID || cm.Data["k"] != "mine" {
		t.Errorf("uncontrolled object not adopted: controller %+v data %v", ref, cm.Data)
	}
	if e := nextEvent(rec); e != "Normal Updated updated ConfigMap loose" {
		t.Errorf("adoption recorded %q", e)
	}
}

// TestStatusForAnyKind: the whole status of an rdx kind and of a built-in kind is written through the status
// subresource by the operator's field manager.
func TestStatusForAnyKind(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	a, _ := newApplier()

	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}}
	create(t, c)
	want := rdxv1.TxClusterStatus{ObservedGeneration: 1, Phase: rdxv1.PhasePending, Epoch: 3, Endpoint: "db:6379"}
	SetCondition(&want.Conditions, 1, rdxv1.ConditionReady, false, "Waiting", "no pod yet")
	if err := a.Status(ctx, c, &want); err != nil {
		t.Fatal(err)
	}
	got := &rdxv1.TxCluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Epoch != 3 || got.Status.Phase != rdxv1.PhasePending || len(got.Status.Conditions) != 1 ||
		got.Status.Conditions[0].Reason != "Waiting" || !appliedBy(got, FieldManager, "status") {
		t.Errorf("TxCluster status %+v (managed fields %+v)", got.Status, got.ManagedFields)
	}
	if got.Spec.Shards != 1 {
		t.Errorf("status apply changed the spec: %+v", got.Spec)
	}

	labels := map[string]string{"app": "x"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "sts", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
			},
		},
	}
	create(t, sts)
	if err := a.Status(ctx, sts, &appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		var cur appsv1.StatefulSet
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sts), &cur); err != nil {
			return err
		}
		if cur.Status.Replicas != 1 || cur.Status.ReadyReplicas != 1 || !appliedBy(&cur, FieldManager, "status") {
			return fmt.Errorf("StatefulSet status %+v", cur.Status)
		}
		return nil
	})

	missing := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns}}
	if err := a.Status(ctx, missing, &rdxv1.TxClusterStatus{}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("status of a missing object: %v, want not found", err)
	}
}
