package dataset

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
)

// maxReportedErrors is how many bad records an ImportResult keeps for display.
const maxReportedErrors = 20

// Batch sizes for the parquet writers: enough to amortise a call, small
// enough to keep memory flat however large the input.
const (
	questionBatch = 256
	passageBatch  = 1024
)

// ImportOptions says what Import reads and where it writes.
type ImportOptions struct {
	// In is the question file, in Format.
	In     string
	Format data.QuestionFormat
	// Corpus, when set, is the corpus file, in CorpusFormat. When empty the
	// corpus is the union of the questions' context paragraphs.
	Corpus       string
	CorpusFormat data.CorpusFormat
	// Out is the output directory; it is created if needed. It must be
	// empty, or Overwrite set (outdir.ErrNotEmpty), and not in use by
	// another writer (outdir.ErrBusy).
	Out       string
	Overwrite bool
	// SkipBad makes Import count and report bad records and go on, instead
	// of stopping at the first one.
	SkipBad bool
	// Dataset overrides the Dataset of the questions (see data.WithDataset).
	Dataset string
	// TriviaQAValueOnly keeps a TriviaQA question's NormalizedValue as
	// its only gold answer (data.WithTriviaQAValueOnly).
	TriviaQAValueOnly bool
	// TriviaQAPages, for TriviaQA's original layout, is the folder of its
	// Wikipedia evidence pages (the rc release's evidence/wikipedia): the
	// corpus is then the questions' pages in chunks of at most
	// data.TriviaQAChunkChars, and their titles the gold titles
	// (data.WithTriviaQAPages). It cannot go with Corpus.
	TriviaQAPages string
	// IDPrefix is put before every passage id, the questions' gold doc
	// ids included ("2wiki_" and "triviaqa_", as the authors' code names
	// 2WikiMultiHopQA's and TriviaQA's passages).
	IDPrefix string
	// Logger receives progress and skipped records; nil discards them.
	Logger *slog.Logger
}

// ImportResult says what Import did.
type ImportResult struct {
	Questions int
	// Passages is the number of passages written to the corpus.
	Passages int
	// DuplicatePassages counts passages dropped because one with the same
	// id was already written.
	DuplicatePassages int
	// EmptyPassages counts context paragraphs dropped because they have no
	// text.
	EmptyPassages int
	// BadRecords counts the records skipped (questions and passages).
	BadRecords int
	// Errors holds the first bad records, for display.
	Errors []*data.RecordError
	// UnresolvedFacts counts supporting facts whose sentence index is
	// outside their paragraph (kept, see data.ReadStats).
	UnresolvedFacts int
	// QuestionsWithAllGoldTitles counts the questions with at least one gold
	// title whose gold titles are all titles of corpus passages;
	// QuestionsMissingGoldTitles those with a gold title that no corpus
	// passage has (imported all the same: their retrieval can never be
	// complete). Questions without gold titles are in neither count.
	QuestionsWithAllGoldTitles int
	QuestionsMissingGoldTitles int
	// QuestionsPath and CorpusPath are the files written; CorpusPath is
	// empty when there is no corpus (questions without context and no
	// Corpus given).
	QuestionsPath string
	CorpusPath    string
}

// Import converts a dataset's question file, and its corpus, into
// Out/questions.parquet and Out/corpus.parquet.
//
// Without SkipBad the first bad record stops the import; with it, bad records
// are counted and reported in the result. A repeated question id is a bad
// record. On error nothing is written, and an output directory that Import
// created is removed (the result still holds the counts so far). Memory stays bounded by the questions and the set of passage ids,
// not by the size of the corpus.
func Import(ctx context.Context, opts ImportOptions) (ImportResult, error) {
	im := &importer{opts: opts, log: opts.Logger}
	if im.log == nil {
		im.log = slog.New(slog.DiscardHandler)
	}
	mode := outdir.New
	if opts.Overwrite {
		mode = outdir.Overwrite
	}
	err := im.check()
	if err == nil {
		err = outdir.Write(ctx, opts.Out, mode, func(*outdir.Dir) error { return im.run(ctx) })
	}
	if err != nil {
		im.res.QuestionsPath, im.res.CorpusPath = "", ""
		return im.res, fmt.Errorf("import: %w", err)
	}
	return im.res, nil
}

type importer struct {
	opts ImportOptions
	log  *slog.Logger
	res  ImportResult

	qw       *data.ParquetWriter[data.Question]
	cw       *data.ParquetWriter[data.Passage]
	qbatch   []data.Question
	pbatch   []data.Passage
	qids     map[string]struct{}
	pids     map[[sha1.Size]byte]struct{}
	gold     [][]string      // gold titles of each question written
	titles   map[string]bool // titles of interest: true once in the corpus
	anyTitle bool            // every passage title goes into titles
}

// check rejects options Import cannot work with.
func (im *importer) check() error {
	o := im.opts
	switch {
	case o.In == "":
		return errors.New("no question file given")
	case o.Out == "":
		return errors.New("no output directory given")
	case !slices.Contains(data.QuestionFormats(), o.Format):
		return fmt.Errorf("unknown question format %q (valid: %s)", o.Format, joinNames(data.QuestionFormats()))
	case o.Corpus != "" && !slices.Contains(data.CorpusFormats(), o.CorpusFormat):
		return fmt.Errorf("unknown corpus format %q (valid: %s)", o.CorpusFormat, joinNames(data.CorpusFormats()))
	case o.TriviaQAPages != "" && o.Format != data.QuestionsTriviaQA:
		return fmt.Errorf("evidence pages are read for TriviaQA questions only, not %s", o.Format)
	case o.TriviaQAPages != "" && o.Corpus != "":
		return errors.New("the TriviaQA evidence pages make the corpus: give them or a corpus file, not both")
	}
	// Missing inputs are told before the output directory is looked at.
	for _, in := range []string{o.In, o.Corpus, o.TriviaQAPages} {
		if in == "" {
			continue
		}
		if _, err := os.Stat(in); err != nil {
			return err // *fs.PathError names the file
		}
	}
	return nil
}

// run imports into the output directory that Import holds.
func (im *importer) run(ctx context.Context) error {
	o := im.opts
	qopts := []data.QuestionOption{data.WithDataset(o.Dataset)}
	if o.Corpus != "" {
		qopts = append(qopts, data.WithExternalCorpus())
	}
	if o.TriviaQAValueOnly {
		qopts = append(qopts, data.WithTriviaQAValueOnly())
	}
	if o.TriviaQAPages != "" {
		qopts = append(qopts, data.WithTriviaQAPages(o.TriviaQAPages))
	}
	qr, err := data.OpenQuestions(o.In, o.Format, qopts...)
	if err != nil {
		return err
	}
	defer qr.Close()
	im.qw, err = data.CreateParquet[data.Question](filepath.Join(o.Out, data.QuestionsFile), data.KindQuestions)
	if err != nil {
		return err
	}
	defer im.qw.Abort()
	defer func() {
		if im.cw != nil {
			im.cw.Abort()
		}
	}()
	im.qids = make(map[string]struct{})
	im.pids = make(map[[sha1.Size]byte]struct{})
	im.titles = make(map[string]bool)
	im.anyTitle = o.Corpus == ""

	im.log.Info("importing questions", "file", o.In, "format", o.Format)
	if err := im.questions(ctx, qr); err != nil {
		return err
	}
	if im.res.Questions == 0 {
		if im.res.BadRecords > 0 {
			return fmt.Errorf("%s holds no question that could be read (%d bad records skipped)", o.In, im.res.BadRecords)
		}
		return fmt.Errorf("%s holds no questions (is it the right file, in the %s layout?)", o.In, o.Format)
	}
	im.res.UnresolvedFacts = qr.Stats().UnresolvedFacts
	if o.Corpus != "" {
		im.log.Info("importing corpus", "file", o.Corpus, "format", o.CorpusFormat)
		if err := im.corpus(ctx); err != nil {
			return err
		}
	}
	for _, titles := range im.gold {
		switch {
		case len(titles) == 0:
		case slices.ContainsFunc(titles, func(t string) bool { return !im.titles[t] }):
			im.res.QuestionsMissingGoldTitles++
		default:
			im.res.QuestionsWithAllGoldTitles++
		}
	}
	return im.commit()
}

func (im *importer) questions(ctx context.Context, qr *data.QuestionReader) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ex, err := qr.Next()
		if err == io.EOF {
			return im.flushQuestions()
		}
		if err != nil {
			if err := im.bad(err); err != nil {
				return err
			}
			continue
		}
		q := ex.Question
		if _, dup := im.qids[q.ID]; dup {
			line, index := qr.Last()
			err := &data.RecordError{File: im.opts.In, Line: line, Index: index, Field: "id",
				Err: fmt.Errorf("question id %q repeats an earlier one", q.ID)}
			if err := im.bad(err); err != nil {
				return err
			}
			continue
		}
		im.qids[q.ID] = struct{}{}
		for i, id := range q.GoldDocIDs {
			q.GoldDocIDs[i] = im.opts.IDPrefix + id
		}
		im.gold = append(im.gold, q.GoldTitles)
		if !im.anyTitle {
			for _, t := range q.GoldTitles {
				im.titles[t] = false
			}
		}
		im.qbatch = append(im.qbatch, q)
		if len(im.qbatch) == questionBatch {
			if err := im.flushQuestions(); err != nil {
				return err
			}
		}
		if im.opts.Corpus == "" {
			for _, p := range ex.Context {
				if err := im.addPassage(p); err != nil {
					return err
				}
			}
		}
	}
}

func (im *importer) corpus(ctx context.Context) error {
	cr, err := data.OpenCorpus(im.opts.Corpus, im.opts.CorpusFormat)
	if err != nil {
		return err
	}
	defer cr.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := cr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if err := im.bad(err); err != nil {
				return err
			}
			continue
		}
		if err := im.addPassage(p); err != nil {
			return err
		}
	}
}

// bad skips a bad record under SkipBad and returns any other error.
func (im *importer) bad(err error) error {
	var recErr *data.RecordError
	if !im.opts.SkipBad || !errors.As(err, &recErr) {
		return err
	}
	im.res.BadRecords++
	if len(im.res.Errors) < maxReportedErrors {
		im.res.Errors = append(im.res.Errors, recErr)
		im.log.Warn("skipping bad record", "err", recErr)
	}
	return nil
}

func (im *importer) addPassage(p data.Passage) error {
	if p.Text == "" {
		im.res.EmptyPassages++
		return nil
	}
	p.ID = im.opts.IDPrefix + p.ID
	key := sha1.Sum([]byte(p.ID))
	if _, dup := im.pids[key]; dup {
		im.res.DuplicatePassages++
		return nil
	}
	im.pids[key] = struct{}{}
	if _, ok := im.titles[p.Title]; ok || im.anyTitle {
		im.titles[p.Title] = true
	}
	if im.cw == nil {
		var err error
		im.cw, err = data.CreateParquet[data.Passage](filepath.Join(im.opts.Out, data.CorpusFile), data.KindCorpus)
		if err != nil {
			return err
		}
	}
	im.pbatch = append(im.pbatch, p)
	if len(im.pbatch) == passageBatch {
		return im.flushPassages()
	}
	return nil
}

func (im *importer) flushQuestions() error {
	err := im.qw.Write(im.qbatch)
	im.res.Questions += len(im.qbatch)
	im.qbatch = im.qbatch[:0]
	return err
}

func (im *importer) flushPassages() error {
	err := im.cw.Write(im.pbatch)
	im.res.Passages += len(im.pbatch)
	im.pbatch = im.pbatch[:0]
	return err
}

// commit renames the outputs into place: the corpus first, so that a
// questions file never appears without its corpus.
func (im *importer) commit() error {
	if im.cw != nil {
		if err := im.flushPassages(); err != nil {
			return err
		}
		if err := im.cw.Close(); err != nil {
			return err
		}
		im.res.CorpusPath = im.cw.Path()
	}
	if err := im.qw.Close(); err != nil {
		if im.res.CorpusPath != "" {
			os.Remove(im.res.CorpusPath)
		}
		return err
	}
	im.res.QuestionsPath = im.qw.Path()
	im.log.Info("import done", "questions", im.res.Questions, "passages", im.res.Passages,
		"duplicate_passages", im.res.DuplicatePassages, "bad_records", im.res.BadRecords,
		"questions_with_all_gold_titles", im.res.QuestionsWithAllGoldTitles,
		"questions_missing_gold_titles", im.res.QuestionsMissingGoldTitles)
	return nil
}

func joinNames[S ~string](names []S) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}
