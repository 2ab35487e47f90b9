// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdx-dev/rdx/operator/internal/apply"
)

// CacheByObject limits the manager's informers for the kinds the reconciler owns or watches to objects the operator
// labelled. Everything the reconciler reads through the cache carries that label.
func CacheByObject() map[client.Object]cache.ByObject {
	return apply.ManagedOnly(&corev1.Pod{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.StatefulSet{},
		&policyv1.PodDisruptionBudget{})
}
