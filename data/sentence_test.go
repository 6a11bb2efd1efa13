package data

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", []string{}},
		{"only spaces", " \t\n  \n ", []string{}},
		{"no terminal punctuation", "a title without a full stop", []string{"a title without a full stop"}},
		{"one sentence", "It rained.", []string{"It rained."}},
		{"trimmed", "  \n It rained.  \n", []string{"It rained."}},
		{"two sentences", "It rained. We stayed in.", []string{"It rained.", "We stayed in."}},
		{"exclamation and question", "Stop! Who goes there? Nobody.", []string{"Stop!", "Who goes there?", "Nobody."}},
		{"punctuation run", "Really?! Yes!!! Fine...", []string{"Really?!", "Yes!!!", "Fine..."}},
		{"digit starts sentence", "It ended in 1950. 1951 was calm.", []string{"It ended in 1950.", "1951 was calm."}},
		{"quote starts sentence", `He left. "Why?" she asked.`, []string{"He left.", `"Why?" she asked.`}},
		{"bracket starts sentence", "He left. (Nobody knew why.)", []string{"He left.", "(Nobody knew why.)"}},
		{"closing quote stays", `He said "Go." Then he left.`, []string{`He said "Go."`, "Then he left."}},
		{"closing bracket stays", "Anne (born 1950.) Next came Bob.", []string{"Anne (born 1950.)", "Next came Bob."}},
		{"quote and bracket stay", `("Go.") Then.`, []string{`("Go.")`, "Then."}},
		{"curly quotes", "She said “Go.” Then she left.", []string{"She said “Go.”", "Then she left."}},
		{"opening bracket then lower case", "Its name is Segyero. (hangul: 세계로) It sells pizza.", []string{"Its name is Segyero.", "(hangul: 세계로) It sells pizza."}},
		{"initial after markup", "Produced by M. Saravanan<br>M. Balasubramaniam.", []string{"Produced by M. Saravanan<br>M. Balasubramaniam."}},
		{"abbreviation after hyphen", "A non-U.S. Company bought it.", []string{"A non-U.S. Company bought it."}},
		{"letter after digits", "It was big in the 1950s. People loved it.", []string{"It was big in the 1950s.", "People loved it."}},
		{"lower-case next word", "The fee was 5 p. per page. the end.", []string{"The fee was 5 p. per page. the end."}},
		{"no space after period", "See example.com.It works.", []string{"See example.com.It works."}},
		{"titles", "Mr. Smith met Mrs. Jones and Dr. Who. Prof. Xavier came too.", []string{"Mr. Smith met Mrs. Jones and Dr. Who.", "Prof. Xavier came too."}},
		{"ranks", "Gen. Lee and Col. Sanders met Capt. Hook, Lt. Dan and Sgt. Pepper.", []string{"Gen. Lee and Col. Sanders met Capt. Hook, Lt. Dan and Sgt. Pepper."}},
		{"religious and political titles", "Rev. King, Hon. Smith, Gov. Brown, Sen. Warren and Rep. Lewis spoke.", []string{"Rev. King, Hon. Smith, Gov. Brown, Sen. Warren and Rep. Lewis spoke."}},
		{"title case-insensitive", "MR. Smith and DR. Jones left.", []string{"MR. Smith and DR. Jones left."}},
		{"saint and mount", "St. Louis lies far from Mt. Everest and Ft. Worth.", []string{"St. Louis lies far from Mt. Everest and Ft. Worth."}},
		{"junior and senior", "Sammy Davis Jr. Entertained crowds. John Sr. Smith too.", []string{"Sammy Davis Jr. Entertained crowds.", "John Sr. Smith too."}},
		{"company suffixes", "Acme Inc. Products and Bolt Ltd. Group merged with Smith Co. Holdings.", []string{"Acme Inc. Products and Bolt Ltd. Group merged with Smith Co. Holdings."}},
		{"more company suffixes", "Warner Bros. Pictures bought Ajax Corp. Europe.", []string{"Warner Bros. Pictures bought Ajax Corp. Europe."}},
		{"abbreviation ends sentence", "He worked for Acme Inc. The firm failed.", []string{"He worked for Acme Inc.", "The firm failed."}},
		{"number abbreviation", "It reached No. 1 in May. Then it fell.", []string{"It reached No. 1 in May.", "Then it fell."}},
		{"versus", "Kramer vs. Kramer won.", []string{"Kramer vs. Kramer won."}},
		{"etc then lower case", "Apples, pears, etc. are fruit.", []string{"Apples, pears, etc. are fruit."}},
		{"etc ends sentence", "Apples, pears, etc. The list goes on.", []string{"Apples, pears, etc.", "The list goes on."}},
		{"latin", "Some fruit, e.g. Apples, i.e. Red ones, cf. Smith, are sweet.", []string{"Some fruit, e.g. Apples, i.e. Red ones, cf. Smith, are sweet."}},
		{"circa", "Built ca. 1200 and rebuilt c. 1400, approx. 200 years later.", []string{"Built ca. 1200 and rebuilt c. 1400, approx. 200 years later."}},
		{"months", "Born Jan. 5, died Sept. 11 or Sep. 12, Oct. 1 to Dec. 2.", []string{"Born Jan. 5, died Sept. 11 or Sep. 12, Oct. 1 to Dec. 2."}},
		{"all months", "Feb. 1, Mar. 2, Apr. 3, Jun. 4, Jul. 5, Aug. 6, Nov. 7.", []string{"Feb. 1, Mar. 2, Apr. 3, Jun. 4, Jul. 5, Aug. 6, Nov. 7."}},
		{"dotted abbreviations", "The U.S. Army and U.K. Navy met.", []string{"The U.S. Army and U.K. Navy met."}},
		{"dotted abbreviation ends sentence", "He moved to the U.S. He died there.", []string{"He moved to the U.S.", "He died there."}},
		{"degree", "She earned a Ph.D. Degree at Yale.", []string{"She earned a Ph.D. Degree at Yale."}},
		{"initials", "J. R. R. Tolkien wrote it. G. Stanley Hall read it.", []string{"J. R. R. Tolkien wrote it.", "G. Stanley Hall read it."}},
		{"joined initials", "J.R.R. Tolkien wrote it.", []string{"J.R.R. Tolkien wrote it."}},
		{"initial A", "A. A. Milne wrote it.", []string{"A. A. Milne wrote it."}},
		{"roman numeral then opener", "It began after World War I. The war had ended.", []string{"It began after World War I.", "The war had ended."}},
		{"decimals", "Pi is 3.14 or so. It cost $1.5 million. Version v2.0 shipped.", []string{"Pi is 3.14 or so.", "It cost $1.5 million.", "Version v2.0 shipped."}},
		{"ellipsis then lower case", "He waited... and waited. Then he left.", []string{"He waited... and waited.", "Then he left."}},
		{"ellipsis then upper case", "He waited... Nobody came.", []string{"He waited...", "Nobody came."}},
		{"unicode ellipsis", "He waited… Nobody came… at all.", []string{"He waited…", "Nobody came… at all."}},
		{"spaced ellipsis", "He waited . . . Nobody came.", []string{"He waited . . .", "Nobody came."}},
		{"blank line", "Heading without stop\n\nBody text here", []string{"Heading without stop", "Body text here"}},
		{"blank line with spaces", "first part \n \t\n second part", []string{"first part", "second part"}},
		{"blank line after lower case", "ends with etc.\n\nand continues", []string{"ends with etc.", "and continues"}},
		{"single newline", "one line\ncontinues here.", []string{"one line\ncontinues here."}},
		{"newline between sentences", "One.\nTwo.", []string{"One.", "Two."}},
		{"unicode letters", "Ödön lebte in Wien. Élodie zog nach Paris. Ærø ist klein.", []string{"Ödön lebte in Wien.", "Élodie zog nach Paris.", "Ærø ist klein."}},
		{"caseless script", "He wrote 東京. 東京 is large.", []string{"He wrote 東京.", "東京 is large."}},
		{"non-breaking space", "It is 400\u00a0km long.\u00a0The road ends.", []string{"It is 400\u00a0km long.", "The road ends."}},
		{"cyrillic lower case", "Он пришёл. потом ушёл.", []string{"Он пришёл. потом ушёл."}},
		{"inverted question mark", "¿Qué? ¡Nada! Bien.", []string{"¿Qué?", "¡Nada!", "Bien."}},
		{"currency start", "It was cheap. $5 bought it.", []string{"It was cheap.", "$5 bought it."}},
		{"long word at start", "Abcdefghijklmnopqrstu. Next one.", []string{"Abcdefghijklmnopqrstu.", "Next one."}},
		{"long non-ascii word at start", "Éééééééé. The end.", []string{"Éééééééé.", "The end."}},
		{"invalid utf-8", "bad \xff byte. Next \xfe.", []string{"bad \xff byte.", "Next \xfe."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sentences(tt.text)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Sentences(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
			checkSentenceSpans(t, tt.text, SplitSentences(tt.text))
		})
	}
}

func TestSplitSentencesOffsets(t *testing.T) {
	text := "  Hi there.  Bye now!  "
	want := []Span{{Start: 2, End: 11}, {Start: 13, End: 21}}
	if diff := cmp.Diff(want, SplitSentences(text)); diff != "" {
		t.Errorf("SplitSentences(%q) mismatch (-want +got):\n%s", text, diff)
	}
}

// checkSentenceSpans checks the invariants every split keeps: spans in order, not
// overlapping, non-empty, on rune boundaries, trimmed, and covering every
// non-space rune.
func checkSentenceSpans(t *testing.T, text string, spans []Span) {
	t.Helper()
	prevEnd := 0
	for k, s := range spans {
		if s.Start < prevEnd || s.End <= s.Start || s.End > len(text) {
			t.Fatalf("span %d of %q: got %+v after end %d, want an ordered non-empty span within %d bytes", k, text, s, prevEnd, len(text))
		}
		r, size := utf8.DecodeRuneInString(text[s.Start:s.End])
		if sentenceSpace(r, size) {
			t.Errorf("span %d of %q: got leading space %q, want trimmed", k, text, text[s.Start:s.End])
		}
		r, size = utf8.DecodeLastRuneInString(text[s.Start:s.End])
		if sentenceSpace(r, size) {
			t.Errorf("span %d of %q: got trailing space %q, want trimmed", k, text, text[s.Start:s.End])
		}
		prevEnd = s.End
	}
	k := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		for k < len(spans) && spans[k].End <= i {
			k++
		}
		inside := k < len(spans) && spans[k].Start <= i && i+size <= spans[k].End
		if !sentenceSpace(r, size) && !inside {
			t.Errorf("rune %q at byte %d of %q: got outside every span, want covered (spans %v)", r, i, text, spans)
		}
		i += size
	}
}

// sentenceSpace is the test's own statement of white space: a valid rune for
// which unicode.IsSpace holds.
func sentenceSpace(r rune, size int) bool {
	return !(r == utf8.RuneError && size <= 1) && unicode.IsSpace(r)
}

func FuzzSplitSentences(f *testing.F) {
	for _, s := range []string{
		"",
		" ",
		"Mr. Smith went to Washington. He arrived at 5 p.m. on Jan. 3.",
		`He said "Go." Then (born 1950.) Next...`,
		"J. R. R. Tolkien. The U.S. Army. It cost $1.5 million.\n\nNew para",
		"¿Qué? ¡Nada!… “Bien.” Ödön\u00a0. 東京. \xff.\xc2\x85 A",
		"a.\n \n.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spans := SplitSentences(text)
		checkSentenceSpans(t, text, spans)
		got := Sentences(text)
		if len(got) != len(spans) {
			t.Fatalf("Sentences(%q): got %d sentences, want %d", text, len(got), len(spans))
		}
	})
}

// splitterHotpotPath is the HotpotQA sample shared beside the repository.
const splitterHotpotPath = "../../shared/data/hotpotqa/hotpot_train_distractor_100.json"

// TestSplitSentencesHotpotQA measures agreement with the sentence split that
// HotpotQA ships with its paragraphs. That split has quirks of its own (it
// splits after "K." in "K. 279", after "Pick Me Up!" in a title, and glues
// sentences with no space between them), so full agreement is impossible;
// the bounds sit a little under what the splitter achieves.
func TestSplitSentencesHotpotQA(t *testing.T) {
	raw, err := os.ReadFile(splitterHotpotPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("HotpotQA slice %s not found (it lives in ../shared beside the repository); skipping agreement test", splitterHotpotPath)
	}
	if err != nil {
		t.Fatalf("read %s: %v", splitterHotpotPath, err)
	}
	var questions []struct {
		Context [][2]json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(raw, &questions); err != nil {
		t.Fatalf("parse %s: %v", splitterHotpotPath, err)
	}

	seen := make(map[string]bool)
	var paragraphs, identical, boundaries, recovered, predicted int
	for _, q := range questions {
		for _, c := range q.Context {
			var title string
			var given []string
			if err := json.Unmarshal(c[0], &title); err != nil {
				t.Fatalf("parse title: %v", err)
			}
			if err := json.Unmarshal(c[1], &given); err != nil {
				t.Fatalf("parse sentences of %q: %v", title, err)
			}
			text := strings.Join(given, "")
			if seen[title+"\n"+text] {
				continue
			}
			seen[title+"\n"+text] = true

			// The dataset's boundaries, as offsets in the joined text, and its
			// sentences trimmed the way SplitSentences trims.
			var want []string
			var cuts []int
			off := 0
			for k, s := range given {
				if k > 0 {
					cuts = append(cuts, off)
				}
				off += len(s)
				if s = strings.TrimSpace(s); s != "" {
					want = append(want, s)
				}
			}
			spans := SplitSentences(text)
			got := make([]string, len(spans))
			for k, s := range spans {
				got[k] = text[s.Start:s.End]
			}

			paragraphs++
			if cmp.Equal(want, got) {
				identical++
			} else if testing.Verbose() && os.Getenv("DISTILL_SHOW_SPLITS") != "" {
				t.Logf("%s:\n want %q\n got  %q", title, want, got)
			}
			boundaries += len(cuts)
			predicted += len(spans) - 1
			for _, cut := range cuts {
				for k := 0; k+1 < len(spans); k++ {
					if spans[k].End <= cut && cut <= spans[k+1].Start {
						recovered++
						break
					}
				}
			}
		}
	}
	if paragraphs == 0 {
		t.Fatalf("got no paragraphs from %s, want some", splitterHotpotPath)
	}
	paraShare := float64(identical) / float64(paragraphs)
	recall := float64(recovered) / float64(boundaries)
	precision := float64(recovered) / float64(predicted)
	t.Logf("paragraphs split identically: %d/%d = %.1f%%", identical, paragraphs, 100*paraShare)
	t.Logf("dataset boundaries recovered: %d/%d = %.1f%% (precision %.1f%% of %d predicted)", recovered, boundaries, 100*recall, 100*precision, predicted)

	const minParagraphs, minRecall = 0.92, 0.97
	if paraShare < minParagraphs {
		t.Errorf("share of identically split paragraphs: got %.3f, want at least %.2f", paraShare, minParagraphs)
	}
	if recall < minRecall {
		t.Errorf("share of boundaries recovered: got %.3f, want at least %.2f", recall, minRecall)
	}
}

func BenchmarkSplitSentences(b *testing.B) {
	// dense packs the rules' hard cases together; hotpotqa is real
	// Wikipedia prose when the shared slice is there.
	const paragraph = "Sir J. R. R. Tolkien (born Jan. 3, 1892.) was an English writer, e.g. of \"The Hobbit.\" " +
		"He taught at Oxford for approx. 34 years... and wrote a great deal! Was it 3.5 million words? " +
		"Nobody knows. Mr. Smith of Acme Inc. The firm sold his books in the U.S. and abroad.\n\n" +
		"Die Bücher wurden übersetzt. Élodie las sie alle. "
	inputs := []struct {
		name string
		text string
	}{{"dense", strings.Repeat(paragraph, 8)}}
	if raw, err := os.ReadFile(splitterHotpotPath); err == nil {
		var questions []struct {
			Context [][2]json.RawMessage `json:"context"`
		}
		if err := json.Unmarshal(raw, &questions); err != nil {
			b.Fatalf("parse %s: %v", splitterHotpotPath, err)
		}
		var sb strings.Builder
		for _, q := range questions {
			for _, c := range q.Context {
				var given []string
				if err := json.Unmarshal(c[1], &given); err != nil {
					b.Fatalf("parse sentences: %v", err)
				}
				sb.WriteString(strings.Join(given, ""))
				sb.WriteString("\n\n")
			}
		}
		inputs = append(inputs, struct {
			name string
			text string
		}{"hotpotqa", sb.String()})
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			b.ReportAllocs()
			sentences := 0
			for b.Loop() {
				sentences += len(SplitSentences(in.text))
			}
			b.ReportMetric(float64(sentences)/b.Elapsed().Seconds(), "sentences/s")
		})
	}
}
