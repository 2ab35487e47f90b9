// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
	"github.com/rdx-dev/rdx/operator/internal/apply"
)

type outcome int

const (
	jobRunning outcome = iota
	jobSucceeded
	jobFailed
)

// jobOutcome reads a Job's terminal condition (Complete or Failed).
func jobOutcome(j *batchv1.Job) outcome {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobSucceeded
		case batchv1.JobFailed:
			return jobFailed
		}
	}
	return jobRunning
}

// jobPods lists a Job's pods, newest first.
func (r *Reconciler) jobPods(ctx context.Context, j *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(j.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		return nil, err
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
	return pods.Items, nil
}

// terminationMessage is the rdx-bench container's termination message in the Job's newest terminated pod.
func (r *Reconciler) terminationMessage(ctx context.Context, j *batchv1.Job) (string, error) {
	pods, err := r.jobPods(ctx, j)
	if err != nil {
		return "", err
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == containerName && cs.State.Terminated != nil {
				return cs.State.Terminated.Message, nil
			}
		}
	}
	return "", nil
}

// observeRunning reports a running Job's step, with rdx-bench's latest progress line when the log is readable.
func (r *Reconciler) observeRunning(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus, s step,
	index, total int, j *batchv1.Job) {
	desc := s.describe(b, index, total)
	if !strings.HasPrefix(st.Progress, desc) {
		running(st, s, desc) // a new step; within a step, the last progress seen stays until a newer one
	}
	if r.Logs == nil {
		return
	}
	pods, err := r.jobPods(ctx, j)
	if err != nil || len(pods) == 0 || pods[0].Status.Phase != corev1.PodRunning {
		return
	}
	tail, err := r.Logs.Tail(ctx, j.Namespace, pods[0].Name, containerName, 20)
	if err != nil {
		return // progress is best effort: the outcome comes from the termination message
	}
	p := lastProgress(tail)
	if !p.recorded {
		return
	}
	st.Phase = s.benchmarkPhase()
	switch p.Stage {
	case "checking":
		st.Phase = rdxv1.BenchmarkChecking
		desc += " checking the history"
	case "running", "loading":
		if p.Total > 0 {
			desc += fmt.Sprintf(" %.0fs/%.0fs", p.Elapsed, p.Total)
		} else {
			desc += fmt.Sprintf(" %.0fs", p.Elapsed)
		}
		unit := "tx/s"
		if b.Spec.Workload.Type == rdxv1.WorkloadKV || p.Stage == "loading" {
			unit = "ops/s"
		}
		st.Throughput = rate(p.OpsPerS, unit)
	}
	st.Progress = desc
	setReady(st, false, string(st.Phase), desc)
}

// recordSuccess takes a finished Job's summary into status and counts the step done.
func (r *Reconciler) recordSuccess(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus, s step, j *batchv1.Job) error {
	msg, err := r.terminationMessage(ctx, j)
	if err != nil {
		return err
	}
	sum, ok := parseSummary(msg)
	if !ok {
		fail(st, "NoSummary", fmt.Sprintf("Job %s succeeded but rdx-bench left no summary in its termination message: %s",
			j.Name, truncate(strings.TrimSpace(msg), 400)))
		return nil
	}
	target := b.Spec.Targets[s.target].Name
	if s.phase == rdxv1.BenchmarkLoad {
		if sum.Load != nil {
			r.Recorder.Eventf(b, j, corev1.EventTypeNormal, "Loaded", "Load", "loaded %d records into %s in %.1f s",
				sum.Load.Records, target, sum.Load.Seconds)
		}
	} else {
		res := sum.result(target, s.sweepValue(b))
		st.Results = append(st.Results, res)
		st.Throughput = rate(sum.Rate, sum.Unit)
		st.P99 = res.P99.Duration.String()
		r.Recorder.Eventf(b, j, corev1.EventTypeNormal, "RunFinished", "Run", "%s: %s, p99 %s", j.Name,
			st.Throughput, st.P99)
	}
	st.StepsDone++
	return nil
}

// recordFailure ends the Benchmark with the failed Job's explanation: rdx-bench's summary when it wrote one (a run
// whose checker found an anomaly still reports its numbers and verdict), else the log tail kubelet kept, else the
// Job's own condition (e.g. its deadline).
func (r *Reconciler) recordFailure(ctx context.Context, b *rdxv1.Benchmark, st *rdxv1.BenchmarkStatus, s step, j *batchv1.Job) {
	msg, err := r.terminationMessage(ctx, j)
	if err != nil {
		msg = "reading its pod: " + err.Error()
	}
	reason := "JobFailed"
	if sum, ok := parseSummary(msg); ok {
		msg = sum.failure()
		if s.phase == rdxv1.BenchmarkRun && sum.Stage == "run" {
			st.Results = append(st.Results, sum.result(b.Spec.Targets[s.target].Name, s.sweepValue(b)))
		}
		if c := sum.Checker; c != nil && c.Violations > 0 {
			reason = "CheckFailed"
		}
	} else if msg = strings.TrimSpace(msg); msg == "" {
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				msg = fmt.Sprintf("%s: %s", c.Reason, c.Message)
			}
		}
	}
	fail(st, reason, fmt.Sprintf("Job %s failed: %s", j.Name, truncate(msg, 1500)))
}

// The status transitions. Ready is False with the reason until the Benchmark succeeds.

func setReady(st *rdxv1.BenchmarkStatus, ok bool, reason, msg string) {
	apply.SetCondition(&st.Conditions, st.ObservedGeneration, rdxv1.ConditionReady, ok, reason, msg)
}

func waitFor(st *rdxv1.BenchmarkStatus, reason, msg string) {
	st.Phase = rdxv1.BenchmarkPending
	st.Progress = msg
	setReady(st, false, reason, msg)
}

func running(st *rdxv1.BenchmarkStatus, s step, desc string) {
	st.Phase = s.benchmarkPhase()
	st.Progress = desc
	setReady(st, false, string(st.Phase), desc)
}

func fail(st *rdxv1.BenchmarkStatus, reason, msg string) {
	st.Phase = rdxv1.BenchmarkFailed
	st.Progress = fmt.Sprintf("failed after %d/%d steps", st.StepsDone, st.StepsTotal)
	now := metav1.Now()
	st.CompletionTime = &now
	st.Checker = verdict(st)
	setReady(st, false, reason, msg)
}

func succeed(st *rdxv1.BenchmarkStatus) {
	st.Phase = rdxv1.BenchmarkSucceeded
	st.Progress = fmt.Sprintf("%d/%d steps done", st.StepsDone, st.StepsTotal)
	now := metav1.Now()
	st.CompletionTime = &now
	st.Checker = verdict(st)
	msg := fmt.Sprintf("%d runs finished", len(st.Results))
	if st.Checker != nil {
		msg += fmt.Sprintf("; checker %s (%s, %d checked)", st.Checker.Verdict, st.Checker.Model, st.Checker.Checked)
	}
	setReady(st, true, "Succeeded", msg)
}

// verdict folds the runs' checker results into one: Fail if any run failed, Pass if every checked run passed,
// Skipped when no run was checked (verify false, or no check could finish).
func verdict(st *rdxv1.BenchmarkStatus) *rdxv1.CheckerResult {
	if len(st.Results) == 0 {
		return nil
	}
	out := &rdxv1.CheckerResult{Verdict: "Pass"}
	checkedRuns := 0
	skipped := "verify is false: no run was checked"
	for _, res := range st.Results {
		c := res.Checker
		if c == nil || c.Verdict == "Skipped" {
			if c != nil {
				skipped = c.Message
			}
			continue
		}
		checkedRuns++
		out.Model = c.Model
		out.Checked += c.Checked
		out.Violations += c.Violations
		if c.Verdict == "Fail" && out.Verdict != "Fail" {
			out.Verdict = "Fail"
			out.Message = fmt.Sprintf("%s (%s): %s", res.Target, res.SweepValue, c.Message)
		}
	}
	switch {
	case checkedRuns == 0:
		return &rdxv1.CheckerResult{Verdict: "Skipped", Message: skipped}
	case checkedRuns < len(st.Results) && out.Verdict == "Pass":
		out.Message = fmt.Sprintf("%d of %d runs checked", checkedRuns, len(st.Results))
	}
	return out
}
