package bm25

import (
	"context"

	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/metafile"
)

// Name is the kind's name, in a retrieve.Registry and for distill index
// --kind.
const Name = "bm25"

// Format is the "format" of the meta.json that Build writes: what tells a
// BM25 index directory from another kind's.
const Format = "distill-bm25"

var (
	_ retrieve.Retriever = (*Index)(nil)
	_ retrieve.Index     = (*Index)(nil)
)

// IsIndex reports whether dir holds a BM25 index: its meta.json says so.
func IsIndex(dir string) bool { return metafile.Format(dir) == Format }

// Kind is the registry entry of BM25 index directories.
func Kind() retrieve.Kind {
	return retrieve.Kind{
		Name:  Name,
		Spec:  "a BM25 index directory",
		Match: IsIndex,
		Open: func(_ context.Context, dir string) (retrieve.Index, error) {
			x, err := Open(dir)
			if err != nil {
				return nil, err
			}
			return x, nil
		},
	}
}
