package eval

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// svgTexts parses an SVG file and returns its root element's name and the
// text of its <text> elements.
func svgTexts(t *testing.T, path string) (root string, texts []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return root, texts
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
			inText = x.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(x))
			}
		}
	}
}

func TestWritePlots(t *testing.T) {
	r := testReport(t)
	r.Variants = append(r.Variants, VariantReport{Name: "summarize <&> 'quoted'", Metrics: r.Variants[0].Metrics})
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := WritePlots(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range []string{PlotEMF1, PlotRounds, PlotCalibration, PlotCompressionF1} {
		want = append(want, filepath.Join(dir, n))
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("WritePlots paths mismatch (-want +got):\n%s", diff)
	}
	for _, path := range paths {
		root, texts := svgTexts(t, path)
		if root != "svg" {
			t.Errorf("%s: root element %q, want svg", path, root)
		}
		all := strings.Join(texts, "\n")
		for _, v := range r.Variants {
			if !strings.Contains(all, v.Name) {
				t.Errorf("%s: no text %q among %q", path, v.Name, texts)
			}
		}
	}
	for _, tt := range []struct{ file, text string }{
		{PlotEMF1, "EM"}, {PlotEMF1, "F1"},
		{PlotRounds, "retrievals"},
		{PlotCalibration, "complete judged insufficient"},
		{PlotCompressionF1, "compression ratio (evidence / raw characters)"},
	} {
		_, texts := svgTexts(t, filepath.Join(dir, tt.file))
		if !strings.Contains(strings.Join(texts, "\n"), tt.text) {
			t.Errorf("%s: no text %q among %q", tt.file, tt.text, texts)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(paths) {
		t.Errorf("%s holds %d files, want the %d plots and no temporary files", dir, len(entries), len(paths))
	}
}

// TestPlotsTellVariantsApart: eight variants (as many as bench has) get
// eight colours and glyphs, and the rounds plot counts questions without
// decimals.
func TestPlotsTellVariantsApart(t *testing.T) {
	colours := map[any]bool{}
	shapes := map[any]bool{}
	for i := range 8 {
		colours[seriesColor(i)] = true
		shapes[glyphs[i%len(glyphs)]] = true
	}
	if len(colours) != 8 || len(shapes) != 8 {
		t.Errorf("8 variants get %d colours and %d glyphs", len(colours), len(shapes))
	}
	for _, span := range [][2]float64{{0, 3}, {0, 13.5}, {0, 67.5}, {0, 1350}} {
		ticks := countTicks{}.Ticks(span[0], span[1])
		labelled := 0
		for _, tk := range ticks {
			if tk.Value != float64(int(tk.Value)) || strings.Contains(tk.Label, ".") {
				t.Errorf("count axis 0..%g: tick %v %q", span[1], tk.Value, tk.Label)
			}
			if tk.Label != "" {
				labelled++
			}
		}
		if labelled < 2 {
			t.Errorf("count axis 0..%g: %d labelled ticks, want at least 2", span[1], labelled)
		}
	}
}

func TestWritePlotsEmptyReport(t *testing.T) {
	dir := t.TempDir()
	paths, err := WritePlots(dir, Report{Dataset: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		if root, _ := svgTexts(t, path); root != "svg" {
			t.Errorf("%s: root element %q, want svg", path, root)
		}
	}
}

func TestWritePlotsBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlots(filepath.Join(file, "sub"), Report{}); err == nil {
		t.Error("WritePlots under a file: got no error, want one")
	}
}
