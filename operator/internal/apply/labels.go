// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels every object the operator creates carries. Selectors use only rdx.dev/* labels, which never change for an
// object's lifetime (StatefulSet selectors are immutable).
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelCluster names the TxCluster an object belongs to.
	LabelCluster = "rdx.dev/cluster"

	// AppName is the value of app.kubernetes.io/name.
	AppName = "rdx"
	// ManagedBy is the value of app.kubernetes.io/managed-by.
	ManagedBy = FieldManager
)

// Labels marks an object created for owner on behalf of the TxCluster named cluster (for a TxCluster, its own name).
func Labels(owner metav1.Object, cluster string) map[string]string {
	return map[string]string{
		LabelName:      AppName,
		LabelInstance:  owner.GetName(),
		LabelManagedBy: ManagedBy,
		LabelCluster:   cluster,
	}
}

// ManagedOnly limits the manager's informers for the given kinds to objects the operator labelled, so the operator
// does not hold every pod, ConfigMap or Service of the cluster in memory. Everything a controller reads through the
// cache for these kinds must carry app.kubernetes.io/managed-by=rdx-operator.
func ManagedOnly(objs ...client.Object) map[client.Object]cache.ByObject {
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
	out := make(map[client.Object]cache.ByObject, len(objs))
	for _, o := range objs {
		out[o] = cache.ByObject{Label: managed}
	}
	return out
}
