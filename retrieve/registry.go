package retrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Index is an open retriever that holds resources (mapped files,
// connections) until it is closed.
type Index interface {
	Retriever
	Close() error
}

// Kind is one kind of index a Registry can open. The packages of the
// backends make theirs (bm25.Kind, dense.Kind, elastic.Kind).
type Kind struct {
	// Name names the kind ("bm25", "dense", "elasticsearch").
	Name string
	// Spec says what names an index of the kind ("a BM25 index
	// directory", "es://HOST:PORT/NAME"), for help and error messages.
	Spec string
	// Match reports whether spec names an index of this kind: a directory
	// whose description gives the kind's format, an address in its
	// scheme. It opens nothing.
	Match func(spec string) bool
	// Open opens the index spec names. An error that says spec cannot be
	// read (a malformed address) is a *SpecError.
	Open func(ctx context.Context, spec string) (Index, error)
}

// SpecError is an index spec that its kind cannot read, such as a
// malformed address: the caller's mistake, not the index's.
type SpecError struct {
	Err error
}

func (e *SpecError) Error() string { return e.Err.Error() }

func (e *SpecError) Unwrap() error { return e.Err }

// Registry opens indexes of the kinds it was made with, from a spec
// string such as a command line's --index. A program builds one where it
// starts (as restic does its backends' location.Registry); a Registry is
// not changed after NewRegistry and is safe for concurrent use.
type Registry struct {
	kinds []Kind
}

// NewRegistry returns a registry of kinds, tried in the order given.
func NewRegistry(kinds ...Kind) *Registry {
	return &Registry{kinds: append([]Kind(nil), kinds...)}
}

// Kinds returns the names of the registry's kinds, in order.
func (r *Registry) Kinds() []string {
	names := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		names[i] = k.Name
	}
	return names
}

// Lookup returns the kind whose Match accepts spec.
func (r *Registry) Lookup(spec string) (Kind, bool) {
	for _, k := range r.kinds {
		if k.Match(spec) {
			return k, true
		}
	}
	return Kind{}, false
}

// Open opens what spec names: an index of the first kind whose Match
// accepts it, or several specs joined by commas, each opened so, as one
// hybrid Index that ranks by reciprocal rank fusion (Fusion, with its
// defaults) and closes them all. A piece that no kind takes stays with the
// piece before it when the two together are a spec: an address may list
// several hosts, comma-separated.
func (r *Registry) Open(ctx context.Context, spec string) (Index, error) {
	specs := r.split(spec)
	if len(specs) == 1 {
		return r.open(ctx, spec)
	}
	f := &fused{}
	for _, s := range specs {
		x, err := r.open(ctx, s)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.parts = append(f.parts, x)
		f.Retrievers = append(f.Retrievers, x)
	}
	return f, nil
}

func (r *Registry) split(spec string) []string {
	var specs []string
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if n := len(specs); n > 0 && !r.matches(p) && r.matches(specs[n-1]+","+p) {
			specs[n-1] += "," + p
			continue
		}
		specs = append(specs, p)
	}
	return specs
}

func (r *Registry) matches(spec string) bool {
	_, ok := r.Lookup(spec)
	return ok
}

func (r *Registry) open(ctx context.Context, spec string) (Index, error) {
	k, ok := r.Lookup(spec)
	if !ok {
		want := make([]string, len(r.kinds))
		for i, k := range r.kinds {
			want[i] = k.Spec
		}
		return nil, fmt.Errorf("%s is not an index directory or address of a known kind (%s): build one with distill index", spec, strings.Join(want, "; "))
	}
	return k.Open(ctx, spec)
}

// fused is a hybrid of open indexes, closed together.
type fused struct {
	Fusion
	parts []Index
}

func (f *fused) Close() error {
	var errs []error
	for _, p := range f.parts {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
