// Package data holds distill's record types and everything that moves them
// between files: the dataset readers, the parquet files the other packages
// work from, and sentence splitting. It is the leaf of the project: it
// imports no other distill package.
//
// Data flows in one direction. A dataset arrives in its own layout:
// questions as HotpotQA, 2WikiMultiHopQA, MuSiQue or FlashRAG files
// (OpenQuestions), corpora as JSONL, FlashRAG, BEIR, JSON lists, or a
// title-to-sentences map (OpenCorpus). dataset.Import (package
// data/dataset, which owns the output directory) reads both, streaming one
// record at a time, and writes QuestionsFile (rows of Question) and
// CorpusFile (rows of Passage). When a dataset has no separate corpus
// its questions' context paragraphs become the corpus, each with the id
// DocID(title, text). Every later stage (rollout, label, filter, finetune,
// eval) reads and writes parquet with CreateParquet, OpenParquet and
// ReadParquet; each file records its Kind so that ShowParquet can print any
// of them.
//
// Readers share one contract, written on QuestionReader: a *RecordError is
// one bad record and reading can go on, any other error is fatal. Writers
// never leave partial files: they write to a temporary name and rename it
// into place on Close.
package data
