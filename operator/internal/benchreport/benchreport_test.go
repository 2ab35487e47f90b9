// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchreport

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sweepResults is a smallbank sweep over coroutines against a tcp and a verbs TxCluster.
func sweepResults() *Results {
	r := &Results{
		Benchmark: "smallbank-coroutines", Namespace: "bench", Workload: "smallbank",
		SweepParameter: "coroutines", Unit: "tx/s",
		Targets: []Target{
			{Name: "dnl4-tcp", Kind: "TxCluster", TxnProtocol: "dnl4", Replication: "primary-backup", Transport: "tcp"},
			{Name: "dnl4-verbs", Kind: "TxCluster", TxnProtocol: "dnl4", Replication: "primary-backup",
				Transport: "verbs"},
		},
		Checker: &Checker{Verdict: "Pass", Model: "serializability", Checked: 1234567},
	}
	for i, c := range []string{"1", "2", "4", "8", "16", "32"} {
		for j, t := range r.Targets {
			scale := float64(int(1) << i)
			speed := 1.0 + 2.5*float64(j) // verbs is faster
			tput := 18000 * speed * scale / (1 + scale/12)
			p := Point{
				Target: t.Name, SweepValue: c, Throughput: tput,
				P50us: 40 * scale / speed, P99us: 160 * scale / speed, P999us: 900 * scale / speed,
				Committed: int64(tput * 30), Aborted: int64(tput * 30 * 0.002 * scale), Errors: int64(i % 2),
				AbortRate: 0.002 * scale / (1 + 0.002*scale), Invariant: "total balance preserved",
				Checker: &Checker{Verdict: "Pass", Model: "serializability", Checked: int64(tput)},
			}
			if t.Transport == "tcp" {
				p.EmulatedOneSided = int64(tput * 30 * 4)
			}
			r.Points = append(r.Points, p)
		}
	}
	return r
}

// noSweepResults compares three targets with one run each.
func noSweepResults() *Results {
	return &Results{
		Benchmark: "ycsb-a", Namespace: "default", Workload: "ycsb", Unit: "ops/s",
		Targets: []Target{
			{Name: "alpha", Kind: "TxCluster", TxnProtocol: "dnl4", Transport: "tcp"},
			{Name: "beta", Kind: "TxCluster", TxnProtocol: "dnl2", Transport: "tcp"},
			{Name: "gamma", Kind: "ReplicaSet", Replication: "primary-backup", Transport: "verbs"},
		},
		Points: []Point{
			{Target: "alpha", Throughput: 250000, P50us: 80, P99us: 400, P999us: 1500, Committed: 7500000},
			{Target: "beta", Throughput: 310000, P50us: 70, P99us: 300, P999us: 1100, Committed: 9300000},
			{Target: "gamma", Throughput: 1200000, P50us: 12, P99us: 35, P999us: 90, Committed: 36000000},
		},
		Checker: &Checker{Verdict: "Skipped", Message: "verify was false"},
	}
}

// checkPNG decodes a plot and checks it is 800x450 and actually drawn: coloured lines or bars, not a blank canvas.
func checkPNG(t *testing.T, name string, data []byte, wantColors ...[3]uint8) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	b := img.Bounds()
	if b.Dx() != 800 || b.Dy() != 450 {
		t.Errorf("%s is %dx%d, want 800x450", name, b.Dx(), b.Dy())
	}
	colors := map[[3]uint8]int{}
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := rgb(img, x, y)
			colors[c]++
			if c != [3]uint8{255, 255, 255} {
				nonWhite++
			}
		}
	}
	if len(colors) < 50 {
		t.Errorf("%s has %d distinct colours; a drawn plot (antialiased text and lines) has many more", name,
			len(colors))
	}
	if frac := float64(nonWhite) / float64(b.Dx()*b.Dy()); frac < 0.02 {
		t.Errorf("%s: only %.2f%% of the pixels are not white", name, 100*frac)
	}
	for _, want := range wantColors {
		if colors[want] < 20 {
			t.Errorf("%s: colour %v drawn on %d pixels; want a visible series in it", name, want, colors[want])
		}
	}
}

func rgb(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func rgbOf(i int) [3]uint8 {
	c := targetColors[i]
	return [3]uint8{c.R, c.G, c.B}
}

// httpURL matches anything the browser could fetch from the network.
var httpURL = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]`)

func checkHTML(t *testing.T, html string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(html, w) {
			t.Errorf("HTML lacks %q", w)
		}
	}
	if m := httpURL.FindString(html); m != "" || strings.Contains(strings.ToLower(html), "http") {
		t.Errorf("HTML refers to the network (%q); it must be self-contained", m)
	}
	for _, tag := range []string{"<script", "<link", "<iframe"} {
		if strings.Contains(html, tag) {
			t.Errorf("HTML contains %s", tag)
		}
	}
	if n := strings.Count(html, `src="data:image/png;base64,`); n != 2 {
		t.Errorf("HTML embeds %d PNG plots, want 2", n)
	}
	if len(html) > 400<<10 {
		t.Errorf("HTML is %d bytes, want at most 400 KiB", len(html))
	}
}

func TestRenderSweep(t *testing.T) {
	r := sweepResults()
	rep, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.PNGs) != 2 {
		t.Fatalf("PNGs %v, want throughput.png and latency.png", keys(rep.PNGs))
	}
	checkPNG(t, ThroughputPNG, rep.PNGs[ThroughputPNG], rgbOf(0), rgbOf(1))
	checkPNG(t, LatencyPNG, rep.PNGs[LatencyPNG], rgbOf(0), rgbOf(1))
	html := string(rep.HTML)
	checkHTML(t, html, "dnl4-tcp", "dnl4-verbs", "throughput (tx/s)", "coroutines", "latency (µs)",
		"smallbank", "serializability", "primary-backup", "verbs", "emulated one-sided ops",
		"executed by the target's CPU", "1,234,567 checked", "total balance preserved")
	// Every point has a row.
	if n := strings.Count(html, "<tr><td class=\"num\">"); n != len(r.Points) {
		t.Errorf("results table has %d rows, want %d", n, len(r.Points))
	}
	t.Logf("sweep: HTML %d bytes, throughput.png %d bytes, latency.png %d bytes", len(rep.HTML),
		len(rep.PNGs[ThroughputPNG]), len(rep.PNGs[LatencyPNG]))
	if dir := os.Getenv("BENCHREPORT_SAMPLE_DIR"); dir != "" {
		writeSample(t, dir, r, rep)
	}
}

func TestRenderNoSweep(t *testing.T) {
	r := noSweepResults()
	rep, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, ThroughputPNG, rep.PNGs[ThroughputPNG], rgbOf(0), rgbOf(1), rgbOf(2))
	checkPNG(t, LatencyPNG, rep.PNGs[LatencyPNG], [3]uint8{0x9e, 0xca, 0xe1}, [3]uint8{0x42, 0x92, 0xc6},
		[3]uint8{0x08, 0x51, 0x9c})
	checkHTML(t, string(rep.HTML), "alpha", "beta", "gamma", "throughput (ops/s)", "latency (µs)",
		"none (one run per target)", "Skipped", "verify was false", "ReplicaSet", "1,200,000")
	if dir := os.Getenv("BENCHREPORT_SAMPLE_DIR"); dir != "" {
		writeSample(t, filepath.Join(dir, "no-sweep"), r, rep)
	}
}

// TestRenderCategoricalSweep: sweep values that are not all numbers are placed one per tick in run order, and
// repeated runs at one value are averaged in the plot but all listed in the table.
func TestRenderCategoricalSweep(t *testing.T) {
	r := sweepResults()
	r.SweepParameter = "ycsb.distribution"
	vals := []string{"uniform", "zipf-0.9", "zipf-0.99", "uniform", "hotspot", "latest"}
	for i := range r.Points {
		r.Points[i].SweepValue = vals[i/2]
	}
	axis := newSweepAxis(r.Points)
	if axis.numeric || strings.Join(axis.values, ",") != "uniform,zipf-0.9,zipf-0.99,hotspot,latest" {
		t.Fatalf("axis %+v", axis)
	}
	ss := seriesByTarget(r, axis)
	if len(ss[0].keys) != 5 || ss[0].keys[0] != "uniform" {
		t.Fatalf("series keys %v", ss[0].keys)
	}
	if want := (r.Points[0].Throughput + r.Points[6].Throughput) / 2; math.Abs(ss[0].throughput[0]-want) > 1e-6 {
		t.Errorf("repeated value averaged to %v, want %v", ss[0].throughput[0], want)
	}
	rep, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, ThroughputPNG, rep.PNGs[ThroughputPNG], rgbOf(0), rgbOf(1))
	checkHTML(t, string(rep.HTML), "zipf-0.99", "hotspot", "ycsb.distribution")
}

func TestSweepAxis(t *testing.T) {
	pts := func(vs ...string) []Point {
		var ps []Point
		for _, v := range vs {
			ps = append(ps, Point{SweepValue: v})
		}
		return ps
	}
	a := newSweepAxis(pts("8", "1", " 2.5", "8"))
	if !a.numeric || a.x["1"] != 1 || a.x["2.5"] != 2.5 || len(a.values) != 3 || !a.logX() {
		t.Errorf("numeric axis %+v logX %v", a, a.logX())
	}
	if b := newSweepAxis(pts("1", "2", "3")); b.logX() {
		t.Errorf("1..3 should be linear")
	}
	c := newSweepAxis(pts("1", "2", "1s"))
	if c.numeric || c.x["1s"] != 2 {
		t.Errorf("categorical axis %+v", c)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{FormatThroughput(1234567.4), "1,234,567"}, {FormatThroughput(99.94), "99.9"}, {FormatThroughput(100), "100"},
		{FormatCount(0), "0"}, {FormatCount(-1234), "-1,234"}, {FormatCount(123456), "123,456"},
		{FormatRate(0.01234), "1.23%"}, {FormatMicros(12.345), "12.3"}, {FormatMicros(12345.67), "12,345.7"},
		{siLabel(950), "950"}, {siLabel(12500), "12.5k"}, {siLabel(1.2e6), "1.2M"}, {siLabel(2.5), "2.5"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestHTMLEscapes: names come from users (object names are restricted, but messages are free text).
func TestHTMLEscapes(t *testing.T) {
	r := noSweepResults()
	r.Checker.Message = `<script>alert("x")</script>`
	r.Workload = "a&b"
	rep, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	html := string(rep.HTML)
	if strings.Contains(html, "<script>") || !strings.Contains(html, "&lt;script&gt;") || !strings.Contains(html, "a&amp;b") {
		t.Errorf("strings are not escaped")
	}
}

func TestRenderErrors(t *testing.T) {
	for name, c := range map[string]struct {
		r    *Results
		want string
	}{
		"nil":         {nil, "no results"},
		"no targets":  {&Results{Points: []Point{{Target: "a"}}}, "no targets"},
		"no points":   {&Results{Targets: []Target{{Name: "a"}}}, "no points"},
		"unknown":     {mutate(func(r *Results) { r.Points[1].Target = "zeta" }), `unknown target "zeta"`},
		"unnamed":     {mutate(func(r *Results) { r.Targets[0].Name = "" }), "has no name"},
		"twice":       {mutate(func(r *Results) { r.Targets[1].Name = "alpha" }), "listed twice"},
		"nan":         {mutate(func(r *Results) { r.Points[0].P99us = math.NaN() }), "p99us is NaN"},
		"negative":    {mutate(func(r *Results) { r.Points[0].Throughput = -1 }), "throughput is -1"},
		"count":       {mutate(func(r *Results) { r.Points[0].Aborted = -1 }), "negative count"},
		"stray sweep": {mutate(func(r *Results) { r.Points[0].SweepValue = "4" }), "no sweep parameter"},
		"missing sweep": {func() *Results { r := sweepResults(); r.Points[3].SweepValue = " "; return r }(),
			`no value of the swept parameter "coroutines"`},
	} {
		t.Run(name, func(t *testing.T) {
			rep, err := Render(c.r)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Render: %v, %v; want an error containing %q", rep, err, c.want)
			}
		})
	}
}

func mutate(f func(*Results)) *Results {
	r := noSweepResults()
	f(r)
	return r
}

// TestJSONNames pins the JSON field names the controller writes and the plugin reads.
func TestJSONNames(t *testing.T) {
	b, err := json.Marshal(sweepResults().Points[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"target"`, `"sweepValue"`, `"throughput"`, `"p50us"`, `"p99us"`, `"p999us"`,
		`"committed"`, `"aborted"`, `"errors"`, `"emulatedOneSidedOps"`, `"abortRate"`, `"invariant"`, `"checker"`,
		`"verdict"`, `"model"`, `"checked"`, `"violations"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("point JSON %s lacks %s", b, k)
		}
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// writeSample saves a rendered report for a human to look at: BENCHREPORT_SAMPLE_DIR=/tmp/x go test -run Sweep.
func writeSample(t *testing.T, dir string, r *Results, rep *Report) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	js, _ := json.MarshalIndent(r, "", "  ")
	files := map[string][]byte{"report.html": rep.HTML, "results.json": js}
	for k, v := range rep.PNGs {
		files[k] = v
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote the sample report to %s", dir)
}
