// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package benchreport

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot size: 800x450 pixels at 96 dpi (gonum measures in points, 1/72 inch), wide enough for a legend beside the
// data and readable when the HTML page shows it at its natural size.
const (
	plotDPI    = 96
	plotWidth  = 800 * vg.Inch / plotDPI
	plotHeight = 450 * vg.Inch / plotDPI
)

// targetColors tell targets apart (the Tableau 10 palette: distinct for most colour-blind readers too); target i
// has colour i in both plots.
var targetColors = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

func targetColor(i int) color.Color { return targetColors[i%len(targetColors)] }

// percentile is one latency percentile as plotted: a value of a series, and how it is drawn.
type percentile struct {
	name   string
	values func(*series) []float64
	// dashes and glyph tell the percentiles of one target apart in a sweep (the colour is the target's).
	dashes []vg.Length
	glyph  draw.GlyphDrawer
	// barColor fills the percentile's bars without a sweep (bars are grouped by target, so colour is free).
	barColor color.Color
}

var percentiles = []percentile{
	{"p50", func(s *series) []float64 { return s.p50 }, nil, draw.CircleGlyph{},
		color.RGBA{0x9e, 0xca, 0xe1, 0xff}},
	{"p99", func(s *series) []float64 { return s.p99 }, []vg.Length{vg.Points(6), vg.Points(3)},
		draw.SquareGlyph{}, color.RGBA{0x42, 0x92, 0xc6, 0xff}},
	{"p999", func(s *series) []float64 { return s.p999 }, []vg.Length{vg.Points(2), vg.Points(2)},
		draw.TriangleGlyph{}, color.RGBA{0x08, 0x51, 0x9c, 0xff}},
}

// plots renders the throughput and the latency plot of r (already validated) as PNG.
func plots(r *Results) (throughput, latency []byte, err error) {
	axis := newSweepAxis(r.Points)
	ss := seriesByTarget(r, axis)
	var tp, lp *plot.Plot
	var tl, ll *plot.Legend
	if r.Swept() {
		tp, tl, err = throughputSweep(r, axis, ss)
		if err == nil {
			lp, ll, err = latencySweep(r, axis, ss)
		}
	} else {
		tp, err = throughputBars(r, ss)
		if err == nil {
			lp, ll, err = latencyBars(r, ss)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if throughput, err = renderPNG(tp, tl); err != nil {
		return nil, nil, err
	}
	if latency, err = renderPNG(lp, ll); err != nil {
		return nil, nil, err
	}
	return throughput, latency, nil
}

// throughputLabel is the throughput axis label with its unit.
func throughputLabel(unit string) string {
	if unit == "" {
		return "throughput"
	}
	return "throughput (" + unit + ")"
}

// latencyLabel is the latency axis label.
const latencyLabel = "latency (µs)"

// sans is the typeface of every text in the plots: Liberation Sans, which gonum embeds (no system font is read),
// matches the page's sans-serif text better than gonum's default serif.
const sans = "Sans"

func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font} {
		f.Variant = sans
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Tick.Marker = siTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0 // horizontal lines only: the x ticks are few and labelled
	grid.Horizontal.Color = color.Gray{Y: 0xdd}
	p.Add(grid)
	return p
}

func newLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(10)
	l.TextStyle.Font.Variant = sans
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(24)
	l.Padding = vg.Points(3)
	return &l
}

// throughputSweep draws throughput against the swept parameter, one line per target.
func throughputSweep(r *Results, axis sweepAxis, ss []*series) (*plot.Plot, *plot.Legend, error) {
	p := newPlot(r.Workload+": throughput", sweepLabel(r.SweepParameter, axis), throughputLabel(r.Unit))
	l := newLegend()
	for i, s := range ss {
		line, points, err := linePoints(axis, s.keys, s.throughput)
		if err != nil {
			return nil, nil, fmt.Errorf("benchreport: throughput of %q: %w", s.target, err)
		}
		line.Color, line.Width = targetColor(i), vg.Points(2)
		points.Color, points.Shape, points.Radius = targetColor(i), draw.CircleGlyph{}, vg.Points(3)
		if len(s.keys) > 0 {
			p.Add(line, points)
		}
		l.Add(s.target, line, points)
	}
	sweepTicks(p, axis)
	fromZero(&p.Y)
	return p, l, nil
}

// latencySweep draws p50, p99 and p999 against the swept parameter: the colour is the target's, the dash pattern
// and glyph the percentile's. The y axis is logarithmic when the values span more than a decade, since p999 is
// often far above p50.
func latencySweep(r *Results, axis sweepAxis, ss []*series) (*plot.Plot, *plot.Legend, error) {
	p := newPlot(r.Workload+": latency", sweepLabel(r.SweepParameter, axis), latencyLabel)
	l := newLegend()
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range ss {
		for _, pc := range percentiles {
			ys := pc.values(s)
			line, points, err := linePoints(axis, s.keys, ys)
			if err != nil {
				return nil, nil, fmt.Errorf("benchreport: %s latency of %q: %w", pc.name, s.target, err)
			}
			line.Color, line.Width, line.Dashes = targetColor(i), vg.Points(1.5), pc.dashes
			points.Color, points.Shape, points.Radius = targetColor(i), pc.glyph, vg.Points(2.5)
			if len(ys) > 0 {
				p.Add(line, points)
			}
			l.Add(s.target+" "+pc.name, line, points)
			for _, y := range ys {
				lo, hi = math.Min(lo, y), math.Max(hi, y)
			}
		}
	}
	sweepTicks(p, axis)
	if lo > 0 && hi/lo > 10 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = lo/1.25, hi*1.25
		p.Y.Label.Text = latencyLabel + ", log scale"
	} else {
		fromZero(&p.Y)
	}
	return p, l, nil
}

// throughputBars draws one bar per target, labelled with its throughput.
func throughputBars(r *Results, ss []*series) (*plot.Plot, error) {
	p := newPlot(r.Workload+": throughput", "", throughputLabel(r.Unit))
	width := barWidth(len(ss), 1)
	var xys plotter.XYs
	var labels []string
	for i, s := range ss {
		v := 0.0
		if len(s.throughput) > 0 {
			v = s.throughput[0]
		}
		bar, err := plotter.NewBarChart(plotter.Values{v}, width)
		if err != nil {
			return nil, fmt.Errorf("benchreport: throughput of %q: %w", s.target, err)
		}
		bar.XMin, bar.Color, bar.LineStyle.Width = float64(i), targetColor(i), 0
		p.Add(bar)
		xys = append(xys, plotter.XY{X: float64(i), Y: v})
		labels = append(labels, siLabel(v))
	}
	values, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range values.TextStyle {
		values.TextStyle[i].XAlign = draw.XCenter
		values.TextStyle[i].Font.Size = vg.Points(10)
		values.TextStyle[i].Font.Variant = sans
	}
	values.Offset = vg.Point{Y: vg.Points(4)}
	p.Add(values)
	p.NominalX(names(ss)...)
	p.X.Min, p.X.Max = -0.5, float64(len(ss))-0.5
	fromZero(&p.Y)
	p.Y.Max *= 1.08 // room for the value labels above the bars
	return p, nil
}

// latencyBars draws p50, p99 and p999 of every target as grouped bars, one group per target.
func latencyBars(r *Results, ss []*series) (*plot.Plot, *plot.Legend, error) {
	p := newPlot(r.Workload+": latency", "", latencyLabel)
	l := newLegend()
	width := barWidth(len(ss), len(percentiles))
	for k, pc := range percentiles {
		vs := make(plotter.Values, len(ss))
		for i, s := range ss {
			if ys := pc.values(s); len(ys) > 0 {
				vs[i] = ys[0]
			}
		}
		bar, err := plotter.NewBarChart(vs, width)
		if err != nil {
			return nil, nil, fmt.Errorf("benchreport: %s latency: %w", pc.name, err)
		}
		bar.Color, bar.LineStyle.Width = pc.barColor, 0
		bar.Offset = vg.Length(k-(len(percentiles)-1)/2) * width
		p.Add(bar)
		l.Add(pc.name, bar)
	}
	p.NominalX(names(ss)...)
	p.X.Min, p.X.Max = -0.5, float64(len(ss))-0.5
	fromZero(&p.Y)
	return p, l, nil
}

func names(ss []*series) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.target
	}
	return out
}

// barWidth fits groups of perGroup bars for n targets into the data area, at most 60 points per group.
func barWidth(n, perGroup int) vg.Length {
	w := math.Min(60, 420/float64(n)) / float64(perGroup)
	return vg.Points(math.Max(w, 2))
}

// linePoints is one series of a sweep plot: ys at the axis positions of keys.
func linePoints(axis sweepAxis, keys []string, ys []float64) (*plotter.Line, *plotter.Scatter, error) {
	xys := make(plotter.XYs, len(keys))
	for i, k := range keys {
		xys[i] = plotter.XY{X: axis.x[k], Y: ys[i]}
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil, nil, err
	}
	points, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, nil, err
	}
	return line, points, nil
}

// logX says whether a numeric sweep is better read on a logarithmic axis: positive values spanning at least a
// factor 8, as in the usual 1, 2, 4, ... 64 sweeps, which a linear axis crowds into its left edge.
func (a sweepAxis) logX() bool {
	if !a.numeric || len(a.values) < 3 {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range a.values {
		lo, hi = math.Min(lo, a.x[v]), math.Max(hi, a.x[v])
	}
	return lo > 0 && hi/lo >= 8
}

func sweepLabel(param string, axis sweepAxis) string {
	if axis.logX() {
		return param + " (log scale)"
	}
	return param
}

// sweepTicks marks the sweep values themselves on the x axis, with the run's own spelling; a numeric sweep with
// many values keeps the default ticks, which would otherwise overlap.
func sweepTicks(p *plot.Plot, axis sweepAxis) {
	lo, hi := math.Inf(1), math.Inf(-1)
	var ticks plot.ConstantTicks
	for _, v := range axis.values {
		x := axis.x[v]
		lo, hi = math.Min(lo, x), math.Max(hi, x)
		ticks = append(ticks, plot.Tick{Value: x, Label: v})
	}
	switch {
	case !axis.numeric:
		p.X.Tick.Marker = ticks
		p.X.Min, p.X.Max = -0.5, float64(len(axis.values))-0.5
	case axis.logX():
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = ticks
		if len(ticks) > 12 {
			p.X.Tick.Marker = logTicks{}
		}
		p.X.Min, p.X.Max = lo/1.15, hi*1.15
	default:
		if len(ticks) <= 12 {
			p.X.Tick.Marker = ticks
		}
		pad := (hi - lo) * 0.04
		if pad == 0 {
			pad = math.Max(math.Abs(lo)*0.1, 1)
		}
		p.X.Min, p.X.Max = lo-pad, hi+pad
	}
}

// fromZero starts a linear axis at zero, so that heights compare honestly, with a little headroom on top.
func fromZero(a *plot.Axis) {
	a.Min = 0
	if a.Max <= 0 {
		a.Max = 1
	}
	a.Max *= 1.05
}

// siTicks are gonum's default linear ticks labelled with SI suffixes (12k, 1.5M): throughputs in the millions
// would otherwise be printed with every digit.
type siTicks struct{}

func (siTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = siLabel(ts[i].Value)
		}
	}
	return ts
}

// logTicks label 1, 2 and 5 times every power of ten in range (gonum's LogTicks label only powers of ten, which
// leaves a range within one decade unlabelled), with minor ticks at the other integers times the power.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = siLabel(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// siLabel formats v with at most three significant digits and an SI suffix: 950, 12.5k, 1.2M.
func siLabel(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trimFloat(v/1e9) + "G"
	case a >= 1e6:
		return trimFloat(v/1e6) + "M"
	case a >= 1e4:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// renderPNG draws p with its legend (if any) in a column to the right of the data, where it never covers a line.
func renderPNG(p *plot.Plot, l *plot.Legend) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	dc := draw.New(c)
	margin := vg.Points(8)
	dc = draw.Crop(dc, margin, -margin, margin/2, -margin)
	plotArea := dc
	if l != nil {
		lw := l.Rectangle(dc).Size().X + margin
		plotArea = draw.Crop(dc, 0, -lw-margin, 0, 0)
		// Top of the legend level with the top of the data area, below the title.
		top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		l.Draw(draw.Crop(dc, dc.Size().X-lw, 0, 0, -top))
	}
	p.Draw(plotArea)
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("benchreport: encode png: %w", err)
	}
	return buf.Bytes(), nil
}
