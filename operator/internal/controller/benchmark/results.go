// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/benchreport"
)

// Keys of the results ConfigMap.
const (
	ResultsKey = "results.json"
	ReportKey  = "report.html"
)

// ResultsName is the ConfigMap holding a Benchmark's results and report.
func ResultsName(b *rdxv1.Benchmark) string { return b.Name + "-results" }

// results gathers what the report shows: the runs in status and each target's configuration (a target deleted
// since it ran keeps only its name).
func (r *Reconciler) results(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus) (*benchreport.Results, error) {
	out := &benchreport.Results{Benchmark: b.Name, Namespace: b.Namespace, Workload: string(b.Spec.Workload.Type)}
	if b.Spec.Sweep != nil {
		out.SweepParameter = b.Spec.Sweep.Parameter
	}
	for _, ref := range b.Spec.Targets {
		t := benchreport.Target{Name: ref.Name, Kind: "TxCluster"}
		var c rdxv1.TxCluster
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}, &c)
		switch {
		case err == nil:
			t.TxnProtocol = string(c.Spec.Transactions.Protocol)
			t.Replication = string(c.Spec.Replication.Protocol)
			t.Transport = string(c.Spec.Transport.Kind)
		case !apierrors.IsNotFound(err):
			return nil, err
		}
		out.Targets = append(out.Targets, t)
	}
	for _, res := range st.Results {
		out.Unit = res.Unit
		abortRate, _ := strconv.ParseFloat(res.AbortRate, 64)
		p := benchreport.Point{
			Target: res.Target, SweepValue: res.SweepValue, Throughput: float64(res.Throughput),
			P50us: float64(res.P50.Microseconds()), P99us: float64(res.P99.Microseconds()),
			P999us: float64(res.P999.Microseconds()), Committed: res.Committed, Aborted: res.Aborted,
			Errors: res.Errors, EmulatedOneSided: res.EmulatedOneSidedOps, AbortRate: abortRate,
			Invariant: res.Invariant, Checker: reportChecker(res.Checker),
		}
		out.Points = append(out.Points, p)
	}
	out.Checker = reportChecker(st.Checker)
	return out, nil
}

func reportChecker(c *rdxv1.CheckerResult) *benchreport.Checker {
	if c == nil {
		return nil
	}
	return &benchreport.Checker{Verdict: c.Verdict, Model: c.Model, Checked: c.Checked, Violations: c.Violations,
		Message: c.Message}
}

// writeResults stores results.json and, when there is at least one run, the report and its plots in the results
// ConfigMap, and points status at it.
func (r *Reconciler) writeResults(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus) error {
	res, err := r.results(ctx, b, st)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	cm := corev1ac.ConfigMap(ResultsName(b), b.Namespace).
		WithLabels(jobLabels(b, b.Spec.Targets[0].Name)).
		WithData(map[string]string{ResultsKey: string(data)})
	if len(res.Points) > 0 {
		report, err := benchreport.Render(res)
		if err != nil {
			return fmt.Errorf("render the report: %w", err)
		}
		cm.WithData(map[string]string{ReportKey: string(report.HTML)}).WithBinaryData(report.PNGs)
	}
	if err := r.applier().Owned(ctx, b, cm, cm.ObjectMetaApplyConfiguration, &corev1.ConfigMap{}); err != nil {
		return err
	}
	st.ResultsConfigMap = &rdxv1.LocalObjectReference{Name: ResultsName(b)}
	return nil
}
