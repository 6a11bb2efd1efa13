package elastic

import (
	"context"

	"github.com/distill-rag/distill/retrieve"
)

// Name is the kind's name, in a retrieve.Registry and for distill index
// --kind.
const Name = "elasticsearch"

var (
	_ retrieve.Retriever = (*Retriever)(nil)
	_ retrieve.Index     = (*Retriever)(nil)
)

// Kind is the registry entry of indexes in a cluster, named by their
// address (see ParseURL); opts are those of Open. An address that does
// not parse is a *retrieve.SpecError.
func Kind(opts OpenOptions) retrieve.Kind {
	return retrieve.Kind{
		Name:  Name,
		Spec:  "es://HOST:PORT/NAME (ess:// for https; ?search=knn or exact searches its vectors)",
		Match: IsURL,
		Open: func(ctx context.Context, addr string) (retrieve.Index, error) {
			cfg, err := ParseURL(addr)
			if err != nil {
				return nil, &retrieve.SpecError{Err: err}
			}
			r, err := Open(ctx, cfg, opts)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}
