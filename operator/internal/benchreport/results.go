// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Package benchreport holds the results of a Benchmark (rdx-bench runs against one or more TxClusters, optionally
// sweeping one parameter) and renders them: two plots (throughput and latency against the swept parameter, or one
// bar per target without a sweep) as PNG, and one self-contained HTML page with the tables and the plots. The
// Benchmark controller fills Results and stores the report in the Benchmark's results ConfigMap; the kubectl
// plugin renders Results itself when only results.json is there. Nothing here talks to Kubernetes.
package benchreport

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Results are the outcome of one Benchmark: what ran against which targets, and one Point per run.
type Results struct {
	// Benchmark is the name of the Benchmark object.
	Benchmark string `json:"benchmark"`
	// Namespace of the Benchmark.
	Namespace string `json:"namespace"`
	// Workload is the rdx-bench workload, e.g. "smallbank".
	Workload string `json:"workload"`
	// SweepParameter is the parameter the runs sweep, e.g. "coroutines" or "ogp.gets"; empty: one point per
	// target.
	SweepParameter string `json:"sweepParameter,omitempty"`
	// Unit of Point.Throughput: "tx/s" or "ops/s".
	Unit string `json:"unit"`
	// Targets are the databases the runs were made against; every Point names one.
	Targets []Target `json:"targets"`
	// Points in run order.
	Points []Point `json:"points"`
	// Checker is the aggregated verdict of the history checker over every run.
	Checker *Checker `json:"checker,omitempty"`
}

// Target is one database a Benchmark ran against, with the configuration that distinguishes it from the others.
type Target struct {
	// Name of the target object.
	Name string `json:"name"`
	// Kind of the target object, e.g. "TxCluster".
	Kind string `json:"kind"`
	// TxnProtocol is the commit protocol, e.g. "dnl4".
	TxnProtocol string `json:"txnProtocol,omitempty"`
	// Replication is the replication protocol, e.g. "primary-backup".
	Replication string `json:"replication,omitempty"`
	// Transport is the network backend, "tcp" or "verbs".
	Transport string `json:"transport,omitempty"`
}

// Point is the outcome of one run against one target at one value of the swept parameter.
type Point struct {
	// Target names one of Results.Targets.
	Target string `json:"target"`
	// SweepValue is the swept parameter's value in this run; empty without a sweep.
	SweepValue string `json:"sweepValue,omitempty"`
	// Throughput in Results.Unit.
	Throughput float64 `json:"throughput"`
	// P50us, P99us and P999us are latency percentiles in microseconds.
	P50us  float64 `json:"p50us"`
	P99us  float64 `json:"p99us"`
	P999us float64 `json:"p999us"`
	// Committed operations (transactions) in the run.
	Committed int64 `json:"committed"`
	// Aborted transaction attempts in the run.
	Aborted int64 `json:"aborted"`
	// Errors the clients counted (failed requests other than aborts).
	Errors int64 `json:"errors"`
	// EmulatedOneSided counts one-sided operations (RDMA read, write, atomic) that the target's CPU executed
	// because the transport has none (tcp).
	EmulatedOneSided int64 `json:"emulatedOneSidedOps"`
	// AbortRate is Aborted / (Committed + Aborted), a fraction between 0 and 1.
	AbortRate float64 `json:"abortRate"`
	// Invariant is the workload's own consistency check after the run, e.g. "total balance preserved".
	Invariant string `json:"invariant,omitempty"`
	// Checker is the history checker's verdict on this run.
	Checker *Checker `json:"checker,omitempty"`
}

// Checker is a verdict of the history checker.
type Checker struct {
	// Verdict is Pass, Fail or Skipped.
	Verdict string `json:"verdict"`
	// Model is the consistency model checked, e.g. "serializability" or "linearizability".
	Model string `json:"model,omitempty"`
	// Checked is the number of operations (transactions) checked.
	Checked int64 `json:"checked"`
	// Violations found.
	Violations int64 `json:"violations"`
	// Message explains the verdict, e.g. the first violation.
	Message string `json:"message,omitempty"`
}

// Validate reports why r cannot be rendered: nil, no targets or points, targets without a name or named twice,
// points naming an unknown target, a sweep value missing (or set without a sweep parameter), or numbers that are
// negative, NaN or infinite. Render calls it; the kubectl plugin calls it on results.json it reads.
func (r *Results) Validate() error {
	if r == nil {
		return errors.New("benchreport: no results")
	}
	if len(r.Targets) == 0 {
		return errors.New("benchreport: results have no targets")
	}
	if len(r.Points) == 0 {
		return errors.New("benchreport: results have no points")
	}
	known := make(map[string]bool, len(r.Targets))
	for i, t := range r.Targets {
		if t.Name == "" {
			return fmt.Errorf("benchreport: target %d has no name", i)
		}
		if known[t.Name] {
			return fmt.Errorf("benchreport: target %q is listed twice", t.Name)
		}
		known[t.Name] = true
	}
	for i, p := range r.Points {
		if !known[p.Target] {
			return fmt.Errorf("benchreport: point %d names unknown target %q", i, p.Target)
		}
		switch {
		case r.SweepParameter != "" && strings.TrimSpace(p.SweepValue) == "":
			return fmt.Errorf("benchreport: point %d (target %q) has no value of the swept parameter %q", i, p.Target,
				r.SweepParameter)
		case r.SweepParameter == "" && p.SweepValue != "":
			return fmt.Errorf("benchreport: point %d (target %q) has sweep value %q but the results have no sweep "+
				"parameter", i, p.Target, p.SweepValue)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"throughput", p.Throughput}, {"p50us", p.P50us}, {"p99us", p.P99us}, {"p999us", p.P999us},
			{"abortRate", p.AbortRate}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				return fmt.Errorf("benchreport: point %d (target %q): %s is %v; want a finite number >= 0", i,
					p.Target, f.name, f.v)
			}
		}
		if p.Committed < 0 || p.Aborted < 0 || p.Errors < 0 || p.EmulatedOneSided < 0 {
			return fmt.Errorf("benchreport: point %d (target %q) has a negative count", i, p.Target)
		}
	}
	return nil
}

// Swept says whether the runs sweep a parameter.
func (r *Results) Swept() bool { return r.SweepParameter != "" }

// sweepAxis is the x axis of a sweep: the distinct sweep values in run order, and where each sits on the axis.
type sweepAxis struct {
	// values are the distinct sweep values in order of first appearance (run order).
	values []string
	// numeric is true when every value parses as a number; x then holds those numbers, otherwise the position of
	// the value in values (a categorical axis).
	numeric bool
	x       map[string]float64
}

func newSweepAxis(points []Point) sweepAxis {
	a := sweepAxis{numeric: true, x: map[string]float64{}}
	for _, p := range points {
		v := strings.TrimSpace(p.SweepValue)
		if _, ok := a.x[v]; ok {
			continue
		}
		a.values = append(a.values, v)
		a.x[v] = 0
		if f, err := strconv.ParseFloat(v, 64); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			a.numeric = false
		}
	}
	for i, v := range a.values {
		if a.numeric {
			a.x[v], _ = strconv.ParseFloat(v, 64)
		} else {
			a.x[v] = float64(i)
		}
	}
	return a
}

// series is what one target contributes to a plot: one value per sweep value (one value without a sweep), in axis
// order, averaged over repeated runs at the same value so that a repeated run neither draws a zigzag nor is dropped.
type series struct {
	target string
	// keys are the sweep values in axis order ("" without a sweep); the slices below are parallel to it.
	keys                       []string
	throughput, p50, p99, p999 []float64
}

// seriesByTarget averages r's points per target and sweep value, in the order of r.Targets; a target without a
// point gets an empty series, so it keeps its colour and legend entry and colours match across the plots.
func seriesByTarget(r *Results, axis sweepAxis) []*series {
	type acc struct {
		key                  string
		t, p50, p99, p999, n float64
	}
	accs := make(map[string][]*acc, len(r.Targets))
	for _, p := range r.Points {
		key := strings.TrimSpace(p.SweepValue)
		var a *acc
		for _, c := range accs[p.Target] {
			if c.key == key {
				a = c
			}
		}
		if a == nil {
			a = &acc{key: key}
			accs[p.Target] = append(accs[p.Target], a)
		}
		a.t, a.p50, a.p99, a.p999, a.n = a.t+p.Throughput, a.p50+p.P50us, a.p99+p.P99us, a.p999+p.P999us, a.n+1
	}
	out := make([]*series, len(r.Targets))
	for i, t := range r.Targets {
		as := accs[t.Name]
		// Axis order, so lines run left to right even when the runs did not; ties keep run order.
		sort.SliceStable(as, func(a, b int) bool { return axis.x[as[a].key] < axis.x[as[b].key] })
		s := &series{target: t.Name}
		for _, a := range as {
			s.keys = append(s.keys, a.key)
			s.throughput = append(s.throughput, a.t/a.n)
			s.p50 = append(s.p50, a.p50/a.n)
			s.p99 = append(s.p99, a.p99/a.n)
			s.p999 = append(s.p999, a.p999/a.n)
		}
		out[i] = s
	}
	return out
}
