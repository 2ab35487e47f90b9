// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package engine

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
)

// Volumes of the rdxd pod.
const (
	VolumeTopology  = "topology"
	VolumeAuth      = "auth"
	VolumeHugepages = "hugepages"
	VolumeDevices   = "infiniband"
)

const defaultGracePeriod = int64(30)

// PodTemplate builds the pod template of one shard's StatefulSet: the rdxd container per the container contract,
// plus the RDMA wiring of spec.transport.rdma and huge pages.
func PodTemplate(c *rdxv1.TxCluster, image string, shard int32, restartHash string) (*corev1ac.PodTemplateSpecApplyConfiguration, error) {
	s := &c.Spec
	annotations := map[string]string{}
	maps.Copy(annotations, s.PodTemplate.Annotations)
	maps.Copy(annotations, MultusAnnotations(c))
	annotations[AnnotationRestartHash] = restartHash

	container, err := rdxdContainer(c, image, PortsOf(c, shard))
	if err != nil {
		return nil, err
	}
	spec := corev1ac.PodSpec().
		WithContainers(container).
		WithVolumes(podVolumes(c)...).
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(ptr.Deref(s.PodTemplate.TerminationGracePeriodSeconds, defaultGracePeriod))
	if s.PodTemplate.ServiceAccountName != "" {
		spec.WithServiceAccountName(s.PodTemplate.ServiceAccountName)
	}
	for _, ref := range s.PodTemplate.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(ref.Name))
	}
	if OnHostNetwork(c) {
		spec.WithHostNetwork(true).WithDNSPolicy(corev1.DNSClusterFirstWithHostNet)
	}
	if err := applyScheduling(spec, c, shard); err != nil {
		return nil, err
	}
	if s.PodTemplate.SecurityContext != nil {
		spec.SecurityContext = &corev1ac.PodSecurityContextApplyConfiguration{}
		if err := apply.Convert(s.PodTemplate.SecurityContext, spec.SecurityContext); err != nil {
			return nil, fmt.Errorf("podTemplate.securityContext: %w", err)
		}
	}
	labels := map[string]string{}
	maps.Copy(labels, s.PodTemplate.Labels)
	maps.Copy(labels, ShardLabels(c, shard))
	return corev1ac.PodTemplateSpec().
		WithLabels(labels).
		WithAnnotations(annotations).
		WithSpec(spec), nil
}

func rdxdContainer(c *rdxv1.TxCluster, image string, ports NodePorts) (*corev1ac.ContainerApplyConfiguration, error) {
	s := &c.Spec
	ctr := corev1ac.Container().
		WithName(ContainerName).
		WithImage(image).
		WithImagePullPolicy(s.ImagePullPolicy).
		WithCommand("rdxd").
		WithArgs("--config", ConfigDir+"/"+TopologyKey, "--node", "$(POD_NAME)").
		WithEnv(
			corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
			corev1ac.EnvVar().WithName("POD_NAMESPACE").WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.namespace"))),
		).
		WithPorts(
			corev1ac.ContainerPort().WithName("transport").WithContainerPort(ports.Transport).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("redis").WithContainerPort(ports.Redis).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("http").WithContainerPort(ports.HTTP).WithProtocol(corev1.ProtocolTCP),
		).
		WithReadinessProbe(httpProbe("/readyz", 5, 3, 0)).
		WithLivenessProbe(httpProbe("/healthz", 10, 3, 10)).
		WithVolumeMounts(volumeMounts(c)...)
	for i := range s.PodTemplate.Env {
		env := &corev1ac.EnvVarApplyConfiguration{}
		if err := apply.Convert(&s.PodTemplate.Env[i], env); err != nil {
			return nil, fmt.Errorf("podTemplate.env[%d]: %w", i, err)
		}
		ctr.WithEnv(env)
	}

	res, err := containerResources(c)
	if err != nil {
		return nil, err
	}
	ctr.WithResources(res)

	if sc := RDMASecurityContext(c); sc != nil {
		ctr.WithSecurityContext(sc)
	}
	return ctr, nil
}

// RDMASecurityContext is the security context of a container that registers memory with the cluster's RDMA
// devices (rdxd, and rdx-bench as a native client); nil without RDMA.
func RDMASecurityContext(c *rdxv1.TxCluster) *corev1ac.SecurityContextApplyConfiguration {
	rdma := &c.Spec.Transport.RDMA
	if rdma.Mode == rdxv1.RDMANone {
		return nil
	}
	// IPC_LOCK lets the process pin registered memory beyond RLIMIT_MEMLOCK, which Kubernetes cannot raise. The
	// kernel gives a non-root process no effective capabilities (runtimes set no ambient ones), so the image's
	// non-root user would keep only the runtime's memlock limit (often 8 MiB) and ibv_reg_mr of the arena
	// fails: the container runs as uid 0 with every capability dropped but IPC_LOCK (or privileged).
	sc := corev1ac.SecurityContext().WithRunAsUser(0).WithRunAsNonRoot(false)
	if rdma.Mode == rdxv1.RDMAHostDevice && ptr.Deref(rdma.Privileged, true) {
		sc.WithPrivileged(true).WithCapabilities(corev1ac.Capabilities().WithAdd("IPC_LOCK"))
	} else {
		sc.WithCapabilities(corev1ac.Capabilities().WithDrop("ALL").WithAdd("IPC_LOCK"))
	}
	return sc
}

// RDMAResources are the device resources a pod of the cluster requests (requests equal limits); empty without a
// device plugin.
func RDMAResources(c *rdxv1.TxCluster) corev1.ResourceList {
	rdma := &c.Spec.Transport.RDMA
	out := corev1.ResourceList{}
	if rdma.Mode == rdxv1.RDMASharedDevice || rdma.Mode == rdxv1.RDMASRIOV {
		out[corev1.ResourceName(rdma.ResourceName)] = *resource.NewQuantity(int64(ptr.Deref(rdma.ResourceCount, 1)), resource.DecimalSI)
	}
	return out
}

// RDMADevicesVolume mounts the host's /dev/infiniband (hostDevice mode); nil otherwise.
func RDMADevicesVolume(c *rdxv1.TxCluster) (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	if c.Spec.Transport.RDMA.Mode != rdxv1.RDMAHostDevice {
		return nil, nil
	}
	return corev1ac.Volume().WithName(VolumeDevices).WithHostPath(corev1ac.HostPathVolumeSource().
			WithPath(InfinibandDir).WithType(corev1.HostPathDirectory)),
		corev1ac.VolumeMount().WithName(VolumeDevices).WithMountPath(InfinibandDir)
}

// MultusAnnotations attach the cluster's secondary (RDMA) networks to a pod.
func MultusAnnotations(c *rdxv1.TxCluster) map[string]string {
	if nets := c.Spec.Transport.RDMA.Networks; len(nets) > 0 {
		return map[string]string{AnnotationMultusNetworks: strings.Join(nets, ",")}
	}
	return map[string]string{}
}

// containerResources adds the RDMA device resource, huge pages and, when the user set no memory request or limit,
// the memory rdxd needs to the user's resources. Extended resources and huge pages must have requests equal to limits.
func containerResources(c *rdxv1.TxCluster) (*corev1ac.ResourceRequirementsApplyConfiguration, error) {
	requests := c.Spec.Resources.Requests.DeepCopy()
	limits := c.Spec.Resources.Limits.DeepCopy()
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for name, n := range RDMAResources(c) {
		requests[name] = n
		limits[name] = n
	}
	if _, req := requests[corev1.ResourceMemory]; !req {
		if _, lim := limits[corev1.ResourceMemory]; !lim {
			requests[corev1.ResourceMemory] = memoryNeed(c)
		}
	}
	if hp := &c.Spec.Transport.Hugepages; hp.Enabled {
		if hp.Size == nil {
			return nil, fmt.Errorf("transport.hugepages.size is required when hugepages are enabled")
		}
		requests[HugepagesRes] = hp.Size.DeepCopy()
		limits[HugepagesRes] = hp.Size.DeepCopy()
	}
	res := corev1ac.ResourceRequirements()
	if len(requests) > 0 {
		res.WithRequests(requests)
	}
	if len(limits) > 0 {
		res.WithLimits(limits)
	}
	return res, nil
}

// memoryNeed is the memory an rdxd container uses: its store (unless it lives on huge pages) and its process memory.
func memoryNeed(c *rdxv1.TxCluster) resource.Quantity {
	mb := int64(MemoryOverheadMB)
	if !c.Spec.Transport.Hugepages.Enabled {
		mb += int64(StoreMemoryMB(c))
	}
	return *resource.NewQuantity(mb<<20, resource.BinarySI)
}

func podVolumes(c *rdxv1.TxCluster) []*corev1ac.VolumeApplyConfiguration {
	s := &c.Spec
	// The whole directory is mounted (no subPath) so kubelet refreshes the file when the ConfigMap changes and a
	// container restarted in place reads the current topology.
	vols := []*corev1ac.VolumeApplyConfiguration{
		corev1ac.Volume().WithName(VolumeTopology).WithConfigMap(corev1ac.ConfigMapVolumeSource().
			WithName(TopologyName(c)).
			WithItems(corev1ac.KeyToPath().WithKey(TopologyKey).WithPath(TopologyKey))),
	}
	if ref := s.Endpoint.AuthSecretRef; ref != nil {
		vols = append(vols, corev1ac.Volume().WithName(VolumeAuth).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(ref.Name).WithDefaultMode(0o400).
			WithItems(corev1ac.KeyToPath().WithKey(ref.Key).WithPath(ref.Key))))
	}
	if s.Transport.Hugepages.Enabled {
		vols = append(vols, corev1ac.Volume().WithName(VolumeHugepages).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
			WithMedium(corev1.StorageMediumHugePagesPrefix+"2Mi")))
	}
	if v, _ := RDMADevicesVolume(c); v != nil {
		vols = append(vols, v)
	}
	return vols
}

func volumeMounts(c *rdxv1.TxCluster) []*corev1ac.VolumeMountApplyConfiguration {
	s := &c.Spec
	mounts := []*corev1ac.VolumeMountApplyConfiguration{
		corev1ac.VolumeMount().WithName(VolumeTopology).WithMountPath(ConfigDir).WithReadOnly(true),
	}
	if s.Endpoint.AuthSecretRef != nil {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(VolumeAuth).WithMountPath(AuthDir).WithReadOnly(true))
	}
	if s.Transport.Hugepages.Enabled {
		mounts = append(mounts, corev1ac.VolumeMount().WithName(VolumeHugepages).WithMountPath(HugepagesDir))
	}
	if _, m := RDMADevicesVolume(c); m != nil {
		mounts = append(mounts, m)
	}
	return mounts
}

func httpProbe(path string, period, failures, initialDelay int32) *corev1ac.ProbeApplyConfiguration {
	p := corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString("http"))).
		WithPeriodSeconds(period).
		WithTimeoutSeconds(2).
		WithFailureThreshold(failures)
	if initialDelay > 0 {
		p.WithInitialDelaySeconds(initialDelay)
	}
	return p
}

// applyScheduling copies spec.scheduling; without an affinity, replicas of a shard prefer distinct nodes.
func applyScheduling(spec *corev1ac.PodSpecApplyConfiguration, c *rdxv1.TxCluster, shard int32) error {
	sch := &c.Spec.Scheduling
	if len(sch.NodeSelector) > 0 {
		spec.WithNodeSelector(sch.NodeSelector)
	}
	if sch.PriorityClassName != "" {
		spec.WithPriorityClassName(sch.PriorityClassName)
	}
	if sch.Affinity != nil {
		spec.Affinity = &corev1ac.AffinityApplyConfiguration{}
		if err := apply.Convert(sch.Affinity, spec.Affinity); err != nil {
			return fmt.Errorf("scheduling.affinity: %w", err)
		}
	} else {
		spec.WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().
				WithWeight(100).
				WithPodAffinityTerm(corev1ac.PodAffinityTerm().
					WithTopologyKey(corev1.LabelHostname).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(ShardSelector(c, shard)))))))
	}
	for i := range sch.Tolerations {
		t := &corev1ac.TolerationApplyConfiguration{}
		if err := apply.Convert(&sch.Tolerations[i], t); err != nil {
			return fmt.Errorf("scheduling.tolerations[%d]: %w", i, err)
		}
		spec.WithTolerations(t)
	}
	for i := range sch.TopologySpreadConstraints {
		t := &corev1ac.TopologySpreadConstraintApplyConfiguration{}
		if err := apply.Convert(&sch.TopologySpreadConstraints[i], t); err != nil {
			return fmt.Errorf("scheduling.topologySpreadConstraints[%d]: %w", i, err)
		}
		spec.WithTopologySpreadConstraints(t)
	}
	return nil
}
