// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
	"github.com/rdx-dev/rdx/operator/internal/engine"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

// TestCreateTCPCluster: a default tcp cluster gets every object, owned by the TxCluster and applied by the
// operator's field manager, and a status that says nothing runs yet.
func TestCreateTCPCluster(t *testing.T) {
	c := createCluster(t, "db", func(c *rdxv1.TxCluster) { c.Spec.Shards = 2 })
	topo := waitTopology(t, c, 1)
	if len(topo.Shards) != 2 || len(topo.Nodes) != 6 || topo.Transport.Kind != "tcp" || topo.Txn.Protocol != "dnl4" ||
		topo.Replication.Protocol != "primary-backup" || topo.Transport.Primitives != "rpc" {
		t.Fatalf("topology = %+v", topo)
	}
	if want := fmt.Sprintf("db-s1-2.db-hl.%s.svc", c.Namespace); topo.Nodes[5].Host != want {
		t.Errorf("node host %q, want %q", topo.Nodes[5].Host, want)
	}

	sts := waitStatefulSet(t, c, 1, func(*appsv1.StatefulSet) error { return nil })
	if *sts.Spec.Replicas != 3 || sts.Spec.ServiceName != "db-hl" || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet spec: replicas %d, serviceName %q, policy %q", *sts.Spec.Replicas, sts.Spec.ServiceName, sts.Spec.PodManagementPolicy)
	}
	pod := sts.Spec.Template
	ctr := pod.Spec.Containers[0]
	if ctr.Image != testImage || ctr.ImagePullPolicy != corev1.PullIfNotPresent ||
		!slices.Equal(append(ctr.Command, ctr.Args...), []string{"rdxd", "--config", "/etc/rdx/topology.json", "--node", "$(POD_NAME)"}) {
		t.Errorf("container: image %q pull %q command %v args %v", ctr.Image, ctr.ImagePullPolicy, ctr.Command, ctr.Args)
	}
	if ctr.Env[0].Name != "POD_NAME" || ctr.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME must come from the downward API: %+v", ctr.Env[0])
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["transport"] != 7000 || ports["redis"] != 6379 || ports["http"] != 9100 {
		t.Errorf("ports = %v", ports)
	}
	if ctr.ReadinessProbe.HTTPGet.Path != "/readyz" || ctr.LivenessProbe.HTTPGet.Path != "/healthz" ||
		ctr.ReadinessProbe.HTTPGet.Port.StrVal != "http" {
		t.Errorf("probes: readiness %+v liveness %+v", ctr.ReadinessProbe.HTTPGet, ctr.LivenessProbe.HTTPGet)
	}
	if ctr.SecurityContext != nil {
		t.Errorf("tcp pods need no extra privileges, got %+v", ctr.SecurityContext)
	}
	if pod.Spec.Volumes[0].ConfigMap == nil || pod.Spec.Volumes[0].ConfigMap.Name != "db-topology" {
		t.Errorf("topology volume = %+v", pod.Spec.Volumes[0])
	}
	if pod.Annotations[engine.AnnotationRestartHash] != topo.RestartHash() {
		t.Errorf("pod template restart hash %q, topology's %q", pod.Annotations[engine.AnnotationRestartHash], topo.RestartHash())
	}
	if pod.Labels[engine.LabelShard] != "1" || pod.Labels[apply.LabelCluster] != "db" || pod.Labels[engine.LabelRole] != "data" {
		t.Errorf("pod labels = %v", pod.Labels)
	}

	var hl, endpoint, rw, ro corev1.Service
	var pdb policyv1.PodDisruptionBudget
	var cm corev1.ConfigMap
	var sts0 appsv1.StatefulSet
	owned := map[string]client.Object{"db-hl": &hl, "db": &endpoint, "db-rw": &rw, "db-ro": &ro}
	testenv.Eventually(t, wait, func() error {
		for name, o := range owned {
			if err := get(t, c, name, o); err != nil {
				return err
			}
		}
		if err := get(t, c, "db", &pdb); err != nil {
			return err
		}
		return get(t, c, "db-s0", &sts0)
	})
	if hl.Spec.ClusterIP != corev1.ClusterIPNone || !hl.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service: clusterIP %q publishNotReady %v", hl.Spec.ClusterIP, hl.Spec.PublishNotReadyAddresses)
	}
	if endpoint.Spec.Type != corev1.ServiceTypeClusterIP || endpoint.Spec.Ports[0].Port != 6379 {
		t.Errorf("endpoint Service: %s port %d", endpoint.Spec.Type, endpoint.Spec.Ports[0].Port)
	}
	if rw.Spec.Selector[engine.LabelPodIndex] != "0" || ro.Spec.Selector[engine.LabelRole] != engine.RoleRO {
		t.Errorf("selectors: rw %v ro %v", rw.Spec.Selector, ro.Spec.Selector)
	}
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels[apply.LabelCluster] != "db" {
		t.Errorf("PodDisruptionBudget spec = %+v", pdb.Spec)
	}
	if err := get(t, c, "db-topology", &cm); err != nil {
		t.Fatal(err)
	}
	// Deletion cascades through the garbage collector, which envtest lacks: every object must name the TxCluster
	// as its controlling owner.
	for _, o := range []client.Object{&hl, &endpoint, &rw, &ro, &pdb, &cm, &sts0, sts} {
		expectOwnedBy(t, o, c)
	}

	st := waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Phase != rdxv1.PhasePending || st.Epoch != 1 || st.Replicas != 6 || st.ReadyReplicas != 0 {
			return fmt.Errorf("status = %+v", st)
		}
		return conditionIs(st, rdxv1.ConditionProgressing, metav1.ConditionTrue, ReasonRollingOut)
	}).Status
	if st.Endpoint != fmt.Sprintf("db.%s.svc:6379", c.Namespace) || len(st.Shards) != 2 || st.Shards[1].Primary != "" {
		t.Errorf("status endpoint %q shards %+v", st.Endpoint, st.Shards)
	}
	if err := conditionIs(&st, rdxv1.ConditionReady, metav1.ConditionFalse, ReasonReplicasNotReady); err != nil {
		t.Error(err)
	}
	if err := conditionIs(&st, rdxv1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected); err != nil {
		t.Error(err)
	}
	waitEvent(t, c, "Created", "created StatefulSet db-s1")
	waitEvent(t, c, "Created", "created ConfigMap db-topology")
}

func expectOwnedBy(t *testing.T, o client.Object, c *rdxv1.TxCluster) {
	t.Helper()
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.UID != c.UID || ref.Kind != "TxCluster" || ref.APIVersion != "rdx.dev/v1alpha1" ||
		!ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("%T %s: controller owner %+v, want TxCluster %s (%s) blocking deletion", o, o.GetName(), ref, c.Name, c.UID)
	}
	for _, m := range o.GetManagedFields() {
		if m.Operation == metav1.ManagedFieldsOperationApply && m.Manager == apply.FieldManager {
			return
		}
	}
	t.Errorf("%T %s: not server-side applied by %s: %+v", o, o.GetName(), apply.FieldManager, o.GetManagedFields())
}

// TestRDMAModes: each wiring mode reaches the pod template and the topology.
func TestRDMAModes(t *testing.T) {
	memory := resource.MustParse("2Gi")
	cases := []struct {
		name   string
		rdma   rdxv1.RDMASpec
		huge   bool
		verify func(t *testing.T, pod *corev1.PodTemplateSpec, topo engine.Topology)
	}{
		{"shared", rdxv1.RDMASpec{Mode: rdxv1.RDMASharedDevice, ResourceName: "rdma/rdma_shared_device_a"}, true,
			func(t *testing.T, pod *corev1.PodTemplateSpec, topo engine.Topology) {
				expectResource(t, pod, "rdma/rdma_shared_device_a", "1")
				expectResource(t, pod, "hugepages-2Mi", "1Gi")
				expectVolume(t, pod, engine.VolumeHugepages, engine.HugepagesDir)
				if _, ok := pod.Annotations[engine.AnnotationMultusNetworks]; ok || topo.Transport.RDMAInterface != "" {
					t.Errorf("no Multus network asked for: annotation %q interface %q",
						pod.Annotations[engine.AnnotationMultusNetworks], topo.Transport.RDMAInterface)
				}
				if !topo.Transport.Hugepages {
					t.Error("topology transport.hugepages must be true")
				}
			}},
		{"sriov", rdxv1.RDMASpec{Mode: rdxv1.RDMASRIOV, ResourceName: "nvidia.com/sriov_rdma", ResourceCount: ptr.To[int32](2),
			Networks: []string{"sriov-rdma", "other/extra@net2"}, GIDIndex: ptr.To[int32](3)}, false,
			func(t *testing.T, pod *corev1.PodTemplateSpec, topo engine.Topology) {
				expectResource(t, pod, "nvidia.com/sriov_rdma", "2")
				if got := pod.Annotations[engine.AnnotationMultusNetworks]; got != "sriov-rdma,other/extra@net2" {
					t.Errorf("Multus annotation = %q", got)
				}
				if topo.Transport.RDMAInterface != "net1" || topo.Transport.GIDIndex != 3 || topo.Transport.Hugepages {
					t.Errorf("topology transport = %+v", topo.Transport)
				}
				if pod.Spec.Containers[0].SecurityContext.Privileged != nil {
					t.Error("sriov pods must not be privileged")
				}
			}},
		{"host", rdxv1.RDMASpec{Mode: rdxv1.RDMAHostDevice, HostNetwork: true, Device: "rxe0"}, false,
			func(t *testing.T, pod *corev1.PodTemplateSpec, topo engine.Topology) {
				expectVolume(t, pod, engine.VolumeDevices, engine.InfinibandDir)
				sc := pod.Spec.Containers[0].SecurityContext
				if !ptr.Deref(sc.Privileged, false) {
					t.Error("hostDevice pods run privileged by default")
				}
				if !pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
					t.Errorf("hostNetwork %v dnsPolicy %q", pod.Spec.HostNetwork, pod.Spec.DNSPolicy)
				}
				if topo.Transport.Device != "rxe0" {
					t.Errorf("topology device %q", topo.Transport.Device)
				}
			}},
		{"host-unprivileged", rdxv1.RDMASpec{Mode: rdxv1.RDMAHostDevice, Privileged: ptr.To(false)}, false,
			func(t *testing.T, pod *corev1.PodTemplateSpec, _ engine.Topology) {
				if pod.Spec.Containers[0].SecurityContext.Privileged != nil || pod.Spec.HostNetwork {
					t.Errorf("privileged %v hostNetwork %v", pod.Spec.Containers[0].SecurityContext.Privileged, pod.Spec.HostNetwork)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := createCluster(t, tc.name, func(c *rdxv1.TxCluster) {
				c.Spec.Transport.Kind = rdxv1.TransportVerbs
				c.Spec.Transport.RDMA = tc.rdma
				c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: memory}
				if tc.huge {
					c.Spec.Transport.Hugepages = rdxv1.HugepagesSpec{Enabled: true, Size: ptr.To(resource.MustParse("1Gi"))}
				}
			})
			topo := waitTopology(t, c, 1)
			if topo.Transport.Kind != "verbs" {
				t.Errorf("topology transport.kind = %q", topo.Transport.Kind)
			}
			sts := waitStatefulSet(t, c, 0, func(*appsv1.StatefulSet) error { return nil })
			ctr := sts.Spec.Template.Spec.Containers[0]
			if ctr.SecurityContext == nil || !slices.Contains(ctr.SecurityContext.Capabilities.Add, "IPC_LOCK") {
				t.Errorf("RDMA pods need IPC_LOCK: %+v", ctr.SecurityContext)
			}
			// A capability reaches a non-root process only as an ambient one, which no runtime sets.
			if sc := ctr.SecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, -1) != 0 {
				t.Errorf("RDMA pods must run as uid 0 for IPC_LOCK to take effect: %+v", sc)
			}
			if sc := ctr.SecurityContext; !ptr.Deref(sc.Privileged, false) && !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("unprivileged RDMA pods drop every other capability: %+v", sc.Capabilities)
			}
			if got := ctr.Resources.Limits[corev1.ResourceMemory]; got.Cmp(memory) != 0 {
				t.Errorf("user resources lost: memory limit %s", got.String())
			}
			tc.verify(t, &sts.Spec.Template, topo)
		})
	}
}

func expectResource(t *testing.T, pod *corev1.PodTemplateSpec, name, qty string) {
	t.Helper()
	r := pod.Spec.Containers[0].Resources
	want := resource.MustParse(qty)
	req, lim := r.Requests[corev1.ResourceName(name)], r.Limits[corev1.ResourceName(name)]
	if req.Cmp(want) != 0 || lim.Cmp(want) != 0 {
		t.Errorf("%s: request %s limit %s, want %s for both", name, req.String(), lim.String(), qty)
	}
}

func expectVolume(t *testing.T, pod *corev1.PodTemplateSpec, volume, mountPath string) {
	t.Helper()
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == volume && m.MountPath == mountPath {
			return
		}
	}
	t.Errorf("no volume %s mounted at %s: %+v", volume, mountPath, pod.Spec.Containers[0].VolumeMounts)
}

// TestStatusFollowsPods: Pending -> Updating -> Running as pods become ready, Degraded when one crash-loops.
func TestStatusFollowsPods(t *testing.T) {
	c := createCluster(t, "ready", func(c *rdxv1.TxCluster) { c.Spec.Replicas = 3 })
	waitTopology(t, c, 1)
	rolledOut(t, c, 0, 0)

	pods := []*corev1.Pod{createPod(t, c, 0, 0, true), createPod(t, c, 0, 1, false), createPod(t, c, 0, 2, false)}
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Phase != rdxv1.PhaseUpdating || st.ReadyReplicas != 1 || st.Shards[0].ReadyMembers != 1 {
			return fmt.Errorf("phase %s ready %d shards %+v", st.Phase, st.ReadyReplicas, st.Shards)
		}
		return conditionIs(st, rdxv1.ConditionProgressing, metav1.ConditionTrue, "")
	})

	setPodReady(t, pods[1], true)
	setPodReady(t, pods[2], true)
	rolledOut(t, c, 0, 3)
	cur := waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Phase != rdxv1.PhaseRunning || st.ReadyReplicas != 3 {
			return fmt.Errorf("phase %s ready %d", st.Phase, st.ReadyReplicas)
		}
		return conditionIs(st, rdxv1.ConditionReady, metav1.ConditionTrue, ReasonAllReplicasReady)
	})
	if err := conditionIs(&cur.Status, rdxv1.ConditionProgressing, metav1.ConditionFalse, ReasonRolloutComplete); err != nil {
		t.Error(err)
	}
	if s := cur.Status.Shards[0]; s.Primary != "ready-s0-0" || !s.PrimaryReady || s.ReadyMembers != 3 {
		t.Errorf("shard status = %+v", cur.Status.Shards[0])
	}
	if err := conditionIs(&cur.Status, rdxv1.ConditionWritable, metav1.ConditionTrue, ReasonPrimariesReady); err != nil {
		t.Error(err)
	}
	waitEvent(t, c, "Ready", "1 shards x 3 replicas ready at epoch 1")

	updatePodStatus(t, pods[2], func(p *corev1.Pod) {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: engine.ContainerName, RestartCount: 4, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}}}
	})
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Phase != rdxv1.PhaseDegraded || st.ReadyReplicas != 2 {
			return fmt.Errorf("phase %s ready %d", st.Phase, st.ReadyReplicas)
		}
		return conditionIs(st, rdxv1.ConditionDegraded, metav1.ConditionTrue, ReasonPodsFailing)
	})
	waitEvent(t, c, "NotReady", "shard 0: 2/3 ready")
	// A backup down: the shard still takes writes.
	if err := conditionIs(&waitStatus(t, c, func(*rdxv1.TxClusterStatus) error { return nil }).Status,
		rdxv1.ConditionWritable, metav1.ConditionTrue, ReasonPrimariesReady); err != nil {
		t.Error(err)
	}

	// The primary down: its keys refuse writes, and the status and an event say which shard and why.
	setPodReady(t, pods[0], false)
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Shards[0].PrimaryReady {
			return fmt.Errorf("shard %+v", st.Shards[0])
		}
		return conditionIs(st, rdxv1.ConditionWritable, metav1.ConditionFalse, ReasonPrimaryNotReady)
	})
	waitEvent(t, c, "PrimaryUnavailable",
		"shard 0: primary ready-s0-0 not ready (its keys refuse writes until it is back or another member is elected)")
	setPodReady(t, pods[0], true)
	waitEvent(t, c, "Writable", "the primaries of all 1 shards are ready")

	// A failover: the engine elected ready-s0-1 (view 1); the deposed primary, cut off, still says it is the
	// primary of view 0. The newest view wins, and the shard is writable again without ready-s0-0.
	engines.set(pods[1], engine.NodeState{Primary: true, View: 1})
	engines.set(pods[0], engine.NodeState{Primary: true, View: 0})
	setPodReady(t, pods[0], false)
	cur = waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if s := st.Shards[0]; s.Primary != "ready-s0-1" || s.View != 1 || !s.PrimaryReady {
			return fmt.Errorf("shard %+v", s)
		}
		return conditionIs(st, rdxv1.ConditionWritable, metav1.ConditionTrue, ReasonPrimariesReady)
	})
	waitEvent(t, c, "PrimaryChanged", "shard 0: ready-s0-1 is the primary (view 1); it was ready-s0-0")
	// No member says it is the primary (all of them unreachable): not writable, and why.
	for _, p := range pods {
		engines.fail(p, "connection refused")
	}
	setPodReady(t, pods[0], true)
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Shards[0].Primary != "" {
			return fmt.Errorf("shard %+v", st.Shards[0])
		}
		return conditionIs(st, rdxv1.ConditionWritable, metav1.ConditionFalse, ReasonPrimaryNotReady)
	})
	waitEvent(t, c, "PrimaryUnavailable", "shard 0: no member answered (ready-s0-0: connection refused")
}

// TestEndpointAndOverrides: endpoint settings, auth and pod overrides reach the objects.
func TestEndpointAndOverrides(t *testing.T) {
	c := createCluster(t, "ep", func(c *rdxv1.TxCluster) {
		c.Spec.Endpoint = rdxv1.EndpointSpec{
			ServiceType: corev1.ServiceTypeNodePort, Port: 16379, Annotations: map[string]string{"lb.test/x": "y"},
			AuthSecretRef: &rdxv1.SecretKeyReference{Name: "ep-auth", Key: "pw"},
		}
		c.Spec.PodTemplate = rdxv1.PodOverrides{
			Labels:      map[string]string{"team": "db", apply.LabelCluster: "hijack"},
			Annotations: map[string]string{"note": "x"},
			Env:         []corev1.EnvVar{{Name: "RDX_LOG", Value: "debug"}},
		}
		c.Spec.Scheduling.Tolerations = []corev1.Toleration{{Key: "rdma", Operator: corev1.TolerationOpExists}}
	})
	topo := waitTopology(t, c, 1)
	if topo.Auth.PasswordFile != "/etc/rdx/auth/pw" {
		t.Errorf("auth.password_file = %q", topo.Auth.PasswordFile)
	}
	var svc corev1.Service
	testenv.Eventually(t, wait, func() error { return get(t, c, "ep", &svc) })
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].Port != 16379 || svc.Annotations["lb.test/x"] != "y" {
		t.Errorf("endpoint Service = %s %+v %v", svc.Spec.Type, svc.Spec.Ports, svc.Annotations)
	}
	sts := waitStatefulSet(t, c, 0, func(*appsv1.StatefulSet) error { return nil })
	pod := &sts.Spec.Template
	expectVolume(t, pod, engine.VolumeAuth, engine.AuthDir)
	if pod.Labels["team"] != "db" || pod.Labels[apply.LabelCluster] != "ep" || pod.Annotations["note"] != "x" {
		t.Errorf("overrides: labels %v annotations %v", pod.Labels, pod.Annotations)
	}
	if env := pod.Spec.Containers[0].Env; env[len(env)-1].Name != "RDX_LOG" {
		t.Errorf("env = %+v", env)
	}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "rdma" {
		t.Errorf("tolerations = %+v", pod.Spec.Tolerations)
	}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("default anti-affinity missing: %+v", pod.Spec.Affinity)
	}

	updateCluster(t, c, func(c *rdxv1.TxCluster) { c.Spec.Endpoint.ServiceType = corev1.ServiceTypeClusterIP })
	testenv.Eventually(t, wait, func() error {
		if err := get(t, c, "ep", &svc); err != nil {
			return err
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].NodePort != 0 {
			return fmt.Errorf("endpoint Service %s nodePort %d", svc.Spec.Type, svc.Spec.Ports[0].NodePort)
		}
		return nil
	})
	if getCluster(t, c).Status.Epoch != 1 {
		t.Error("an endpoint change must not bump the epoch")
	}
}

// TestForeignObjectDegrades: an object in the way that another controller owns is not taken over; the cluster
// reports the failed step and an event.
func TestForeignObjectDegrades(t *testing.T) {
	ns := env.Namespace(t)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "taken-topology", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "someone", UID: "0000",
			Controller: ptr.To(true)}},
	}}
	if err := env.Client.Create(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns}}
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Phase != rdxv1.PhaseDegraded {
			return fmt.Errorf("phase %s", st.Phase)
		}
		return conditionIs(st, rdxv1.ConditionDegraded, metav1.ConditionTrue, ReasonReconcileFailed)
	})
	waitEvent(t, c, "TopologyFailed", "ConfigMap taken-topology exists and is controlled by ConfigMap someone")
}

// TestDeletion: deleting a TxCluster leaves nothing the operator must clean up itself (no finalizer); the garbage
// collector removes the owned objects, whose owner references TestCreateTCPCluster checks. The reconciler must
// not recreate anything for a deleted cluster.
func TestDeletion(t *testing.T) {
	c := createCluster(t, "gone", nil)
	waitTopology(t, c, 1)
	cur := getCluster(t, c)
	if len(cur.Finalizers) != 0 {
		t.Errorf("finalizers %v would block deletion without the operator", cur.Finalizers)
	}
	if err := env.Client.Delete(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		// Until its cache sees the deletion the reconciler may legitimately apply once more (the garbage
		// collector then removes what it wrote); from then on it must not.
		err := cached.Get(context.Background(), client.ObjectKeyFromObject(c), &rdxv1.TxCluster{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("TxCluster still in the manager's cache: %v", err)
		}
		return nil
	})
	waitIdle(t)
	// A StatefulSet deleted now (as the garbage collector would) stays deleted.
	var sts appsv1.StatefulSet
	if err := get(t, c, "gone-s0", &sts); err != nil {
		t.Fatal(err)
	}
	expectOwnedBy(t, &sts, cur)
	if err := env.Client.Delete(context.Background(), &sts); err != nil {
		t.Fatal(err)
	}
	updateRequeue := &corev1.ConfigMap{}
	if err := get(t, c, "gone-topology", updateRequeue); err != nil {
		t.Fatal(err)
	}
	updateRequeue.Labels["poke"] = "1" // an event on an owned object must not resurrect anything
	if err := env.Client.Update(context.Background(), updateRequeue); err != nil {
		t.Fatal(err)
	}
	testenv.Consistently(t, 2*time.Second, func() error {
		err := get(t, c, "gone-s0", &appsv1.StatefulSet{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("StatefulSet recreated for a deleted TxCluster: %v", err)
		}
		return nil
	})
}

// TestTopologyApplyDoesNotRecreateADeletedConfigMap: a pass that derived its epoch from a ConfigMap deleted in the
// meantime fails instead of recreating it at the old epoch (the next pass then starts above the status's epoch).
func TestTopologyApplyDoesNotRecreateADeletedConfigMap(t *testing.T) {
	ctx := context.Background()
	c := &rdxv1.TxCluster{ObjectMeta: metav1.ObjectMeta{Name: "gone-cm", Namespace: env.Namespace(t)}} // not created
	if err := env.Client.Apply(ctx, topologyConfigMap(c, "{}", &corev1.ConfigMap{}), client.FieldOwner(apply.FieldManager)); err != nil {
		t.Fatal(err)
	}
	var read corev1.ConfigMap
	if err := get(t, c, engine.TopologyName(c), &read); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &read); err != nil {
		t.Fatal(err)
	}
	err := env.Client.Apply(ctx, topologyConfigMap(c, "{}", &read), client.FieldOwner(apply.FieldManager))
	if !apierrors.IsConflict(err) {
		t.Errorf("apply derived from a deleted ConfigMap: %v, want a conflict", err)
	}
	if err := get(t, c, engine.TopologyName(c), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleted ConfigMap recreated: %v", err)
	}
}
