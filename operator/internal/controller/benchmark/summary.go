// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rdxv1 "github.com/rdx-dev/rdx/operator/api/v1alpha1"
)

// summary is what rdx-bench --summary writes into the container's termination message (engine/docs/rdx-bench.md).
type summary struct {
	Version   int     `json:"rdx_bench_summary"`
	OK        bool    `json:"ok"`
	ExitCode  int     `json:"exit_code"`
	Error     string  `json:"error"`
	Mode      string  `json:"mode"`
	Stage     string  `json:"stage"`
	DurationS float64 `json:"duration_s"`
	Rate      float64 `json:"throughput"`
	Unit      string  `json:"unit"`
	Latency   struct {
		P50  float64 `json:"p50"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p999"`
	} `json:"latency_us"`
	Committed int64   `json:"committed"`
	Aborted   int64   `json:"aborted"`
	AbortRate float64 `json:"abort_rate"`
	Errors    int64   `json:"errors"`
	OneSided  int64   `json:"emulated_onesided_ops"`
	Ledger    int64   `json:"ledger"`
	Load      *struct {
		Records int64   `json:"records"`
		Seconds float64 `json:"seconds"`
	} `json:"load"`
	Checker *struct {
		Model      string `json:"model"`
		OK         bool   `json:"ok"`
		Checked    int64  `json:"checked"`
		Violations int64  `json:"violations"`
		Anomaly    string `json:"anomaly"`
	} `json:"checker"`
	Invariant *struct {
		Checked bool   `json:"checked"`
		OK      bool   `json:"ok"`
		Summary string `json:"summary"`
	} `json:"invariant"`
}

// parseSummary reads a termination message; ok is false when it is not an rdx-bench summary (e.g. the last log
// lines kubelet put there because rdx-bench died before writing one).
func parseSummary(msg string) (summary, bool) {
	var s summary
	if err := json.Unmarshal([]byte(strings.TrimSpace(msg)), &s); err != nil || s.Version != 1 {
		return summary{}, false
	}
	return s, true
}

// failure explains a summary whose run did not succeed, in one line.
func (s *summary) failure() string {
	var parts []string
	if s.Error != "" {
		parts = append(parts, s.Error)
	}
	if c := s.Checker; c != nil && !c.OK {
		parts = append(parts, fmt.Sprintf("%s checker: %d violations in %d checked: %s", c.Model, c.Violations,
			c.Checked, c.Anomaly))
	}
	if inv := s.Invariant; inv != nil && inv.Checked && !inv.OK {
		parts = append(parts, "invariant violated: "+inv.Summary)
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("rdx-bench exited with code %d", s.ExitCode))
	}
	return strings.Join(parts, "; ")
}

func micros(us float64) metav1.Duration {
	return metav1.Duration{Duration: time.Duration(math.Round(us * 1e3))}
}

// result turns a run's summary into its status entry.
func (s *summary) result(target, sweepValue string) rdxv1.BenchmarkResult {
	r := rdxv1.BenchmarkResult{
		Target: target, SweepValue: sweepValue,
		Throughput: int64(math.Round(s.Rate)), Unit: s.Unit,
		P50: micros(s.Latency.P50), P99: micros(s.Latency.P99), P999: micros(s.Latency.P999),
		Committed: s.Committed, Aborted: s.Aborted, Errors: s.Errors,
		AbortRate:           strconv.FormatFloat(s.AbortRate, 'f', 4, 64),
		EmulatedOneSidedOps: s.OneSided, BalanceDelta: s.Ledger,
	}
	if inv := s.Invariant; inv != nil && inv.Checked {
		verdict := "holds"
		if !inv.OK {
			verdict = "VIOLATED"
		}
		r.Invariant = truncate(verdict+": "+inv.Summary, 400)
	}
	if c := s.Checker; c != nil {
		r.Checker = &rdxv1.CheckerResult{Verdict: "Pass", Model: c.Model, Checked: c.Checked, Violations: c.Violations}
		switch {
		case c.OK:
		case c.Violations > 0:
			r.Checker.Verdict = "Fail"
			r.Checker.Message = truncate(c.Anomaly, 400)
		default: // the check itself could not finish (e.g. the cluster went away): no verdict on the data
			r.Checker.Verdict = "Skipped"
			r.Checker.Message = truncate("not checked: "+c.Anomaly, 400)
		}
	}
	return r
}

// progress is one `rdx-bench progress {...}` line of its output.
type progress struct {
	Stage    string  `json:"stage"`
	Elapsed  float64 `json:"elapsed_s"`
	Total    float64 `json:"total_s"`
	Ops      int64   `json:"ops"`
	OpsPerS  float64 `json:"ops_per_s"`
	recorded bool
}

const progressPrefix = "rdx-bench progress "

// lastProgress finds the newest progress line in a log tail.
func lastProgress(logTail string) progress {
	lines := strings.Split(logTail, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		_, rest, found := strings.Cut(lines[i], progressPrefix)
		if !found {
			continue
		}
		var p progress
		if json.Unmarshal([]byte(rest), &p) == nil {
			p.recorded = true
			return p
		}
	}
	return progress{}
}

// rate formats a throughput for status, e.g. "15234 tx/s".
func rate(v float64, unit string) string {
	return fmt.Sprintf("%.0f %s", v, unit)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
