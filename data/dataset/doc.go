// Package dataset writes a dataset directory, the input of every later
// stage: Import converts a dataset's own files (any layout package data
// reads) into questions.parquet and corpus.parquet, and Write writes
// questions and passages already in memory (the synthetic sample, say).
// Both follow the rule of every output directory (data/outdir): empty
// or absent unless overwritten, one writer at a time, nothing left behind
// by a failure. It is apart from package data so that data imports no
// other distill package.
package dataset
