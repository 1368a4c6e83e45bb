package main

// The charts: the main figures of a run as SVG files, drawn with
// gonum.org/v1/plot, for BENCHMARKS.md and the README. Each is a grouped
// bar chart, one group per workload or mode and one bar per
// implementation, each bar the median of the run; all but the HTTP one on
// a logarithmic scale, as their figures span two or three orders of
// magnitude (the floor's W1 against jrpc2's).

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// implColors gives every implementation the same colour in every chart.
var implColors = map[string]color.RGBA{
	"floor":       {0x99, 0x99, 0x99, 0xff},
	"ours":        {0x1f, 0x77, 0xb4, 0xff},
	"jrpc2":       {0xff, 0x7f, 0x0e, 0xff},
	"sourcegraph": {0x2c, 0xa0, 0x2c, 0xff},
	"xexp":        {0x94, 0x67, 0xbd, 0xff},
	"geth":        {0xd6, 0x27, 0x28, 0xff},
}

// chart is one grouped bar chart: values[impl][group], NaN where the
// implementation has no figure.
type chart struct {
	file, title, ylabel string
	groups              []string
	impls               []string
	values              map[string][]float64
	line                float64 // if not 0, a dashed line at this value (1 for ratios to the floor)
	linear              bool    // a linear scale from zero instead of a log scale
}

// drawCharts draws the charts of s into dir.
func drawCharts(dir string, s samples) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	med := func(name, unit string) float64 {
		if v, ok := median(s[name][unit]); ok && v > 0 {
			return v
		}
		return math.NaN()
	}
	var workloads []string // every workload but the hand-tuned one, which only ours and the floor run
	for _, w := range suite.Workloads {
		if !w.HandJSON {
			workloads = append(workloads, w.Name)
		}
	}
	libs := []string{"ours", "jrpc2", "sourcegraph", "xexp"}
	all := append([]string{"floor"}, libs...)
	ratios := func(kind, unit string) map[string][]float64 {
		vs := map[string][]float64{}
		for _, im := range libs {
			for _, w := range workloads {
				vs[im] = append(vs[im], med(kind+"/"+w+"/"+im, unit)/med(kind+"/"+w+"/floor", unit))
			}
		}
		return vs
	}
	charts := []chart{
		{
			file: "process-ratio.svg", title: "Whole process: wall time ÷ the floor's (lower is better)",
			ylabel: "× floor (log scale)", groups: workloads, impls: libs,
			values: ratios("Process", "ns/op"), line: 1,
		},
		{
			file: "inprocess-ratio.svg", title: "In process, server: time per request ÷ the floor's (lower is better)",
			ylabel: "× floor (log scale)", groups: workloads, impls: libs,
			values: ratios("Server", "ns/req"), line: 1,
		},
	}
	rss := chart{
		file: "rss.svg", title: "Whole process: peak RSS of the server (lower is better)",
		ylabel: "MiB (log scale)", groups: workloads, impls: all, values: map[string][]float64{},
	}
	for _, im := range all {
		for _, w := range workloads {
			rss.values[im] = append(rss.values[im], med("Process/"+w+"/"+im, "maxrss-MiB"))
		}
	}
	rt := chart{
		file: "roundtrip.svg", title: "Round trip over io.Pipe: time per call (lower is better)",
		ylabel: "µs per call (log scale)", groups: []string{"one caller", "64 callers"}, impls: all, values: map[string][]float64{},
	}
	for _, im := range all {
		for _, m := range netModes {
			rt.values[im] = append(rt.values[im], med("RoundTrip/"+m.name+"/"+im, "ns/call")/1e3)
		}
	}
	httpC := chart{
		file: "http.svg", title: "HTTP round trip on loopback: calls per second (higher is better)",
		ylabel: "calls/s", linear: true, groups: []string{"one caller", "64 callers"}, impls: netTables[0].cols, values: map[string][]float64{},
	}
	for _, im := range httpC.impls {
		for _, m := range netModes {
			httpC.values[im] = append(httpC.values[im], med("HTTP/"+m.name+"/"+im, "calls/s"))
		}
	}
	charts = append(charts, rss, rt, httpC)
	for _, c := range charts {
		if err := c.draw(filepath.Join(dir, c.file)); err != nil {
			return fmt.Errorf("%s: %w", c.file, err)
		}
	}
	return nil
}

// draw writes c as an SVG file at path. On a log scale, bars rise from a
// power of ten below the smallest value, as they cannot start at zero.
// A chart without any value is drawn empty, with a note saying so.
func (c chart) draw(path string) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, vs := range c.values {
		for _, v := range vs {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	p := plot.New()
	p.Title.Text = c.title
	p.Y.Label.Text = c.ylabel
	legend := plot.NewLegend() // drawn to the right of the plot, clear of the bars
	legend.Top = true
	legend.Left = true
	legend.ThumbnailWidth = 0.4 * vg.Centimeter
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.Padding = vg.Points(2)
	if math.IsInf(lo, 1) {
		p.Title.Text += " (no figures in this run)"
	} else {
		base := 0.0
		if c.linear {
			p.Y.Min, p.Y.Max = 0, hi*1.1
		} else {
			base = math.Pow10(int(math.Floor(math.Log10(lo))))
			if c.line > 0 {
				base = math.Min(base, math.Pow10(int(math.Floor(math.Log10(c.line)))))
			}
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = logTicks{}
			p.Y.Min, p.Y.Max = base, hi*2
		}
		w := vg.Points(60 / float64(len(c.impls)+1)) // bar width: a group takes 60 points
		for i, im := range c.impls {
			vs := c.values[im]
			floor := make(plotter.Values, len(c.groups))
			top := make(plotter.Values, len(c.groups))
			for j := range c.groups {
				floor[j] = base
				if j < len(vs) && !math.IsNaN(vs[j]) && !math.IsInf(vs[j], 0) && vs[j] > 0 {
					top[j] = vs[j] - base
				}
			}
			under, err := plotter.NewBarChart(floor, w)
			if err != nil {
				return err
			}
			bars, err := plotter.NewBarChart(top, w)
			if err != nil {
				return err
			}
			bars.StackOn(under)
			bars.Offset = w * vg.Length(float64(i)-float64(len(c.impls)-1)/2)
			bars.Color = implColors[im]
			bars.LineStyle.Width = 0
			p.Add(bars)
			legend.Add(im, bars)
		}
		if c.line > 0 {
			l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: c.line}, {X: float64(len(c.groups)) - 0.5, Y: c.line}})
			if err != nil {
				return err
			}
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			l.LineStyle.Color = color.Gray{0x55}
			p.Add(l)
		}
		p.Add(plotter.NewGrid())
	}
	p.NominalX(c.groups...)
	p.X.Min, p.X.Max = -0.5, float64(len(c.groups))-0.5

	const legendWidth = 3 * vg.Centimeter
	canvas := vgsvg.NewWith(vgsvg.UseWH(18*vg.Centimeter, 9*vg.Centimeter))
	dc := draw.New(canvas)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, dc.Max.X-legendWidth+0.3*vg.Centimeter, 0, 0, -0.8*vg.Centimeter))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// logTicks labels 1, 2 and 5 times each power of ten, so that a log
// axis of ratios reads 1, 2, 5, 10, 20 rather than only 1, 10, 100.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow10(int(e))
		for i := 1; i < 10; i++ {
			v := float64(i) * p
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || i == 2 || i == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
