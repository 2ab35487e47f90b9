// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchmark

import "testing"

func TestLastProgress(t *testing.T) {
	tail := "12:00:01.000 info loading\n" +
		`rdx-bench progress {"stage":"running","elapsed_s":3.0,"total_s":10.0,"ops":300,"ops_per_s":101.5}` + "\n" +
		`rdx-bench progress {"stage":"checking","elapsed_s":0.5,"total_s":0,"ops":0,"ops_per_s":0}` + "\n" +
		"checker: 1000 transactions\n" + `rdx-bench progress {"stage":` + "\n" // a line cut by the tail's limit
	p := lastProgress(tail)
	if !p.recorded || p.Stage != "checking" {
		t.Errorf("last progress %+v, want the checking line", p)
	}
	if p := lastProgress("no progress here\n"); p.recorded {
		t.Errorf("found progress in %+v", p)
	}
}

func TestParseSummary(t *testing.T) {
	if _, ok := parseSummary("12:00:01.000 error cannot reach the cluster\n"); ok {
		t.Error("a log tail parsed as a summary")
	}
	if _, ok := parseSummary(`{"rdx_bench_summary":2,"ok":true}`); ok {
		t.Error("an unknown summary version parsed")
	}
	s, ok := parseSummary(runSummary(1234.4, -5))
	if !ok || s.Rate != 1234.4 || s.Ledger != -5 || s.Checker == nil || !s.Checker.OK {
		t.Fatalf("summary %+v", s)
	}
	r := s.result("db", "4")
	if r.Throughput != 1234 || r.P50.Duration.String() != "40.5µs" || r.Checker.Verdict != "Pass" || r.BalanceDelta != -5 {
		t.Errorf("result %+v (checker %+v)", r, r.Checker)
	}
}
