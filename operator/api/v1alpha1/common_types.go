// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1

// Condition types shared by the kinds of this package (metav1.Condition.Type).
const (
	// ConditionReady is True when the object does what its spec asks: for a TxCluster, every replica of every shard
	// runs the current configuration and passes rdxd's /readyz.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the operator or Kubernetes is moving the object towards its spec
	// (pods being created, rolled or restarted for a new epoch).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs attention: a reconcile step failed, or pods fail to start,
	// crash, cannot be scheduled, or stay unready longer than the operator's --degraded-after.
	ConditionDegraded = "Degraded"
	// ConditionWritable is True when the primary of every shard of a TxCluster runs the current configuration and
	// passes /readyz. False names the shards whose primary does not: their keys refuse writes (and transactions that
	// write them) until that pod is back, since rdxd does not promote a backup.
	ConditionWritable = "Writable"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretKeyReference selects one key of a Secret in the same namespace.
type SecretKeyReference struct {
	// name of the Secret, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key inside the Secret's data.
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}
