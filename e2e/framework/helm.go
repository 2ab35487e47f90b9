// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package framework

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Helm runs helm against the cluster under test and returns its output; the test fails on a non-zero exit.
func (e *Env) Helm(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := e.TryHelm(timeout, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TryHelm runs helm and returns its combined output and error (for cleanup paths that must not fail the test).
func (e *Env) TryHelm(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.HelmBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
