package dense

import (
	"context"
	"fmt"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/metafile"
)

// Name is the kind's name, in a retrieve.Registry and for distill index
// --kind.
const Name = "dense"

// Format is the "format" of the meta.json that Build writes: what tells a
// dense index directory from another kind's.
const Format = "distill-dense"

var (
	_ retrieve.Retriever = (*Index)(nil)
	_ retrieve.Index     = (*Index)(nil)
)

// IsIndex reports whether dir holds a dense index: its meta.json says so.
// (An interrupted build has none yet.)
func IsIndex(dir string) bool { return metafile.Format(dir) == Format }

// Kind is the registry entry of dense index directories. embedder returns
// the query embedder of an index as its meta.json describes it (the model,
// the server it was built with, whether queries carry input_type "query");
// opts are those of Open, whose Embedder it sets.
func Kind(embedder func(Meta) (llm.Embedder, error), opts OpenOptions) retrieve.Kind {
	return retrieve.Kind{
		Name:  Name,
		Spec:  "a dense index directory",
		Match: IsIndex,
		Open: func(_ context.Context, dir string) (retrieve.Index, error) {
			meta, err := readMeta(dir)
			if err != nil {
				return nil, fmt.Errorf("open dense index: %w", err)
			}
			o := opts
			if o.Embedder, err = embedder(meta); err != nil {
				return nil, fmt.Errorf("open dense index %s: %w", dir, err)
			}
			x, err := Open(dir, o)
			if err != nil {
				return nil, err
			}
			return x, nil
		},
	}
}
