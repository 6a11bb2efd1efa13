package eval

import (
	"bytes"
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

// palette gives each series its own colour: ten, as many as the variants
// a report can hold and more (plotutil's seven made two of eight variants
// share one).
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff}, {0x40, 0x40, 0x40, 0xff},
}

func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// countTicks marks only whole numbers on an axis of counts, without
// decimals.
type countTicks struct{}

func (countTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value == math.Trunc(t.Value) {
			if t.Label != "" {
				t.Label = strconv.Itoa(int(t.Value))
			}
			out = append(out, t)
		}
	}
	return out
}

// newPlot starts a plot with a title and axis labels, and tilts the tick
// labels of nominal X axes with many or long names.
func newPlot(title, x, y string, names []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.YOffs = -vg.Points(10) // below the title's line
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
		bars.Color = seriesColor(i)
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
	p.Y.Tick.Marker = countTicks{}
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
	// One glyph and colour a variant, named in the legend: text beside the
	// points overlapped where variants score alike.
	maxRatio := 0.0
	for i, v := range r.Variants {
		xy := plotter.XYs{{X: v.Metrics.Compression.Ratio, Y: v.Metrics.F1}}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, 0, err
		}
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Color = seriesColor(i)
		sc.GlyphStyle.Shape = glyphs[i%len(glyphs)]
		p.Add(sc)
		p.Legend.Add(v.Name, sc)
		maxRatio = max(maxRatio, xy[0].X)
	}
	p.Add(plotter.NewGrid())
	// The points stay left of the legend, which the X range leaves room
	// for on the right; ticks only where ratios can be.
	top := math.Ceil(maxRatio*4-1e-9) / 4
	var ticks []plot.Tick
	for x := 0.0; x <= top+1e-9; x += 0.25 {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 3, 64)})
	}
	p.X.Min, p.X.Max = 0, 1.6*top
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, 100
	return p, 7 * vg.Inch, nil
}

// glyphs tell points of different variants apart where they coincide.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{},
}
