// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package e2e is the rdx end-to-end suite: against the cluster in KUBECONFIG it installs the operator chart, runs
// the sample TxCluster, talks Redis to it from inside the cluster, breaks and changes it, and removes it all again.
// hack/e2e.sh builds what it needs and runs it; e2e/README.md lists the settings.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rdx-dev/rdx/e2e/framework"
)

const (
	release       = "rdx-operator"
	leaseName     = "rdx-operator.rdx.dev"
	readyTimeout  = 5 * time.Minute
	clientTimeout = 3 * time.Minute
)

var rdxCRDs = []string{"txclusters.rdx.dev", "replicasets.rdx.dev", "benchmarks.rdx.dev"}

func TestRDX(t *testing.T) {
	env := framework.Load(t)
	run := framework.RunID()
	opNS, ns := "rdx-e2e-system-"+run, "rdx-e2e-"+run
	var c *cluster
	t.Cleanup(func() {
		if t.Failed() {
			env.Dump(t, ns, opNS)
		}
		if env.Keep {
			t.Logf("RDX_E2E_KEEP=1: leaving namespaces %s and %s and the release %s", ns, opNS, release)
			return
		}
		cleanup(t, env, c, opNS, ns)
	})

	env.Step(t, "cluster reachable; snapshot of cluster-scoped objects before the install")
	ctx := framework.Ctx(t)
	version, err := env.Discovery.ServerVersion()
	if err != nil {
		t.Fatalf("API server at %s: %v", env.Config.Host, err)
	}
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v (%d)", err, len(nodes.Items))
	}
	env.Logf(t, "Kubernetes %s at %s, %d node(s); run id %s", version.GitVersion, env.Config.Host, len(nodes.Items), run)
	removeLeftovers(t, env, run)
	before, err := env.ClusterScoped(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Logf(t, "%d cluster-scoped objects", len(before))
	for _, name := range []string{opNS, ns} {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", name, err)
		}
	}

	installOperator(t, env, opNS)
	refuseUnimplemented(t, env, ns)
	c = applySample(t, env, ns)

	env.Step(t, "write %d keys through the endpoint Service %s from a pod, read them back", env.Keys, c.redisAddr)
	keys := fmt.Sprint(env.Keys)
	res := env.RunClient(t, ns, "client-write", clientTimeout, "write", "--addr", c.redisAddr, "--run", run, "--count", keys)
	env.Logf(t, "wrote %d keys in %.2fs", res.Keys, res.Seconds)
	verifyKeys(t, env, c, "client-verify", run, keys)
	redisBenchmark(t, env, c, "set,get,incr")

	env.Step(t, "MULTI/EXEC, WATCH with and without a conflicting write, DISCARD through %s", c.redisAddr)
	res = env.RunClient(t, ns, "client-txn", clientTimeout, "txn", "--addr", c.redisAddr, "--run", run)
	for _, check := range res.Checks {
		env.Logf(t, "ok: %s", check)
	}

	runSmallBankSample(t, env, c)
	compareTwoTargets(t, env, c)
	// Each single-key cluster is started while the test before it runs, so that a new cluster's time to Ready
	// overlaps a test instead of adding to the suite's. At most two of them run beside the sample: their pods' CPU
	// requests must leave room on a 2-CPU node for the pod a test deletes to be scheduled again (with the three
	// locking clusters started early as well, a deleted craq member stayed Pending: "Insufficient cpu"). The locking
	// clusters start together once the last single-key one is gone.
	singleKey := []string{"abd", "paxos", "zab", "hermes", "craq"}
	next := startSingleKey(t, env, c, singleKey[0])
	targetLostMidRun(t, env, ns)
	for i, protocol := range singleKey {
		current := next
		if i+1 < len(singleKey) {
			next = startSingleKey(t, env, c, singleKey[i+1])
		}
		singleKeyCluster(t, env, current, run, protocol)
	}
	lockingClusters(t, env, c, run, startLockingClusters(t, env, c))

	primary := c.primary(t, 0)
	backup := c.name + "-s0-2"
	if backup == primary {
		backup = c.name + "-s0-1"
	}
	deletePod(t, env, c, backup, "a backup replica")
	verifyKeys(t, env, c, "client-verify-after-backup", run, keys)
	underLoad(t, env, c, run+"p", "deleting the primary's pod", func() { deletePod(t, env, c, primary, "the shard primary") })
	verifyKeys(t, env, c, "client-verify-after-primary", run, keys)

	underLoad(t, env, c, run+"r", "a rolling image update", func() { rollingImageUpdate(t, env, c) })
	verifyKeys(t, env, c, "client-verify-after-rollout", run, keys)

	underLoad(t, env, c, run+"s", "scaling 3 -> 5 -> 3", func() { scaleKeepingMembers(t, env, c, 5, 3) })
	verifyKeys(t, env, c, "client-verify-scaled", run, keys)

	deleteCluster(t, env, c)
	c = nil
	uninstallOperator(t, env, opNS, before, ns)
}

// installOperator installs charts/rdx-operator, checks what it created and runs `helm test`.
func installOperator(t *testing.T, env *framework.Env, opNS string) {
	env.Step(t, "helm install %s from %s into %s", release, env.OperatorChart, opNS)
	opRepo, opTag := splitImage(env.OperatorImage)
	engRepo, engTag := splitImage(env.EngineImage)
	out := env.Helm(t, 5*time.Minute, "install", release, env.OperatorChart, "--namespace", opNS, "--wait", "--timeout", "4m",
		"--set", "image.repository="+opRepo, "--set", "image.tag="+opTag, "--set", "image.pullPolicy="+env.PullPolicy,
		"--set", "engineImage.repository="+engRepo, "--set", "engineImage.tag="+engTag,
		"--set", "test.pullPolicy="+env.PullPolicy)
	env.Logf(t, "helm: %s", firstLines(out, 6))

	ctx := framework.Ctx(t)
	for _, name := range rdxCRDs {
		crd, err := env.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
		if ann := crd.GetAnnotations()["helm.sh/resource-policy"]; ann != "keep" {
			t.Errorf("CRD %s: helm.sh/resource-policy %q, want keep", name, ann)
		}
	}
	env.Logf(t, "CRDs installed with helm.sh/resource-policy=keep: %s", strings.Join(rdxCRDs, ", "))

	env.Eventually(t, "the manager to hold the Lease "+leaseName, time.Minute, func(ctx context.Context) error {
		lease, err := env.Kube.CoordinationV1().Leases(opNS).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		pods, err := env.Kube.CoreV1().Pods(opNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=manager"})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if strings.HasPrefix(holder, p.Name+"_") && podReady(&p) {
				return nil
			}
		}
		return fmt.Errorf("holder %q is not a ready manager pod", holder)
	})
	if _, err := env.Kube.CoreV1().Services(opNS).Get(framework.Ctx(t), release+"-metrics", metav1.GetOptions{}); err != nil {
		t.Fatalf("metrics Service: %v", err)
	}

	env.Step(t, "helm test %s (the metrics Service answers, the controller runs, the manager leads)", release)
	// No --logs: the chart deletes a test pod that succeeded (a failed one stays for the diagnostics).
	out = env.Helm(t, 3*time.Minute, "test", release, "--namespace", opNS, "--timeout", "2m")
	if !strings.Contains(out, "Phase:          Succeeded") {
		t.Fatalf("helm test did not report Succeeded:\n%s", out)
	}
	env.Logf(t, "helm test: %s", firstLines(grepLines(out, "Phase:", "TEST SUITE"), 6))
}

// refuseUnimplemented applies the sample with values rdxd does not implement, or combinations it does not run (a
// single-key replication protocol, or one-sided primitives, with the sample's dnl4): the API server refuses each with
// a message naming what exists or what to set, and nothing is created for it.
func refuseUnimplemented(t *testing.T, env *framework.Env, ns string) {
	env.Step(t, "the sample with a protocol or primitives rdxd does not implement is refused at admission")
	ctx := framework.Ctx(t)
	cases := []struct {
		field []string
		value string
		want  string
	}{
		{[]string{"spec", "transactions", "protocol"}, "calvin", `Unsupported value: "calvin": supported values: "dnl4", "dnl2", "dnl1", "nowait", "waitdie", "occ", "mvcc", "sundial"`},
		{[]string{"spec", "replication", "protocol"}, "derecho", `Unsupported value: "derecho": supported values: "primary-backup"`},
		// zab is implemented but carries no transactions: with the sample's dnl4 the CEL rule refuses it.
		{[]string{"spec", "replication", "protocol"}, "zab", `replication.protocol zab replicates single keys only: it cannot carry transactions (set transactions.protocol to none)`},
		{[]string{"spec", "transport", "primitives"}, "onesided", `transport.primitives onesided is honoured by transactions.protocol occ, mvcc or sundial only: dnl4 runs every phase over RPC`},
	}
	for _, tc := range cases {
		obj := loadSample(t, env.SampleTxCluster, ns)
		if err := unstructured.SetNestedField(obj.Object, tc.value, tc.field...); err != nil {
			t.Fatal(err)
		}
		_, err := env.Dynamic.Resource(framework.TxClusters).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %s: want refused with %q, got %v", strings.Join(tc.field, "."), tc.value, tc.want, err)
		}
		env.Logf(t, "refused: %v", err)
	}
	sets, err := env.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(sets.Items) != 0 {
		t.Fatalf("StatefulSets in %s after refused creates: %v, %d", ns, err, len(sets.Items))
	}
}

// applySample creates the sample TxCluster and waits for it to be Ready with everything the operator promises.
func applySample(t *testing.T, env *framework.Env, ns string) *cluster {
	obj := loadSample(t, env.SampleTxCluster, ns)
	env.Step(t, "apply the sample TxCluster %s (%s) in %s and wait for Ready", obj.GetName(), env.SampleTxCluster, ns)
	ctx := framework.Ctx(t)
	created, err := env.Dynamic.Resource(framework.TxClusters).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create TxCluster: %v", err)
	}
	spec, _ := created.Object["spec"].(map[string]any)
	c := &cluster{env: env, ns: ns, name: created.GetName(), uid: created.GetUID(),
		shards: toInt(spec["shards"]), replicas: toInt(spec["replicas"])}
	if kind := nested(spec, "transport", "kind"); kind != env.Transport || c.shards != 1 || c.replicas != 3 {
		t.Fatalf("sample: want 1 shard of 3 replicas over %s (RDX_E2E_TRANSPORT), got %d x %d over %v",
			env.Transport, c.shards, c.replicas, kind)
	}
	env.Eventually(t, "TxCluster "+c.name+" Ready", readyTimeout, c.ready)
	ctx = framework.Ctx(t)
	env.Logf(t, "%s", c.summary(ctx))
	_, st, err := c.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host, port, ok := strings.Cut(st.Endpoint, ":")
	if !ok || host != fmt.Sprintf("%s.%s.svc", c.name, ns) || port != "6379" {
		t.Fatalf("status.endpoint %q, want %s.%s.svc:6379", st.Endpoint, c.name, ns)
	}
	c.redisAddr = st.Endpoint
	checkObjects(t, env, c)
	return c
}

// checkObjects verifies the objects operator/README.md lists and the engine's container contract.
func checkObjects(t *testing.T, env *framework.Env, c *cluster) {
	ctx := framework.Ctx(t)
	cm, err := env.Kube.CoreV1().ConfigMaps(c.ns).Get(ctx, c.name+"-topology", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var topo struct {
		Epoch    int64 `json:"epoch"`
		MemoryMB int64 `json:"memory_mb"`
		Nodes    []struct {
			Name string `json:"name"`
			Host string `json:"host"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(cm.Data["topology.json"]), &topo); err != nil || len(topo.Nodes) != 3 || topo.MemoryMB < 16 {
		t.Fatalf("ConfigMap %s topology.json: %v, %d nodes, memory_mb %d", cm.Name, err, len(topo.Nodes), topo.MemoryMB)
	}
	services := map[string]func(*corev1.Service) error{
		c.name + "-hl": func(s *corev1.Service) error {
			if s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses {
				return fmt.Errorf("want headless with publishNotReadyAddresses")
			}
			return nil
		},
		c.name: func(s *corev1.Service) error {
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 6379 {
				return fmt.Errorf("ports %v, want 6379", s.Spec.Ports)
			}
			return nil
		},
		c.name + "-rw": func(*corev1.Service) error { return nil },
		c.name + "-ro": func(*corev1.Service) error { return nil },
	}
	for name, check := range services {
		s, err := env.Kube.CoreV1().Services(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			err = check(s)
		}
		if err != nil {
			t.Errorf("Service %s: %v", name, err)
		}
	}
	if _, err := env.Kube.PolicyV1().PodDisruptionBudgets(c.ns).Get(ctx, c.name, metav1.GetOptions{}); err != nil {
		t.Errorf("PodDisruptionBudget %s: %v", c.name, err)
	}
	pods, err := c.dataPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		ctr := p.Spec.Containers[0]
		cmd := strings.Join(append(append([]string{}, ctr.Command...), ctr.Args...), " ")
		if cmd != "rdxd --config /etc/rdx/topology.json --node $(POD_NAME)" {
			t.Errorf("pod %s runs %q", p.Name, cmd)
		}
		if env.Transport == "verbs" { // proof that rdxd opened an RDMA device rather than falling back to anything
			raw, err := env.Kube.CoreV1().Pods(c.ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if line := grepLines(string(raw), "verbs: device"); err != nil || line == "" {
				t.Errorf("pod %s: no 'verbs: device' line in its log (%v)", p.Name, err)
			} else {
				env.Logf(t, "pod %s: %s", p.Name, firstLines(line, 1))
			}
		}
		req, lim := ctr.Resources.Requests.Memory(), ctr.Resources.Limits.Memory()
		need := (topo.MemoryMB + 64) << 20
		if req.Value() < need || (!lim.IsZero() && lim.Value() < need) {
			t.Errorf("pod %s memory request %s / limit %s below memory_mb %d + 64 MiB", p.Name, req, lim, topo.MemoryMB)
		}
	}
	env.Logf(t, "objects: ConfigMap %s (epoch %d, %d nodes, memory_mb %d), Services %s-hl/%s/%s-rw/%s-ro, StatefulSet %s-s0, PDB %s; pods run %q",
		cm.Name, topo.Epoch, len(topo.Nodes), topo.MemoryMB, c.name, c.name, c.name, c.name, c.name, c.name,
		"rdxd --config /etc/rdx/topology.json --node $(POD_NAME)")
}

// verifyKeys reads back every key of a write run through the endpoint.
func verifyKeys(t *testing.T, env *framework.Env, c *cluster, pod, run, count string) {
	res := env.RunClient(t, c.ns, pod, clientTimeout, append([]string{"verify", "--addr", c.redisAddr, "--run", run,
		"--count", count}, c.readBackArgs()...)...)
	env.Logf(t, "read back all %d keys of run %s, every value as written (%.2fs)%s", res.Keys, run, res.Seconds,
		staleNote(res))
}

// staleNote describes the reads of a client run with --converge that showed an older value at first.
func staleNote(res framework.ClientResult) string {
	if res.StaleReads == 0 {
		return ""
	}
	return fmt.Sprintf("; %d read(s) showed an older value at first, the last of them converged after %.2fs",
		res.StaleReads, res.ConvergedSeconds)
}

// deletePod deletes one engine pod and waits for its replacement and a Ready cluster.
func deletePod(t *testing.T, env *framework.Env, c *cluster, name, what string) {
	env.Step(t, "delete pod %s (%s) and wait until the cluster is Ready again", name, what)
	ctx := framework.Ctx(t)
	old, err := env.Kube.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, before, err := c.get(ctx)
	if err != nil || len(before.Shards) == 0 {
		t.Fatalf("status of %s before the delete: %v %+v", c.name, err, before)
	}
	wasPrimary, oldView := name == before.Shards[0].Primary, before.Shards[0].View
	deleted := time.Now()
	if err := env.Kube.CoreV1().Pods(c.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if wasPrimary { // the engine elects another member in a newer view; the operator reads it from the pods
		env.Eventually(t, "a new primary of shard 0 in a newer view, ready, and condition Writable True", readyTimeout,
			func(ctx context.Context) error {
				_, st, err := c.get(ctx)
				if err != nil {
					return err
				}
				s, w := st.Shards[0], findCondition(st.Conditions, "Writable")
				if s.Primary == "" || s.Primary == name || s.View <= oldView || !s.PrimaryReady || w == nil ||
					w.Status != metav1.ConditionTrue {
					return fmt.Errorf("shard 0 primary %q (view %d, ready %v), Writable %s", s.Primary, s.View,
						s.PrimaryReady, conditionText(w))
				}
				env.Logf(t, "%.1fs after the delete, the status names %s the primary of shard 0 (view %d, was %d), Writable=True",
					time.Since(deleted).Seconds(), s.Primary, s.View, oldView)
				return nil
			})
	}
	env.Eventually(t, "pod "+name+" replaced (new UID)", readyTimeout, func(ctx context.Context) error {
		p, err := env.Kube.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID == old.UID {
			return fmt.Errorf("still the old pod (phase %s)", p.Status.Phase)
		}
		return nil
	})
	// Ready must hold for longer than the readiness probe takes to notice a failure (period 5 s x 3 failures): right
	// after a restart the other pods may still be reconnecting to the new pod (DNS answers for its name can be stale
	// for up to the CoreDNS TTL), and their Ready conditions lag that by up to 15 s.
	const stableFor = 20 * time.Second
	var since time.Time
	env.Eventually(t, "TxCluster "+c.name+" Ready for "+stableFor.String()+" in a row", readyTimeout,
		func(ctx context.Context) error {
			if err := c.ready(ctx); err != nil {
				since = time.Time{}
				return err
			}
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) < stableFor {
				return fmt.Errorf("Ready since %s; it must hold %s", since.Format("15:04:05"), stableFor)
			}
			return nil
		})
	env.Logf(t, "%s", c.summary(framework.Ctx(t)))
}

// deleteCluster deletes the TxCluster and waits until the garbage collector removed everything it owned.
func deleteCluster(t *testing.T, env *framework.Env, c *cluster) {
	env.Step(t, "delete TxCluster %s; the garbage collector removes everything it owned", c.name)
	ctx := framework.Ctx(t)
	owned, err := env.OwnedBy(ctx, c.ns, c.uid)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range owned {
		kinds[o.Resource.Resource]++
	}
	env.Logf(t, "%d objects owned (directly or through owned objects): %v", len(owned), kinds)
	if kinds["statefulsets"] != 1 || kinds["pods"] != int(c.want()) || kinds["services"] != 4 || kinds["configmaps"] != 1 || kinds["poddisruptionbudgets"] != 1 {
		t.Errorf("owned objects %v: want 1 statefulset, %d pods, 4 services, 1 configmap, 1 poddisruptionbudget", kinds, c.want())
	}
	if err := env.Dynamic.Resource(framework.TxClusters).Namespace(c.ns).Delete(ctx, c.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the TxCluster and all its objects gone", 3*time.Minute, func(ctx context.Context) error {
		if _, err := env.Dynamic.Resource(framework.TxClusters).Namespace(c.ns).Get(ctx, c.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("TxCluster still there (err %v)", err)
		}
		left, err := env.Remaining(ctx, owned)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("%d left, e.g. %s", len(left), left[0])
		}
		pods, err := c.dataPods(ctx)
		if err != nil || len(pods) > 0 {
			return fmt.Errorf("%d data pods left (err %v)", len(pods), err)
		}
		return nil
	})
}

// uninstallOperator removes the release and checks that only the CRDs stay behind cluster-wide.
func uninstallOperator(t *testing.T, env *framework.Env, opNS string, before map[string]framework.ObjectRef, ns string) {
	env.Step(t, "helm uninstall %s; no cluster-scoped leftovers but the CRDs", release)
	out := env.Helm(t, 3*time.Minute, "uninstall", release, "--namespace", opNS, "--wait", "--timeout", "2m")
	env.Logf(t, "helm: %s", firstLines(out, 3))
	env.Eventually(t, "the operator's pods gone", 2*time.Minute, func(ctx context.Context) error {
		pods, err := env.Kube.CoreV1().Pods(opNS).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left in %s (err %v)", len(pods.Items), opNS, err)
		}
		return nil
	})
	ctx := framework.Ctx(t)
	after, err := env.ClusterScoped(ctx)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"namespaces/" + opNS: true, "namespaces/" + ns: true}
	for _, crd := range rdxCRDs {
		key := "customresourcedefinitions.apiextensions.k8s.io/" + crd
		if _, ok := after[key]; !ok {
			t.Errorf("CRD %s was deleted: the chart must keep it", crd)
		}
		allowed[key] = true
	}
	// kube-apiserver registers a local APIService for every group version a CRD serves (label
	// kube-aggregator.kubernetes.io/automanaged); it belongs to the kept CRDs and goes away with them.
	allowed["apiservices.apiregistration.k8s.io/v1alpha1.rdx.dev"] = true
	var leftovers []string
	for _, k := range framework.Added(before, after) {
		if !allowed[k] {
			leftovers = append(leftovers, k)
		}
	}
	if len(leftovers) > 0 {
		t.Errorf("cluster-scoped objects left after helm uninstall: %s", strings.Join(leftovers, ", "))
	}
	env.Logf(t, "cluster-scoped objects: %d before the install, %d after the uninstall; added: %s (allowed: the rdx CRDs, kept by design, their automanaged APIService, and the test's two namespaces)",
		len(before), len(after), strings.Join(framework.Added(before, after), ", "))
	if ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, opNS, metav1.GetOptions{}); err == nil {
		leases, _ := env.Kube.CoordinationV1().Leases(ns.Name).List(ctx, metav1.ListOptions{})
		env.Logf(t, "namespace %s holds %d Lease(s) after uninstall (removed with the namespace)", opNS, len(leases.Items))
	}
}

func splitImage(ref string) (string, string) {
	i := strings.LastIndex(ref, ":")
	return ref[:i], ref[i+1:]
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

func nested(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
