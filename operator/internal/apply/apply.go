// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package apply writes what an rdx controller owns, for any owner kind: server-side apply of owned objects with one
// field manager and a controller owner reference, server-side apply of the owner's status, the labels every managed
// object carries, and the events and conditions that report it. Nothing here knows a particular rdx kind.
package apply

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// FieldManager owns every field the operator writes with server-side apply.
const FieldManager = "rdx-operator"

// Object is what every generated apply configuration (corev1ac.ConfigMap, appsv1ac.StatefulSet, ...) offers.
type Object interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetKind() *string
}

// Applier writes the objects of one owner and its status.
type Applier struct {
	// Client reads the existing objects (normally the manager's cache) and writes. Its scheme must know the
	// owner's kind: owner references and status patches take the owner's group, version and kind from it.
	Client client.Client
	// Recorder receives Created and Updated events about the owner.
	Recorder recorder.EventRecorder
}

// OwnerReference makes owner, of kind gvk, the controller of an object, so deleting the owner deletes the object
// through the garbage collector and the object cannot be deleted in the foreground before it.
func OwnerReference(owner metav1.Object, gvk schema.GroupVersionKind) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(owner.GetName()).
		WithUID(owner.GetUID()).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// Owned server-side applies ac, an object in owner's namespace whose metadata is m, with owner as its controller
// (Owned adds the owner reference; ac must not carry one), and records a Created or Updated event on owner when the
// object was created or changed. existing receives the cached object unless the caller already read it (non-empty
// resourceVersion); on return it names the applied version. An object of the same name controlled by anything
// else is left alone and reported as an error.
func (a *Applier) Owned(ctx context.Context, owner client.Object, ac Object, m *metav1ac.ObjectMetaApplyConfiguration,
	existing client.Object) error {
	gvk, err := a.Client.GroupVersionKindFor(owner)
	if err != nil {
		return err
	}
	name, kind := *ac.GetName(), *ac.GetKind()
	m.WithOwnerReferences(OwnerReference(owner, gvk))
	if existing.GetResourceVersion() == "" {
		err := a.Client.Get(ctx, types.NamespacedName{Namespace: owner.GetNamespace(), Name: name}, existing)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	before := existing.GetResourceVersion()
	if ctl := metav1.GetControllerOf(existing); before != "" && ctl != nil && ctl.UID != owner.GetUID() {
		return fmt.Errorf("%s %s exists and is controlled by %s %s; delete or rename it", kind, name, ctl.Kind, ctl.Name)
	}
	if err := a.Client.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", kind, name, err)
	}
	// existing now stands for the applied version; as the event's related object (name and resourceVersion) it
	// keeps events about different objects and versions from being folded into one series.
	existing.SetName(name)
	existing.SetNamespace(owner.GetNamespace())
	existing.SetUID(ptr.Deref(m.UID, ""))
	existing.SetResourceVersion(ptr.Deref(m.ResourceVersion, ""))
	switch {
	case before == "":
		a.Recorder.Eventf(owner, existing, corev1.EventTypeNormal, "Created", "Apply", "created %s %s", kind, name)
	case existing.GetResourceVersion() != before:
		a.Recorder.Eventf(owner, existing, corev1.EventTypeNormal, "Updated", "Apply", "updated %s %s", kind, name)
	}
	return nil
}

// Status server-side applies the whole status of owner (through its status subresource); status points to the
// owner kind's status struct. The operator is the only writer of status, so it takes every field over.
func (a *Applier) Status(ctx context.Context, owner client.Object, status any) error {
	gvk, err := a.Client.GroupVersionKindFor(owner)
	if err != nil {
		return err
	}
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return fmt.Errorf("status of %s %s: %w", gvk.Kind, owner.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": fields}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(owner.GetNamespace())
	u.SetName(owner.GetName())
	return a.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership)
}

// Convert turns a typed API value into its apply configuration, or an apply configuration (e.g. the response of an
// apply) into the typed object. Both share the JSON shape, so only fields set in `in` appear in `out`.
func Convert(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
