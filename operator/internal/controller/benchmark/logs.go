// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rdx-dev/rdx/operator/internal/apply"
)

// CacheByObject limits the manager's informers for Jobs to those the operator labelled (its pods and ConfigMaps
// are limited by the TxCluster controller's CacheByObject).
func CacheByObject() map[client.Object]cache.ByObject {
	return apply.ManagedOnly(&batchv1.Job{})
}

// podLogs reads container logs through the API server's pods/log subresource.
type podLogs struct{ clientset kubernetes.Interface }

// NewLogTailer returns a LogTailer for the API server of cfg.
func NewLogTailer(cfg *rest.Config) (LogTailer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return podLogs{cs}, nil
}

func (p podLogs) Tail(ctx context.Context, namespace, pod, container string, lines int64) (string, error) {
	limit := int64(64 << 10)
	raw, err := p.clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, TailLines: &lines, LimitBytes: &limit,
	}).DoRaw(ctx)
	return string(raw), err
}
