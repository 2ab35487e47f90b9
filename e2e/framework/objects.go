// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
)

// ObjectRef names one object of any kind.
type ObjectRef struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
	UID       types.UID
}

func (r ObjectRef) String() string {
	gr := r.Resource.Resource
	if r.Resource.Group != "" {
		gr += "." + r.Resource.Group
	}
	if r.Namespace == "" {
		return gr + "/" + r.Name
	}
	return gr + "/" + r.Namespace + "/" + r.Name
}

// listableResources are the resource types the server lists, namespaced or cluster-scoped, at their preferred
// version. Types no one creates objects of on purpose (events, reviews) are left out.
func (e *Env) listableResources(namespaced bool) ([]schema.GroupVersionResource, error) {
	lists, err := e.Discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			return nil, perr
		}
		for _, r := range l.APIResources {
			if r.Namespaced != namespaced || !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") ||
				r.Name == "events" || strings.HasSuffix(r.Name, "reviews") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, nil
}

// list returns metadata of every object of the given types in namespace ns ("" = cluster-scoped).
func (e *Env) list(ctx context.Context, ns string, resources []schema.GroupVersionResource) ([]ObjectRef, map[types.UID][]types.UID, error) {
	var refs []ObjectRef
	owners := map[types.UID][]types.UID{}
	for _, gvr := range resources {
		l, err := e.Metadata.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("list %s: %w", gvr, err)
		}
		for _, o := range l.Items {
			refs = append(refs, ObjectRef{Resource: gvr, Namespace: o.Namespace, Name: o.Name, UID: o.UID})
			for _, ref := range o.OwnerReferences {
				owners[o.UID] = append(owners[o.UID], ref.UID)
			}
		}
	}
	return refs, owners, nil
}

// ClusterScoped is every cluster-scoped object by resource/name.
func (e *Env) ClusterScoped(ctx context.Context) (map[string]ObjectRef, error) {
	resources, err := e.listableResources(false)
	if err != nil {
		return nil, err
	}
	refs, _, err := e.list(ctx, "", resources)
	if err != nil {
		return nil, err
	}
	out := map[string]ObjectRef{}
	for _, r := range refs {
		out[r.String()] = r
	}
	return out, nil
}

// Added lists the keys of after that are not in before, sorted.
func Added(before, after map[string]ObjectRef) []string {
	var out []string
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// OwnedBy lists every object in namespace ns that root owns directly or through other owned objects (e.g.
// TxCluster -> StatefulSet -> Pod, Service -> EndpointSlice): what the garbage collector must delete with root.
func (e *Env) OwnedBy(ctx context.Context, ns string, root types.UID) ([]ObjectRef, error) {
	resources, err := e.listableResources(true)
	if err != nil {
		return nil, err
	}
	refs, owners, err := e.list(ctx, ns, resources)
	if err != nil {
		return nil, err
	}
	owned := map[types.UID]bool{root: true}
	for changed := true; changed; {
		changed = false
		for _, r := range refs {
			if owned[r.UID] {
				continue
			}
			for _, o := range owners[r.UID] {
				if owned[o] {
					owned[r.UID], changed = true, true
					break
				}
			}
		}
	}
	var out []ObjectRef
	for _, r := range refs {
		if r.UID != root && owned[r.UID] {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Remaining returns those of refs that still exist (same UID).
func (e *Env) Remaining(ctx context.Context, refs []ObjectRef) ([]ObjectRef, error) {
	var out []ObjectRef
	for _, r := range refs {
		o, err := e.Metadata.Resource(r.Resource).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		case o.UID == r.UID:
			out = append(out, r)
		}
	}
	return out, nil
}
