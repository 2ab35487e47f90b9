// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
	"github.com/rdx-dev/rdx/operator/internal/engine"
)

const (
	// LabelBenchmark names the Benchmark a Job and its pod belong to.
	LabelBenchmark = "rdx.dev/benchmark"
	// ComponentBenchmark is the app.kubernetes.io/component of benchmark Jobs.
	ComponentBenchmark = "benchmark"
	containerName      = "rdx-bench"
	// loadDeadline bounds a load Job; a run Job gets its duration plus runSlack (connecting, warm-up, fetching and
	// checking the history).
	loadDeadline = int64(6 * 3600)
	runSlack     = int64(900)
)

// jobLabels are the labels of a step's Job and pod; the pod's make it visible to the operator's cache.
func jobLabels(b *rdxv1.Benchmark, target string) map[string]string {
	l := apply.Labels(b, target)
	l[apply.LabelComponent] = ComponentBenchmark
	l[LabelBenchmark] = b.Name
	return l
}

// job builds the Job of one step against target c. rdx-bench reaches the cluster as a native client through the
// cluster's topology ConfigMap, and over RDMA with the same wiring as rdxd.
func job(b *rdxv1.Benchmark, s step, c *rdxv1.TxCluster, image string, args []string) *batchv1ac.JobApplyConfiguration {
	deadline := loadDeadline
	if s.phase == rdxv1.BenchmarkRun {
		deadline = int64(runDuration(&b.Spec).Seconds()) + runSlack
	}
	resources := b.Spec.Resources.DeepCopy()
	if len(resources.Requests) == 0 && len(resources.Limits) == 0 {
		resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	}
	for name, n := range engine.RDMAResources(c) {
		if resources.Requests == nil {
			resources.Requests = corev1.ResourceList{}
		}
		if resources.Limits == nil {
			resources.Limits = corev1.ResourceList{}
		}
		resources.Requests[name], resources.Limits[name] = n, n
	}
	res := &corev1ac.ResourceRequirementsApplyConfiguration{}
	if len(resources.Requests) > 0 {
		res.WithRequests(resources.Requests)
	}
	if len(resources.Limits) > 0 {
		res.WithLimits(resources.Limits)
	}

	ctr := corev1ac.Container().
		WithName(containerName).
		WithImage(image).
		WithImagePullPolicy(c.Spec.ImagePullPolicy).
		WithCommand("rdx-bench").
		WithArgs(args...).
		WithResources(res).
		// rdx-bench writes its summary to the termination message; when it dies before that, the log's tail is
		// the message, so a failed Job always explains itself.
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(engine.VolumeTopology).WithMountPath(topologyDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("work").WithMountPath(workDir))
	volumes := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(engine.VolumeTopology).WithConfigMap(corev1ac.ConfigMapVolumeSource().
			WithName(engine.TopologyName(c)).
			WithItems(corev1ac.KeyToPath().WithKey(engine.TopologyKey).WithPath(engine.TopologyKey))),
		corev1ac.Volume().WithName("work").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
	}
	pod := corev1ac.PodSpec().WithRestartPolicy(corev1.RestartPolicyNever).WithEnableServiceLinks(false)
	if sc := engine.RDMASecurityContext(c); sc != nil {
		ctr.WithSecurityContext(sc)
	} else {
		ctr.WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
		pod.WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).WithRunAsUser(65532).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	}
	if v, m := engine.RDMADevicesVolume(c); v != nil {
		volumes = append(volumes, v)
		ctr.WithVolumeMounts(m)
	}
	if engine.OnHostNetwork(c) {
		pod.WithHostNetwork(true).WithDNSPolicy(corev1.DNSClusterFirstWithHostNet)
	}
	for _, ref := range c.Spec.PodTemplate.ImagePullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(ref.Name))
	}
	pod.WithContainers(ctr).WithVolumes(volumes...)

	labels := jobLabels(b, c.Name)
	return batchv1ac.Job(s.jobName(b), b.Namespace).
		WithLabels(labels).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(0).
			WithActiveDeadlineSeconds(deadline).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithAnnotations(engine.MultusAnnotations(c)).
				WithSpec(pod)))
}
