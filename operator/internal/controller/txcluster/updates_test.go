// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package txcluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/engine"
	"github.com/rdx-dev/rdx/operator/internal/testenv"
)

// TestUpdates: an image change rolls the StatefulSets at the same epoch; a replicas change steps membership epochs
// one node at a time and restarts nobody; a protocol change bumps the epoch and restarts every pod at once.
func TestUpdates(t *testing.T) {
	c := createCluster(t, "upd", nil)
	first := waitTopology(t, c, 1)
	rolledOut(t, c, 0, 3)
	pods := []*corev1.Pod{createPod(t, c, 0, 0, true), createPod(t, c, 0, 1, true), createPod(t, c, 0, 2, true)}
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		return conditionIs(st, rdxv1.ConditionReady, metav1.ConditionTrue, "")
	})

	// Image: a rolling update of the StatefulSet, same epoch and restart hash, no pod deleted by the operator.
	updateCluster(t, c, func(c *rdxv1.TxCluster) { c.Spec.Image = "registry.test/rdx-engine:next" })
	sts := waitStatefulSet(t, c, 0, func(s *appsv1.StatefulSet) error {
		if img := s.Spec.Template.Spec.Containers[0].Image; img != "registry.test/rdx-engine:next" {
			return fmt.Errorf("image %q", img)
		}
		return nil
	})
	if sts.Spec.Template.Annotations[engine.AnnotationRestartHash] != first.RestartHash() {
		t.Error("an image change must not change the restart hash")
	}
	setStatefulSetStatus(t, c, 0, func(s *appsv1.StatefulSet) {
		s.Status.ObservedGeneration = s.Generation
		s.Status.UpdateRevision, s.Status.UpdatedReplicas = "rev-next", 1
	})
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Phase != rdxv1.PhaseUpdating || st.Epoch != 1 {
			return fmt.Errorf("phase %s epoch %d", st.Phase, st.Epoch)
		}
		return conditionIs(st, rdxv1.ConditionProgressing, metav1.ConditionTrue, ReasonRollingOut)
	})
	rolledOut(t, c, 0, 3)
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		return conditionIs(st, rdxv1.ConditionReady, metav1.ConditionTrue, "")
	})
	expectPodsExist(t, pods, true)
	waitEvent(t, c, "Updated", "updated StatefulSet upd-s0")

	// Replicas: rdxd applies membership epochs live, one data node per epoch. 3 -> 5 is two epochs, each written
	// once every node of the previous one has a ready pod that runs it; the restart hash stays, no pod is deleted.
	updateCluster(t, c, func(c *rdxv1.TxCluster) { c.Spec.Replicas = 5 })
	scaled := first
	for epoch, members := int64(2), 4; members <= 5; epoch, members = epoch+1, members+1 {
		scaled = waitMembers(t, c, first, epoch, members)
		waitEvent(t, c, "EpochBumped", fmt.Sprintf("topology epoch %d -> %d", epoch-1, epoch))
		waitEpochStamped(t, pods, epoch)
		// envtest runs no StatefulSet controller: the joiner's pod is created here. The next epoch waits for it to
		// be ready, and for every member to say it runs this one.
		joiner := createPod(t, c, 0, int32(members-1), false)
		pods = append(pods, joiner)
		engines.set(pods[0], engine.NodeState{Primary: true, Epoch: epoch - 1})
		setPodReady(t, joiner, true)
		expectEpochHeld(t, c, epoch)
		engines.set(pods[0], engine.NodeState{Primary: true})
		rolledOut(t, c, 0, int32(members))
	}
	expectPodsExist(t, pods, true) // nobody was restarted
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Epoch != 3 || st.Replicas != 5 || st.ReadyReplicas != 5 {
			return fmt.Errorf("epoch %d replicas %d ready %d", st.Epoch, st.Replicas, st.ReadyReplicas)
		}
		return conditionIs(st, rdxv1.ConditionReady, metav1.ConditionTrue, "")
	})

	// 5 -> 3: the last node first, each epoch once the pod of the node removed before is gone.
	updateCluster(t, c, func(c *rdxv1.TxCluster) { c.Spec.Replicas = 3 })
	for epoch, members := int64(4), 4; members >= 3; epoch, members = epoch+1, members-1 {
		scaled = waitMembers(t, c, first, epoch, members)
		removed := pods[len(pods)-1]
		expectEpochHeld(t, c, epoch)
		if err := env.Client.Delete(context.Background(), removed); err != nil { // the StatefulSet controller's part
			t.Fatal(err)
		}
		pods = pods[:len(pods)-1]
		rolledOut(t, c, 0, int32(members))
	}
	expectPodsExist(t, pods, true)

	// Transaction protocol: rdxd cannot switch live. New epoch, new restart hash, and once the StatefulSet has
	// seen its new template every old pod is deleted together.
	updateCluster(t, c, func(c *rdxv1.TxCluster) { c.Spec.Transactions.Protocol = rdxv1.ProtocolDNL2 })
	restarted := waitTopology(t, c, 6)
	if restarted.Txn.Protocol != "dnl2" || restarted.RestartHash() == scaled.RestartHash() {
		t.Fatalf("protocol change: txn %q, restart hash changed %v", restarted.Txn.Protocol, restarted.RestartHash() != scaled.RestartHash())
	}
	waitStatefulSet(t, c, 0, func(s *appsv1.StatefulSet) error {
		if s.Spec.Template.Annotations[engine.AnnotationRestartHash] != restarted.RestartHash() {
			return fmt.Errorf("template restart hash not updated")
		}
		return nil
	})
	expectPodsExist(t, pods, true) // the StatefulSet has not observed the new template yet
	rolledOut(t, c, 0, 0)
	testenv.Eventually(t, wait, func() error { return podsGone(pods) })
	waitEvent(t, c, "Restarting", "restarting 3 pods together for topology epoch 6")
	waitStatus(t, c, func(st *rdxv1.TxClusterStatus) error {
		if st.Epoch != 6 || st.ReadyReplicas != 0 || st.Phase != rdxv1.PhasePending {
			return fmt.Errorf("epoch %d ready %d phase %s", st.Epoch, st.ReadyReplicas, st.Phase)
		}
		return nil
	})

	// The ConfigMap disappears: it comes back at a fresh epoch, never a reused one.
	var cm corev1.ConfigMap
	if err := get(t, c, engine.TopologyName(c), &cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(context.Background(), &cm); err != nil {
		t.Fatal(err)
	}
	waitTopology(t, c, 7)
}

// waitMembers waits for topology `epoch` with `members` members of shard 0, the StatefulSet sized to them, and the
// restart hash of `first` (a membership epoch restarts nobody).
func waitMembers(t *testing.T, c *rdxv1.TxCluster, first engine.Topology, epoch int64, members int) engine.Topology {
	t.Helper()
	topo := waitTopology(t, c, epoch)
	if len(topo.Shards[0].Members) != members || topo.RestartHash() != first.RestartHash() {
		t.Fatalf("epoch %d: %d members (want %d), restart hash changed %v (want false)", epoch,
			len(topo.Shards[0].Members), members, topo.RestartHash() != first.RestartHash())
	}
	want := int32(members)
	waitStatefulSet(t, c, 0, func(s *appsv1.StatefulSet) error {
		if *s.Spec.Replicas != want || s.Spec.Template.Annotations[engine.AnnotationRestartHash] != first.RestartHash() {
			return fmt.Errorf("replicas %d, template restart hash %q", *s.Spec.Replicas, s.Spec.Template.Annotations[engine.AnnotationRestartHash])
		}
		return nil
	})
	return topo
}

// expectEpochHeld checks that the topology stays at `epoch` for a while (the operator may not step yet).
func expectEpochHeld(t *testing.T, c *rdxv1.TxCluster, epoch int64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if topo, err := readTopology(t, c); err != nil || topo.Epoch != epoch {
			t.Fatalf("topology at epoch %d (%v) while it had to stay at %d", topo.Epoch, err, epoch)
		}
	}
}

// waitEpochStamped waits until every pod carries the epoch annotation (what makes kubelet refresh the file).
func waitEpochStamped(t *testing.T, pods []*corev1.Pod, epoch int64) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		for _, p := range pods {
			var cur corev1.Pod
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &cur); err != nil {
				return err
			}
			if got := cur.Annotations[engine.AnnotationTopologyEpoch]; got != strconv.FormatInt(epoch, 10) {
				return fmt.Errorf("pod %s stamped with epoch %q", p.Name, got)
			}
		}
		return nil
	})
}

func expectPodsExist(t *testing.T, pods []*corev1.Pod, exist bool) {
	t.Helper()
	for _, p := range pods {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
		if exist && err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
		}
	}
}

func podsGone(pods []*corev1.Pod) error {
	for _, p := range pods {
		var cur corev1.Pod
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &cur)
		if err == nil && cur.UID == p.UID {
			return fmt.Errorf("pod %s still exists", p.Name)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// TestLegacyPodsAreAdopted: a pod an older operator started for the current file (its restart hash computed the old
// way) is adopted, not restarted, when this operator takes over.
func TestLegacyPodsAreAdopted(t *testing.T) {
	c := createCluster(t, "legacy", nil)
	topo := waitTopology(t, c, 1)
	rolledOut(t, c, 0, 3)
	p := createPod(t, c, 0, 0, true)
	testenv.Eventually(t, wait, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Annotations[engine.AnnotationRestartHash] = topo.LegacyRestartHash()
		return env.Client.Update(context.Background(), p)
	})
	testenv.Eventually(t, wait, func() error {
		var cur corev1.Pod
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &cur); err != nil {
			return err
		}
		if cur.UID != p.UID || cur.DeletionTimestamp != nil {
			return fmt.Errorf("pod %s was deleted", p.Name)
		}
		if got := cur.Annotations[engine.AnnotationRestartHash]; got != topo.RestartHash() {
			return fmt.Errorf("restart hash %q, want %q", got, topo.RestartHash())
		}
		return nil
	})
}
