package runner

import (
	"fmt"
	"io"
	"iter"

	"github.com/distill-rag/distill/data"
)

// Questions is the sequence of questions a run reads. Run ranges over it
// twice, once to count and select the questions and once to run them, so
// it must yield the same questions each time; an error ends the run.
type Questions = iter.Seq2[data.Question, error]

// Slice returns the questions of qs, in order.
func Slice(qs []data.Question) Questions {
	return func(yield func(data.Question, error) bool) {
		for _, q := range qs {
			if !yield(q, nil) {
				return
			}
		}
	}
}

// QuestionsFile returns the questions of a questions.parquet file (as
// distill data import writes it), streamed from disk each time it is ranged
// over: memory does not grow with the file.
func QuestionsFile(path string) Questions {
	return func(yield func(data.Question, error) bool) {
		kind, err := data.ParquetKind(path)
		if err == nil && kind != data.KindQuestions {
			err = fmt.Errorf("%s holds %s, not questions (write one with distill data import)", path, kind)
		}
		if err != nil {
			yield(data.Question{}, err)
			return
		}
		r, err := data.OpenParquet[data.Question](path)
		if err != nil {
			yield(data.Question{}, err)
			return
		}
		defer r.Close()
		buf := make([]data.Question, 256)
		for {
			clear(buf) // rows read into must be zero (see data.ParquetReader.Read)
			n, err := r.Read(buf)
			for _, q := range buf[:n] {
				if !yield(q, nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
			if err == nil && n == 0 {
				err = fmt.Errorf("read %s: no progress", path)
			}
			if err != nil {
				yield(data.Question{}, err)
				return
			}
		}
	}
}
