// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// ownerReference makes the TxCluster the controller of an object, so deleting the TxCluster deletes it.
func ownerReference(c *rdxv1.TxCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(rdxv1.GroupVersion.String()).
		WithKind("TxCluster").
		WithName(c.Name).
		WithUID(c.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

func topologyConfigMap(c *rdxv1.TxCluster, data, resourceVersion string) *corev1ac.ConfigMapApplyConfiguration {
	cm := corev1ac.ConfigMap(topologyName(c), c.Namespace).
		WithLabels(commonLabels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithData(map[string]string{TopologyKey: data})
	if resourceVersion != "" {
		// The epoch was derived from this version; a concurrent writer makes the apply fail instead of reusing it.
		cm.WithResourceVersion(resourceVersion)
	}
	return cm
}

func servicePort(name string, port int32, target string) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().WithName(name).WithProtocol(corev1.ProtocolTCP).
		WithPort(port).WithTargetPort(intstr.FromString(target))
}

// headlessService gives every pod a stable DNS name; it publishes unready pods because peers must find each other
// before any of them can pass /readyz.
func headlessService(c *rdxv1.TxCluster) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(headlessName(c), c.Namespace).
		WithLabels(commonLabels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(dataSelector(c)).
			WithPorts(
				servicePort("transport", TransportPort, "transport"),
				servicePort("redis", RedisPort, "redis"),
				servicePort("http", HTTPPort, "http"),
			))
}

// endpointServices are <name> (every data node serves the Redis protocol and routes keys to their shard),
// <name>-rw (the shard primaries: ordinal 0 of every shard) and <name>-ro (read replicas of ReplicaSet objects).
func endpointServices(c *rdxv1.TxCluster) []*corev1ac.ServiceApplyConfiguration {
	port := c.Spec.Endpoint.Port
	endpoint := corev1ac.Service(endpointName(c), c.Namespace).
		WithLabels(commonLabels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(c.Spec.Endpoint.ServiceType).
			WithSelector(dataSelector(c)).
			WithPorts(servicePort("redis", port, "redis")))
	if len(c.Spec.Endpoint.Annotations) > 0 {
		endpoint.WithAnnotations(c.Spec.Endpoint.Annotations)
	}
	writers := corev1ac.Service(writersName(c), c.Namespace).
		WithLabels(commonLabels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(mergeMaps(dataSelector(c), map[string]string{LabelPodIndex: "0"})).
			WithPorts(servicePort("redis", port, "redis")))
	readers := corev1ac.Service(readersName(c), c.Namespace).
		WithLabels(commonLabels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(map[string]string{LabelCluster: c.Name, LabelRole: RoleRO}).
			WithPorts(servicePort("redis", port, "redis")))
	return []*corev1ac.ServiceApplyConfiguration{endpoint, writers, readers}
}

// statefulSet runs one shard. Pods start in parallel (peers must see each other to become ready) and roll one at
// a time for changes rdxd survives; the reconciler restarts them together for changes it does not.
func statefulSet(c *rdxv1.TxCluster, image string, shard int32, restartHash string) (*appsv1ac.StatefulSetApplyConfiguration, error) {
	tmpl, err := podTemplate(c, image, shard, restartHash)
	if err != nil {
		return nil, err
	}
	return appsv1ac.StatefulSet(statefulSetName(c, shard), c.Namespace).
		WithLabels(shardLabels(c, shard)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(c.Spec.Replicas).
			WithServiceName(headlessName(c)).
			WithPodManagementPolicy(appsv1.ParallelPodManagement).
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType)).
			WithRevisionHistoryLimit(5).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(shardSelector(c, shard))).
			WithTemplate(tmpl)), nil
}

// podDisruptionBudget allows one voluntary disruption at a time over the whole cluster, so a drain never takes
// two replicas of a shard and waits while any replica is unready.
func podDisruptionBudget(c *rdxv1.TxCluster) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(pdbName(c), c.Namespace).
		WithLabels(commonLabels(c)).
		WithOwnerReferences(ownerReference(c)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(dataSelector(c))))
}
