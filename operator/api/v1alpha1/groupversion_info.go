// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package v1alpha1 holds the rdx.dev/v1alpha1 API: TxCluster (a sharded, replicated, transactional rdx database) and
// Benchmark (rdx-bench experiments run as Jobs against TxClusters), which the operator acts upon, and the schema of
// ReplicaSet, which the API server refuses to create in this version (no controller acts upon it).
// The package depends only on k8s.io/api and k8s.io/apimachinery so clients can import it cheaply.
// +kubebuilder:object:generate=true
// +groupName=rdx.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every kind in this package.
const GroupName = "rdx.dev"

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&TxCluster{}, &TxClusterList{},
		&ReplicaSet{}, &ReplicaSetList{},
		&Benchmark{}, &BenchmarkList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
