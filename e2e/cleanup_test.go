package e2e

// Removing what a run installed, and what an interrupted earlier run left.

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdx-dev/rdx/e2e/framework"
)

// cleanup removes whatever a failed or finished run left: the release, the TxCluster and the namespaces.
func cleanup(t *testing.T, env *framework.Env, c *cluster, opNS, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if c != nil {
		_ = env.Dynamic.Resource(framework.TxClusters).Namespace(c.ns).Delete(ctx, c.name, metav1.DeleteOptions{})
	}
	removeRun(ctx, t, env, opNS, ns)
}

// removeRun uninstalls a run's release and deletes its namespaces, waiting for them to go.
func removeRun(ctx context.Context, t *testing.T, env *framework.Env, opNS, ns string) {
	if out, err := env.TryHelm(2*time.Minute, "uninstall", release, "--namespace", opNS, "--wait", "--ignore-not-found"); err != nil {
		t.Logf("cleanup: helm uninstall: %v: %s", err, out)
	}
	for _, name := range []string{ns, opNS} {
		err := env.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: delete namespace %s: %v", name, err)
		}
	}
	for _, name := range []string{ns, opNS} {
		for ctx.Err() == nil {
			if _, err := env.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(time.Second)
		}
	}
	if ctx.Err() != nil {
		t.Logf("cleanup: namespaces %s, %s still terminating after 3 minutes", ns, opNS)
	} else {
		t.Logf("cleanup: namespaces %s and %s deleted", ns, opNS)
	}
}

// removeLeftovers removes what an interrupted earlier run left (its cleanup never ran): its release's cluster-scoped
// objects would make this run's helm install fail ("exists and cannot be imported into the current release"). Only
// this suite's own namespaces (rdx-e2e-system-<run>, rdx-e2e-<run>) and their releases are touched.
func removeLeftovers(t *testing.T, env *framework.Env, run string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	list, err := env.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list namespaces: %v", err)
	}
	for _, n := range list.Items {
		old, ok := strings.CutPrefix(n.Name, "rdx-e2e-system-")
		if !ok || old == run {
			continue
		}
		env.Logf(t, "removing the leftovers of interrupted run %s (namespaces %s, rdx-e2e-%s)", old, n.Name, old)
		removeRun(ctx, t, env, n.Name, "rdx-e2e-"+old)
	}
}
