// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchreport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Names of the plots in Report.PNGs (and of the files the kubectl plugin writes).
const (
	ThroughputPNG = "throughput.png"
	LatencyPNG    = "latency.png"
)

// Report is a rendered Results.
type Report struct {
	// HTML is one self-contained page: it loads nothing (the plots are embedded as data: URIs) and runs no script,
	// so it can be stored in a ConfigMap, mailed or opened offline.
	HTML []byte
	// PNGs are the plots by file name: ThroughputPNG and LatencyPNG.
	PNGs map[string][]byte
}

// Render validates r and renders its plots and HTML page.
func Render(r *Results) (*Report, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	throughput, latency, err := plots(r)
	if err != nil {
		return nil, err
	}
	page := pageData{
		R:             r,
		Title:         title(r),
		ThroughputCol: throughputLabel(r.Unit),
		LatencyCol:    latencyLabel,
		ThroughputImg: dataURI(throughput),
		LatencyImg:    dataURI(latency),
	}
	for _, p := range r.Points {
		page.HasInvariant = page.HasInvariant || p.Invariant != ""
		page.HasChecker = page.HasChecker || p.Checker != nil
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, page); err != nil {
		return nil, fmt.Errorf("benchreport: render html: %w", err)
	}
	return &Report{HTML: buf.Bytes(), PNGs: map[string][]byte{ThroughputPNG: throughput, LatencyPNG: latency}}, nil
}

func title(r *Results) string {
	name := r.Benchmark
	if name == "" {
		name = "(unnamed)"
	}
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return "rdx benchmark " + name
}

// dataURI is the src attribute embedding a PNG in the page. It is marked safe as a whole attribute: html/template
// would otherwise replace a data: URI, or (as a template.URL) entity-escape every '+' of the base64 text. That is
// sound because the value is only base64 text, which holds no quote, '&' or '<'.
func dataURI(png []byte) template.HTMLAttr {
	return template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(png) + `"`)
}

type pageData struct {
	R                                *Results
	Title, ThroughputCol, LatencyCol string
	ThroughputImg, LatencyImg        template.HTMLAttr
	HasInvariant, HasChecker         bool
}

// FormatThroughput prints a throughput with thousands separators, with one decimal below 100.
func FormatThroughput(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return group(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
}

// FormatMicros prints a latency in microseconds with one decimal and thousands separators.
func FormatMicros(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	dot := strings.IndexByte(s, '.')
	return group(s[:dot]) + s[dot:]
}

// FormatCount prints a count with thousands separators.
func FormatCount(v int64) string { return group(strconv.FormatInt(v, 10)) }

// FormatRate prints a fraction as a percentage with two decimals.
func FormatRate(v float64) string { return strconv.FormatFloat(v*100, 'f', 2, 64) + "%" }

// group inserts a comma every three digits of an integer's decimal digits.
func group(digits string) string {
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

func verdictClass(v string) string {
	switch strings.ToLower(v) {
	case "pass":
		return "pass"
	case "fail":
		return "fail"
	}
	return "other"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"tput": FormatThroughput, "us": FormatMicros, "count": FormatCount, "rate": FormatRate,
	"verdictClass": verdictClass, "orDash": orDash, "inc": func(i int) int { return i + 1 },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; margin: 2em auto;
  max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; margin: .8em 0; }
dl.meta dt { color: #666; }
dl.meta dd { margin: 0; }
table { border-collapse: collapse; font-size: .92em; }
th, td { border-bottom: 1px solid #e4e4e4; padding: .3em .7em; text-align: left; vertical-align: top; }
th { background: #f5f5f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.verdict { font-weight: 700; padding: .05em .5em; border-radius: .3em; }
.verdict.pass { background: #dff3df; color: #1b6b1b; }
.verdict.fail { background: #fadddd; color: #9b1c1c; }
.verdict.other { background: #eee; color: #555; }
.note { color: #555; font-size: .88em; max-width: 60em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #666; font-size: .88em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<dl class="meta">
<dt>workload</dt><dd>{{orDash .R.Workload}}</dd>
<dt>swept parameter</dt><dd>{{if .R.SweepParameter}}{{.R.SweepParameter}}{{else}}none (one run per target){{end}}</dd>
<dt>throughput unit</dt><dd>{{orDash .R.Unit}}</dd>
<dt>runs</dt><dd>{{len .R.Points}} against {{len .R.Targets}} target{{if ne (len .R.Targets) 1}}s{{end}}</dd>
</dl>

<h2>Targets</h2>
<table>
<thead><tr><th>target</th><th>kind</th><th>transaction protocol</th><th>replication</th><th>transport</th></tr></thead>
<tbody>
{{- range .R.Targets}}
<tr><td>{{.Name}}</td><td>{{orDash .Kind}}</td><td>{{orDash .TxnProtocol}}</td><td>{{orDash .Replication}}</td><td>{{orDash .Transport}}</td></tr>
{{- end}}
</tbody>
</table>

<h2>History checker</h2>
{{- with .R.Checker}}
<p><span class="verdict {{verdictClass .Verdict}}">{{orDash .Verdict}}</span>
{{- if .Model}} {{.Model}}{{end}}: {{count .Checked}} checked, {{count .Violations}} violation{{if ne .Violations 1}}s{{end}}.</p>
{{- if .Message}}
<p class="note">{{.Message}}</p>
{{- end}}
{{- else}}
<p><span class="verdict other">not checked</span> the Benchmark recorded no checker verdict.</p>
{{- end}}

<h2>Plots</h2>
<figure>
<img {{.ThroughputImg}} width="800" height="450" alt="{{.ThroughputCol}}{{if .R.SweepParameter}} against {{.R.SweepParameter}}{{end}}, per target">
<figcaption>{{.ThroughputCol}}{{if .R.SweepParameter}} against {{.R.SweepParameter}}{{end}}, one {{if .R.SweepParameter}}line{{else}}bar{{end}} per target{{if .R.SweepParameter}}; repeated runs at one value are averaged{{end}}.</figcaption>
</figure>
<figure>
<img {{.LatencyImg}} width="800" height="450" alt="{{.LatencyCol}}: p50, p99 and p999{{if .R.SweepParameter}} against {{.R.SweepParameter}}{{end}}, per target">
<figcaption>{{.LatencyCol}}: percentiles p50, p99 and p999{{if .R.SweepParameter}} against {{.R.SweepParameter}}{{end}}, per target{{if .R.SweepParameter}} (colour: target; dash and marker: percentile){{end}}.</figcaption>
</figure>

<h2>Results</h2>
<table>
<thead><tr><th class="num">#</th><th>target</th>{{if .R.SweepParameter}}<th>{{.R.SweepParameter}}</th>{{end}}
<th class="num">{{.ThroughputCol}}</th><th class="num">p50 (µs)</th><th class="num">p99 (µs)</th><th class="num">p999 (µs)</th>
<th class="num">committed</th><th class="num">aborted</th><th class="num">abort rate</th><th class="num">errors</th>
<th class="num">emulated one-sided ops&nbsp;*</th>{{if .HasInvariant}}<th>invariant</th>{{end}}{{if .HasChecker}}<th>checker</th>{{end}}</tr></thead>
<tbody>
{{- $swept := .R.SweepParameter}}{{$inv := .HasInvariant}}{{$chk := .HasChecker}}
{{- range $i, $p := .R.Points}}
<tr><td class="num">{{inc $i}}</td><td>{{$p.Target}}</td>{{if $swept}}<td>{{$p.SweepValue}}</td>{{end}}
<td class="num">{{tput $p.Throughput}}</td><td class="num">{{us $p.P50us}}</td><td class="num">{{us $p.P99us}}</td><td class="num">{{us $p.P999us}}</td>
<td class="num">{{count $p.Committed}}</td><td class="num">{{count $p.Aborted}}</td><td class="num">{{rate $p.AbortRate}}</td><td class="num">{{count $p.Errors}}</td>
<td class="num">{{count $p.EmulatedOneSided}}</td>
{{- if $inv}}<td>{{orDash $p.Invariant}}</td>{{end}}
{{- if $chk}}<td>{{with $p.Checker}}<span class="verdict {{verdictClass .Verdict}}">{{.Verdict}}</span> {{count .Checked}} checked, {{count .Violations}} violations{{if .Message}}: {{.Message}}{{end}}{{else}}—{{end}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
<p class="note">* On the tcp transport there is no RDMA: one-sided operations (reads, writes and atomics on remote
memory) are executed by the target's CPU and counted as emulated one-sided ops. The abort rate is aborted / (committed
+ aborted). Runs are numbered in run order, from 1.</p>
</body>
</html>
`))
