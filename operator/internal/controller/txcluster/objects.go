// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
	"github.com/rdx-dev/rdx/operator/internal/engine"
)

// Names of the TxCluster's own objects; the names rdxd relies on (topology ConfigMap, headless Service,
// StatefulSets, pods) are in package engine.
func endpointName(c *rdxv1.TxCluster) string { return c.Name }
func writersName(c *rdxv1.TxCluster) string  { return c.Name + "-rw" }
func readersName(c *rdxv1.TxCluster) string  { return c.Name + "-ro" }
func pdbName(c *rdxv1.TxCluster) string      { return c.Name }

// The builders below return objects without owner references: apply.Applier.Owned makes the TxCluster their
// controller when it applies them.

// topologyConfigMap holds the topology file; read is the ConfigMap its epoch was derived from (empty if none).
func topologyConfigMap(c *rdxv1.TxCluster, data string, read *corev1.ConfigMap) *corev1ac.ConfigMapApplyConfiguration {
	cm := corev1ac.ConfigMap(engine.TopologyName(c), c.Namespace).
		WithLabels(apply.Labels(c, c.Name)).
		WithData(map[string]string{engine.TopologyKey: data})
	if read.ResourceVersion != "" {
		// The epoch was derived from this version: a concurrent writer makes the apply fail instead of reusing it,
		// and so does a concurrent deletion (the UID: an apply naming only a resourceVersion would recreate the
		// deleted ConfigMap at the old epoch, where the next pass must start one above it).
		cm.WithResourceVersion(read.ResourceVersion).WithUID(read.UID)
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
	return corev1ac.Service(engine.HeadlessName(c), c.Namespace).
		WithLabels(apply.Labels(c, c.Name)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(engine.DataSelector(c)).
			WithPorts(
				servicePort("transport", engine.TransportPort, "transport"),
				servicePort("redis", engine.RedisPort, "redis"),
				servicePort("http", engine.HTTPPort, "http"),
			))
}

// endpointServices are <name> (every data node serves the Redis protocol and routes keys to their shard),
// <name>-rw (ordinal 0 of every shard: the first primaries) and <name>-ro (pods of role ro; this version creates
// none, so it has no endpoints).
func endpointServices(c *rdxv1.TxCluster) []*corev1ac.ServiceApplyConfiguration {
	port := c.Spec.Endpoint.Port
	service := func(name string, typ corev1.ServiceType, selector map[string]string) *corev1ac.ServiceApplyConfiguration {
		return corev1ac.Service(name, c.Namespace).
			WithLabels(apply.Labels(c, c.Name)).
			WithSpec(corev1ac.ServiceSpec().
				WithType(typ).
				WithSelector(selector).
				WithPorts(servicePort("redis", port, "redis")))
	}
	endpoint := service(endpointName(c), c.Spec.Endpoint.ServiceType, engine.DataSelector(c))
	if len(c.Spec.Endpoint.Annotations) > 0 {
		endpoint.WithAnnotations(c.Spec.Endpoint.Annotations)
	}
	writers := service(writersName(c), corev1.ServiceTypeClusterIP, engine.PrimarySelector(c))
	readers := service(readersName(c), corev1.ServiceTypeClusterIP,
		map[string]string{apply.LabelCluster: c.Name, engine.LabelRole: engine.RoleRO})
	return []*corev1ac.ServiceApplyConfiguration{endpoint, writers, readers}
}

// statefulSet runs one shard. Pods start in parallel (peers must see each other to become ready) and roll one at
// a time for changes rdxd survives; the reconciler restarts them together for changes it does not.
func statefulSet(c *rdxv1.TxCluster, image string, shard, replicas int32, restartHash string) (*appsv1ac.StatefulSetApplyConfiguration, error) {
	tmpl, err := engine.PodTemplate(c, image, shard, restartHash)
	if err != nil {
		return nil, err
	}
	return appsv1ac.StatefulSet(engine.StatefulSetName(c, shard), c.Namespace).
		WithLabels(engine.ShardLabels(c, shard)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(replicas).
			WithServiceName(engine.HeadlessName(c)).
			WithPodManagementPolicy(appsv1.ParallelPodManagement).
			WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType)).
			WithRevisionHistoryLimit(5).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(engine.ShardSelector(c, shard))).
			WithTemplate(tmpl)), nil
}

// podDisruptionBudget allows one voluntary disruption at a time over the whole cluster, so a drain never takes
// two replicas of a shard and waits while any replica is unready.
func podDisruptionBudget(c *rdxv1.TxCluster) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(pdbName(c), c.Namespace).
		WithLabels(apply.Labels(c, c.Name)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(engine.DataSelector(c))))
}
