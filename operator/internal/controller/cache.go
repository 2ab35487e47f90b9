// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheByObject limits the manager's informers for the kinds the reconciler owns or watches to objects the operator
// labelled, so the operator does not hold every pod, ConfigMap and Service of the cluster in memory. Everything
// the reconciler reads through the cache carries that label.
func CacheByObject() map[client.Object]cache.ByObject {
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   {Label: managed},
		&corev1.ConfigMap{}:             {Label: managed},
		&corev1.Service{}:               {Label: managed},
		&appsv1.StatefulSet{}:           {Label: managed},
		&policyv1.PodDisruptionBudget{}: {Label: managed},
	}
}
