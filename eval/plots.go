package eval

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The plots WritePlots draws, by file name.
const (
	PlotEMF1          = "em_f1.svg"
	PlotRounds        = "rounds.svg"
	PlotCalibration   = "calibration.svg"
	PlotCompressionF1 = "compression_f1.svg"
)

// WritePlots draws r's plots as SVG files in dir (created if needed): EM
// and F1 by variant, the rounds histogram of each variant, calibration (FP
// rate and complete-judged-insufficient) by variant, and compression ratio
// against F1. Each file is written under a temporary name and renamed into
// place. It returns the paths written, in that order.
func WritePlots(dir string, r Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write plots: %w", err)
	}
	plots := []struct {
		name string
		draw func(Report) (*plot.Plot, vg.Length, error)
	}{
		{PlotEMF1, plotEMF1},
		{PlotRounds, plotRounds},
		{PlotCalibration, plotCalibration},
		{PlotCompressionF1, plotCompressionF1},
	}
	var written []string
	for _, pl := range plots {
		p, width, err := pl.draw(r)
		if err != nil {
			return written, fmt.Errorf("plot %s: %w", pl.name, err)
		}
		path := filepath.Join(dir, pl.name)
		if err := saveSVG(p, width, path); err != nil {
			return written, fmt.Errorf("plot %s: %w", pl.name, err)
		}
		written = append(written, path)
	}
	return written, nil
}

// plotHeight is the height of every plot; widths grow with the variants.
const plotHeight = 4 * vg.Inch

// saveSVG renders p as SVG and writes it to path through a temporary file.
func saveSVG(p *plot.Plot, width vg.Length, path string) error {
	wt, err := p.WriterTo(width, plotHeight, "svg")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing left to remove
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// plotWidth leaves room for groups of bars.
func plotWidth(groups, barsPerGroup int) vg.Length {
	return max(6*vg.Inch, vg.Length(groups)*vg.Length(max(barsPerGroup, 2))*0.35*vg.Inch+1.5*vg.Inch)
}

func variantNames(r Report) []string {
	names := make([]string, len(r.Variants))
	for i, v := range r.Variants {
		names[i] = v.Name
	}
	return names
}

// newPlot starts a plot with a title and axis labels, and tilts the tick
// labels of nominal X axes with many or long names.
func newPlot(title, x, y string, names []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	long := len(names) > 4
	for _, n := range names {
		long = long || len(n) > 12
	}
	if long {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	return p
}

// groupedBars adds one bar chart per series (series[i][g] is the bar of
// series i in group g), side by side within each group, with a legend.
func groupedBars(p *plot.Plot, seriesNames []string, series [][]float64) error {
	if len(series) == 0 || len(series[0]) == 0 {
		return nil
	}
	w := vg.Points(min(24, 160/float64(len(series))))
	for i, s := range series {
		bars, err := plotter.NewBarChart(plotter.Values(s), w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = vg.Length(0)
		bars.Offset = (vg.Length(i) - vg.Length(len(series)-1)/2) * w
		p.Add(bars)
		p.Legend.Add(seriesNames[i], bars)
	}
	return nil
}

// nominalX names the X axis's ticks; without names (an empty report) it
// gives the axis a plain range instead.
func nominalX(p *plot.Plot, names []string) {
	if len(names) == 0 {
		p.X.Min, p.X.Max = 0, 1
		return
	}
	p.NominalX(names...)
}

// percentAxis shows 0-100 on the Y axis, with a band above for the legend.
func percentAxis(p *plot.Plot) {
	p.Y.Min, p.Y.Max = 0, 125
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{
		{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"},
		{Value: 75, Label: "75"}, {Value: 100, Label: "100"},
	})
}

func plotEMF1(r Report) (*plot.Plot, vg.Length, error) {
	names := variantNames(r)
	p := newPlot("EM and F1 by variant ("+r.Dataset+")", "variant", "percent", names)
	em, f1 := make([]float64, len(names)), make([]float64, len(names))
	for i, v := range r.Variants {
		em[i], f1[i] = v.Metrics.EM, v.Metrics.F1
	}
	if err := groupedBars(p, []string{"EM", "F1"}, [][]float64{em, f1}); err != nil {
		return nil, 0, err
	}
	nominalX(p, names)
	percentAxis(p)
	return p, plotWidth(len(names), 2), nil
}

func plotRounds(r Report) (*plot.Plot, vg.Length, error) {
	names := variantNames(r)
	n := 0
	for _, v := range r.Variants {
		n = max(n, len(v.Metrics.Rounds))
	}
	rounds := make([]string, n)
	for i := range rounds {
		rounds[i] = strconv.Itoa(i)
	}
	p := newPlot("Retrievals per question ("+r.Dataset+")", "retrievals", "questions", nil)
	series := make([][]float64, len(names))
	for i, v := range r.Variants {
		series[i] = make([]float64, n)
		for j, c := range v.Metrics.Rounds {
			series[i][j] = float64(c)
		}
	}
	if err := groupedBars(p, names, series); err != nil {
		return nil, 0, err
	}
	nominalX(p, rounds)
	most := 0.0
	for _, s := range series {
		for _, c := range s {
			most = max(most, c)
		}
	}
	// Room above the bars for the legend, on the left where round 0 (never
	// used: one retrieval always happens) leaves space.
	p.Y.Min, p.Y.Max = 0, max(1, 1.35*most)
	p.Legend.Left = true
	return p, plotWidth(n, len(names)), nil
}

func plotCalibration(r Report) (*plot.Plot, vg.Length, error) {
	names := variantNames(r)
	p := newPlot("Sufficiency calibration ("+r.Dataset+")", "variant", "percent of states", names)
	fp, fn := make([]float64, len(names)), make([]float64, len(names))
	for i, v := range r.Variants {
		fp[i] = v.Metrics.Calibration.FalsePositiveRate
		fn[i] = v.Metrics.Calibration.CompleteJudgedInsufficient
	}
	if err := groupedBars(p, []string{"FP rate (sufficient, gold incomplete)", "complete judged insufficient"}, [][]float64{fp, fn}); err != nil {
		return nil, 0, err
	}
	nominalX(p, names)
	percentAxis(p)
	return p, plotWidth(len(names), 2), nil
}

func plotCompressionF1(r Report) (*plot.Plot, vg.Length, error) {
	p := newPlot("Compression against F1 ("+r.Dataset+")", "compression ratio (evidence / raw characters)", "F1", nil)
	xys := make(plotter.XYs, len(r.Variants))
	maxRatio := 0.0
	for i, v := range r.Variants {
		xys[i].X, xys[i].Y = v.Metrics.Compression.Ratio, v.Metrics.F1
		maxRatio = max(maxRatio, xys[i].X)
	}
	if len(xys) > 0 {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, 0, err
		}
		sc.GlyphStyle.Radius = vg.Points(3)
		sc.GlyphStyle.Color = plotutil.Color(0)
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: variantNames(r)})
		if err != nil {
			return nil, 0, err
		}
		labels.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(2)}
		p.Add(sc, labels)
	}
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = 0, max(1, 1.15*maxRatio)
	p.Y.Min, p.Y.Max = 0, 100
	return p, 6 * vg.Inch, nil
}
