// Package dense is the dense retriever of distill: passages and queries
// embedded by any OpenAI-compatible /v1/embeddings server (through an
// llm.Embedder), stored compactly on disk, and searched by inner product,
// exactly or through IVF partitions. It follows the method's E5 setting by
// default: "passage: " and "query: " prefixes, the passage text embedded as
// title + " " + text, vectors scaled to unit length, inner product.
//
// # Data flow
//
// Build reads a retrieve.Source to the end, writing the passages
// to docs.bin, then embeds them: batches of BatchSize passages, Workers
// requests in flight, through whatever Embedder it is given (use
// llm.StackEmbedder for the client's retries and limits). A passage that
// the server refuses on its own (400, 413 or 422) is stored as zeros and
// counted in Stats.Failed; a request refused for all its passages fails
// the build. Vectors are gathered in chunks of ChunkSize passages; a
// finished chunk is written atomically to chunks/chunk-NNNNN.f32 with the
// range of passages it covers and a hash of the texts it embedded.
// build.json records the settings the chunks depend on. A build stopped in
// any way, kill -9 included, resumes when called again with the same
// settings: the corpus is read again and checked against the chunks, and
// only missing chunks are embedded. Another model, passage prefix,
// normalisation, chunk size, dimension or corpus is refused (ErrMismatch),
// or with Overwrite starts afresh. Finally vectors.bin is written from the
// chunks at the chosen Precision, then meta.json, which marks the index
// complete; the chunks are then removed, unless KeepChunks keeps them so
// that a rebuild (Overwrite, another precision) embeds nothing.
//
// Open maps the files. Search embeds QueryPrefix + text with the Embedder
// given to Open; SearchVector takes a vector. Exact search scores every
// row with a dot product, the rows split among GOMAXPROCS goroutines that
// each keep a heap of their k best; rows in the exclusion list are skipped
// inside the scan. SearchBatchVectors (and SearchBatch) score a
// cache-sized block of rows against up to 64 queries before reading the
// next, so a batch reads memory once rather than once per query. Rows are
// scored by assembly kernels (AVX2 and FMA; elsewhere portable Go, and
// github.com/viterin/vek for float32) that ask for the rows 4 KiB ahead of
// the one they read and convert them as they are read, so that a scan
// costs the memory the rows take: float16 through F16C, int8 as an exact
// integer sum against the query rounded to int16 levels (kernel.go). With
// OpenOptions.NProbe > 0 a search scores only the rows of the NProbe IVF
// partitions (BuildIVF) whose centroids are nearest the query, from a
// copy of their vectors grouped by partition in ivf.bin, with the same
// arithmetic: probing all partitions gives exactly the exact result.
//
// # The retrieve contract
//
// *Index is a retrieve.Retriever. Scores are float32 inner products
// (cosines for a normalised index); equal scores come in corpus order.
// Every row scores the same whichever path finds it (exact, batched, IVF),
// so results are reproducible. A blank query is not embedded and matches
// nothing; neither does a query whose embedding is all zeros. Exclusion
// happens in the scan, so K hits come back whenever the index has K
// passages that are not excluded (IVF probes further partitions when
// needed). Search is safe for concurrent use.
//
// # Files
//
// An index directory holds meta.json (model, dimension, prefixes,
// precision, normalisation, count, build id), vectors.bin, docs.bin and,
// after BuildIVF, ivf.bin. The binary files are little-endian, versioned,
// and checked on Open: a damaged or truncated file gives an error, never a
// panic. vectors.bin is a 4096-byte header (magic, version, precision, N,
// D, flags, build id, section offsets, header CRC) followed by N rows of D
// components: float32, float16, or int8 with one float32 scale per row
// after the rows (score = scale * dot). docs.bin holds each passage (id,
// title, text, sentences), an offset table and an id hash table for
// exclusions. ivf.bin holds the centroids, the rows of each partition,
// ascending, and their vectors in that order at the index's precision,
// tied to vectors.bin by its build id. BuildIVF reads vectors.bin a block
// at a time, so its memory does not grow with the index beyond 8 bytes a
// row. See format.go, docs.go,
// chunks.go and ivf.go for the byte layouts.
package dense
