// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaSet is the schema of a set of read-only rdxd replicas (role ro) of one TxCluster. This rdx version has no
// ReplicaSet controller: the API server refuses to create ReplicaSet objects, so none exists and nothing acts on
// the fields below. The kind name clashes with apps/v1 ReplicaSet on purpose; use the short name `rors` or
// `replicasets.rdx.dev` with kubectl.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=rors,categories=rdx
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Consistency",type=string,JSONPath=`.spec.consistency`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Autoscaling",type=string,JSONPath=`.spec.autoscaling.metric`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="false",message="ReplicaSet objects are not acted upon by this rdx version yet (no ReplicaSet controller): it runs no read replicas; see operator/README.md"
type ReplicaSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired set of read replicas.
	// +required
	Spec ReplicaSetSpec `json:"spec"`
	// status is what the operator observed; written by the operator only.
	// +optional
	Status ReplicaSetStatus `json:"status,omitempty"`
}

// Consistency is the read consistency a read replica offers (PolarDB-SCC policies).
// +kubebuilder:validation:Enum=strong;readWait;stale
type Consistency string

// Consistency values.
const (
	// ConsistencyStrong: a read sees every write committed before it started (checks the modification tracker).
	ConsistencyStrong Consistency = "strong"
	// ConsistencyReadWait: a read waits until the replica has applied the log up to the read's timestamp.
	ConsistencyReadWait Consistency = "readWait"
	// ConsistencyStale: a read returns what the replica has applied, possibly behind the primary.
	ConsistencyStale Consistency = "stale"
)

// ReplicaSetSpec is the desired state of a ReplicaSet.
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || self.autoscaling.metric != 'cpuUtilization' || (has(self.resources) && has(self.resources.requests) && 'cpu' in self.resources.requests)",message="autoscaling on cpuUtilization needs resources.requests.cpu (utilization is measured against it)",fieldPath=".resources"
type ReplicaSetSpec struct {
	// clusterRef names the TxCluster (same namespace) whose data the replicas follow. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable: create a new ReplicaSet for another TxCluster"
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// replicas is the number of read replicas; the scale subresource and the autoscaler write it.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Replicas int32 `json:"replicas"`

	// consistency of reads served by these replicas: strong (default), readWait or stale.
	// +optional
	// +kubebuilder:default=strong
	Consistency Consistency `json:"consistency,omitempty"`

	// autoscaling lets the operator scale replicas from rdxd's metrics, clamped into [minReplicas, maxReplicas].
	// Leave it unset when an external autoscaler (HorizontalPodAutoscaler, KEDA) drives the scale subresource.
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// resources of the rdxd container of each read replica.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// AutoscalingMetric is what the built-in autoscaler keeps at its target.
// +kubebuilder:validation:Enum=readsPerSecond;cpuUtilization;applyLagMilliseconds
type AutoscalingMetric string

// Autoscaling metrics.
const (
	// MetricReadsPerSecond: average reads per second per replica.
	MetricReadsPerSecond AutoscalingMetric = "readsPerSecond"
	// MetricCPUUtilization: average CPU use in percent of resources.requests.cpu.
	MetricCPUUtilization AutoscalingMetric = "cpuUtilization"
	// MetricApplyLagMilliseconds: how far the replicas' applied log trails the primaries, in milliseconds.
	MetricApplyLagMilliseconds AutoscalingMetric = "applyLagMilliseconds"
)

// AutoscalingSpec configures the built-in autoscaler.
// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="autoscaling.minReplicas must not exceed autoscaling.maxReplicas"
// +kubebuilder:validation:XValidation:rule="self.metric != 'cpuUtilization' || self.target <= 100",message="autoscaling.target is a percentage (1 to 100) for metric cpuUtilization",fieldPath=".target"
type AutoscalingSpec struct {
	// minReplicas is the lower bound of replicas.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	MinReplicas int32 `json:"minReplicas"`
	// maxReplicas is the upper bound of replicas.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxReplicas int32 `json:"maxReplicas"`
	// metric to keep at target, averaged over the replicas: readsPerSecond, cpuUtilization (percent of
	// resources.requests.cpu) or applyLagMilliseconds.
	// +required
	Metric AutoscalingMetric `json:"metric"`
	// target value of metric per replica; the autoscaler adds replicas above it and removes them well below it.
	// +required
	// +kubebuilder:validation:Minimum=1
	Target int64 `json:"target"`
}

// ReplicaSetStatus is what the operator observed.
type ReplicaSetStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// replicas is the number of read replica pods that exist (scale subresource statuspath).
	// +optional
	Replicas int32 `json:"replicas"`
	// readyReplicas is the number of read replicas that pass /readyz.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// selector is the label selector of the read replica pods in string form (scale subresource selectorpath),
	// which HorizontalPodAutoscaler and KEDA need.
	// +optional
	Selector string `json:"selector,omitempty"`
	// lastScaleTime is when replicas last changed.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// conditions: Ready, Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// ReplicaSetList is a list of ReplicaSet.
type ReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReplicaSet `json:"items"`
}
