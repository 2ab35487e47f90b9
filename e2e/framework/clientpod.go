// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ClientResult is the JSON line rdx-e2e-client prints last.
type ClientResult struct {
	Op      string   `json:"op"`
	OK      bool     `json:"ok"`
	Keys    int      `json:"keys"`
	Seconds float64  `json:"seconds"`
	Checks  []string `json:"checks"`
	Error   string   `json:"error"`
	// load only: the longest time between two acknowledged writes, when it began (since the start), failed attempts
	MaxGapSeconds   float64 `json:"max_gap_seconds"`
	GapStartSeconds float64 `json:"gap_start_seconds"`
	Failures        int     `json:"failures"`
	FirstFailure    string  `json:"first_failure"`
	// verify, counter with --converge: reads that showed an older value at first; how long the last took to converge
	StaleReads       int     `json:"stale_reads"`
	ConvergedSeconds float64 `json:"converged_seconds"`
}

// ClientPod is a client pod that was started and not waited for yet.
type ClientPod struct {
	ns, name string
	timeout  time.Duration
}

// RunClient runs rdx-e2e-client with args in a pod of namespace ns (so traffic takes the in-cluster path through
// the Service), waits for it to finish and returns its result; the test fails when the client does.
func (e *Env) RunClient(t *testing.T, ns, name string, timeout time.Duration, args ...string) ClientResult {
	t.Helper()
	return e.WaitClient(t, e.StartClient(t, ns, name, timeout, args...))
}

// StartClient creates the pod of RunClient and returns without waiting; timeout bounds the client's whole run.
func (e *Env) StartClient(t *testing.T, ns, name string, timeout time.Duration, args ...string) ClientPod {
	t.Helper()
	e.startPod(t, ns, name, e.ClientImage, nil, append(args, "--timeout", (timeout-10*time.Second).String()))
	e.Logf(t, "client pod %s: rdx-e2e-client %s", name, strings.Join(args, " "))
	return ClientPod{ns: ns, name: name, timeout: timeout}
}

// RunCommand runs `command` in a pod of `image` in namespace ns (restricted like a client pod), waits for it to end
// and returns its output; the test fails when the command does (its output in the message).
func (e *Env) RunCommand(t *testing.T, ns, name, image string, timeout time.Duration, command ...string) string {
	t.Helper()
	e.startPod(t, ns, name, image, command, nil)
	e.Logf(t, "pod %s: %s", name, strings.Join(command, " "))
	phase, logs := e.waitPod(t, ns, name, timeout)
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod %s (%s) %s:\n%s", name, strings.Join(command, " "), phase, logs)
	}
	return logs
}

func (e *Env) startPod(t *testing.T, ns, name, image string, command, args []string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "rdx-e2e-client"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "client", Image: image, ImagePullPolicy: corev1.PullPolicy(e.PullPolicy),
				Command: command, Args: args,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if _, err := e.Kube.CoreV1().Pods(ns).Create(Ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

// waitPod waits for a pod started by startPod to end, and returns its phase and output; the pod is deleted when it
// succeeded (a failed one stays for the namespace dump).
func (e *Env) waitPod(t *testing.T, ns, name string, timeout time.Duration) (corev1.PodPhase, string) {
	t.Helper()
	ctx := Ctx(t)
	var phase corev1.PodPhase
	e.Eventually(t, "pod "+name+" to finish", timeout, func(ctx context.Context) error {
		p, err := e.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		phase = p.Status.Phase
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			return nil
		}
		return fmt.Errorf("phase %s%s", phase, waitingReason(p))
	})
	logs, err := e.Kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of pod %s: %v", name, err)
	}
	if phase == corev1.PodSucceeded {
		if err := e.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", name, err)
		}
	}
	return phase, string(logs)
}

// WaitClient waits for a started client to finish and returns its result; the test fails when the client does.
func (e *Env) WaitClient(t *testing.T, c ClientPod) ClientResult {
	t.Helper()
	phase, logs := e.waitPod(t, c.ns, c.name, c.timeout)
	var res ClientResult
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil || phase != corev1.PodSucceeded || !res.OK {
		t.Fatalf("client pod %s %s: %s\n%s", c.name, phase, res.Error, logs)
	}
	return res
}

// waitingReason names why a pod's containers are not running yet, e.g. ErrImageNeverPull.
func waitingReason(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf(", container %s waiting: %s %s", s.Name, w.Reason, w.Message)
		}
	}
	return ""
}
