package dataset

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
)

// Write writes questions and passages as dir/questions.parquet and
// dir/corpus.parquet (the layout Import writes), each atomically. dir
// follows the rule of every output directory (see Import): empty or
// absent unless overwrite is set, one writer at a time, nothing left
// behind by a failure.
func Write(ctx context.Context, dir string, questions []data.Question, passages []data.Passage, overwrite bool) error {
	mode := outdir.New
	if overwrite {
		mode = outdir.Overwrite
	}
	err := outdir.Write(ctx, dir, mode, func(*outdir.Dir) error {
		if err := writeAll(filepath.Join(dir, data.CorpusFile), data.KindCorpus, passages); err != nil {
			return err
		}
		return writeAll(filepath.Join(dir, data.QuestionsFile), data.KindQuestions, questions)
	})
	if err != nil {
		return fmt.Errorf("write dataset: %w", err)
	}
	return nil
}

func writeAll[T any](path string, kind data.Kind, rows []T) error {
	w, err := data.CreateParquet[T](path, kind)
	if err != nil {
		return err
	}
	for start := 0; start < len(rows); start += passageBatch {
		if err := w.Write(rows[start:min(start+passageBatch, len(rows))]); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}
