"""Builds and searches the retrieval engines distill is held against.

Run by the peers command (retrieve/peers), one process per engine and
phase, so that each process's peak resident memory is its engine's own:

    peers.py build ENGINE CORPUS.jsonl INDEXDIR
    peers.py search ENGINE INDEXDIR QUERIES.tsv RESULTS.tsv
    peers.py dense VECTORS.f32 QUERIES.f32 DIM NLIST NPROBES RESULTS_PREFIX

CORPUS.jsonl holds {"id", "title", "text"} per line; every engine indexes
title + " " + text as one field, as distill does. QUERIES.tsv holds
"qid<TAB>text" per line. build prints {"build_s", "settings", "peak_rss_bytes"}; search prints
{"open_s", "qps_single", "qps_batch", "times", "peak_rss_bytes"} (seconds per query, one at a
time on one thread, the faster of two passes after a warm-up pass) and
writes "qid<TAB>id id ...<TAB>score score ..." (the top 10) per query to
RESULTS.tsv. dense
builds IndexFlatIP, IndexIVFFlat and IndexIVFScalarQuantizer (8 bits a
dimension), prints one object per FAISS index and nprobe, and writes each one's top 10
(row numbers) to RESULTS_PREFIX-NAME.tsv.

BM25 is k1 0.9, b 0.4 wherever the engine lets it be set.
"""

import glob
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

K = 10
THREADS = 2
BATCH_SECONDS = 2.0


def read_corpus(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            yield p["id"], p["title"] + " " + p["text"]


def read_queries(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            qid, _, text = line.rstrip("\n").partition("\t")
            out.append((qid, text))
    return out


# --- Pyserini: Anserini's Lucene index, called through pyjnius as
# pyserini.search.lucene.LuceneSearcher calls it (the pyserini package's own
# modules import torch at load time, which is not installed here).


def _anserini():
    import jnius_config

    if not jnius_config.vm_running:
        jnius_config.add_options("-Xmx8g")
        import pyserini

        jars = glob.glob(os.path.join(os.path.dirname(pyserini.__file__), "resources", "jars", "*.jar"))
        if not jars:
            raise SystemExit("peers: no Anserini jar in the pyserini package")
        jnius_config.set_classpath(*jars)
    from jnius import autoclass

    return autoclass


def pyserini_build(corpus, index):
    # Anserini's JsonCollection reads {"id", "contents"}, one thread a file.
    src = index + ".input"
    os.makedirs(src, exist_ok=True)
    files = [open(os.path.join(src, "part%d.jsonl" % i), "w", encoding="utf-8") for i in range(THREADS * 4)]
    for n, (pid, text) in enumerate(read_corpus(corpus)):
        files[n % len(files)].write(json.dumps({"id": pid, "contents": text}) + "\n")
    for f in files:
        f.close()
    autoclass = _anserini()
    start = time.perf_counter()
    autoclass("io.anserini.index.IndexCollection").main([
        "-collection", "JsonCollection", "-input", src, "-index", index,
        "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(THREADS),
        "-stemmer", "porter", "-storeRaw", "-optimize",
    ])
    took = time.perf_counter() - start
    for name in os.listdir(src):
        os.remove(os.path.join(src, name))
    os.rmdir(src)
    return took, {
        "analyzer": "Lucene EnglishAnalyzer (Anserini default): standard tokenizer, possessives, lower case, Lucene's English stop words, Porter",
        "k1": 0.9, "b": 0.4, "norms": "Lucene's one-byte lengths",
        "topk": "Lucene's block-max WAND (TopScoreDocCollector)",
        "build": "IndexCollection, %d threads, force-merged to one segment; conversion to JsonCollection files not timed" % THREADS,
        "stores": "ids and the raw passages",
    }


class PyseriniSearcher:
    def __init__(self, index):
        autoclass = _anserini()
        self.s = autoclass("io.anserini.search.SimpleSearcher")(index)
        self.s.set_bm25(0.9, 0.4)
        self.list = autoclass("java.util.ArrayList")

    def search(self, text):
        return [(h.docid, h.score) for h in self.s.search(text, K)]

    def batch(self, queries):
        qs, ids = self.list(), self.list()
        for qid, text in queries:
            qs.add(text)
            ids.add(qid)
        res = self.s.batch_search(qs, ids, K, THREADS)
        return {qid: [(h.docid, h.score) for h in res.get(qid)] for qid, _ in queries}


# --- PISA through pyterrier-pisa; searches call its extension directly,
# without the DataFrames of the PyTerrier transformer.


def pisa_build(corpus, index):
    from pyterrier_pisa import PisaIndex

    start = time.perf_counter()
    PisaIndex(index, stemmer="porter2", stops="lucene", threads=THREADS).index(
        {"docno": pid, "text": text} for pid, text in read_corpus(corpus))
    return time.perf_counter() - start, {
        "analyzer": "PISA's English tokenizer, lower case, Lucene's English stop words (at query time), Porter2",
        "k1": 0.9, "b": 0.4, "norms": "exact lengths", "topk": "block-max WAND over block_simdbp",
        "build": "PisaIndex.index, %d threads" % THREADS, "stores": "ids only",
    }


class PisaSearcher:
    def __init__(self, index):
        import numpy as np
        from pyterrier_pisa import PisaIndex, _pisathon

        self.np, self.pisathon = np, _pisathon
        self.r = PisaIndex(index, stops="lucene", threads=THREADS).bm25(k1=0.9, b=0.4, num_results=K)

    def _run(self, texts, threads):
        np = self.np
        n = len(texts) * K
        qidx, docnos = np.empty(n, dtype=np.int32), np.empty(n, dtype=object)
        ranks, scores = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.float32)
        size = self.pisathon.retrieve(
            self.r._ctxt, self.r.query_algorithm.value, list(enumerate(texts)), k=K, threads=threads,
            query_weighted=0, pretokenised=False, result_qidxs=qidx, result_docnos=docnos,
            result_ranks=ranks, result_scores=scores)
        out = [[] for _ in texts]
        order = sorted(range(size), key=lambda i: (qidx[i], ranks[i]))
        for i in order:
            out[qidx[i]].append((docnos[i], float(scores[i])))
        return out

    def search(self, text):
        return self._run([text], 1)[0]

    def batch(self, queries):
        got = self._run([t for _, t in queries], THREADS)
        return {qid: g for (qid, _), g in zip(queries, got)}


# --- bm25s


def _bm25s_tok(texts):
    import bm25s
    import Stemmer

    return bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)


def bm25s_build(corpus, index):
    import bm25s

    start = time.perf_counter()
    ids, texts = [], []
    for pid, text in read_corpus(corpus):
        ids.append(pid)
        texts.append(text)
    tokens = _bm25s_tok(texts)
    del texts
    r = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    r.index(tokens, show_progress=False)
    r.save(index)
    with open(os.path.join(index, "ids.json"), "w") as f:
        json.dump(ids, f)
    return time.perf_counter() - start, {
        "analyzer": "bm25s: words of two or more letters, lower case, its English stop words, Porter2 (PyStemmer)",
        "k1": 0.9, "b": 0.4, "norms": "exact lengths", "topk": "scores every document matching a term (sparse matrix), then top-k",
        "build": "tokenize + index (one thread), saved", "stores": "ids only",
    }


class Bm25sSearcher:
    def __init__(self, index):
        import bm25s

        self.r = bm25s.BM25.load(index)
        with open(os.path.join(index, "ids.json")) as f:
            self.ids = json.load(f)

    def _run(self, texts, threads):
        docs, scores = self.r.retrieve(_bm25s_tok(texts), k=K, n_threads=threads, show_progress=False)
        # bm25s fills a short list with score-0 documents: they are no hits.
        return [[(self.ids[d], float(sc)) for d, sc in zip(row, srow) if sc > 0] for row, srow in zip(docs, scores)]

    def search(self, text):
        return self._run([text], 1)[0]

    def batch(self, queries):
        got = self._run([t for _, t in queries], THREADS)
        return {qid: g for (qid, _), g in zip(queries, got)}


# --- tantivy


def tantivy_build(corpus, index):
    import tantivy

    start = time.perf_counter()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    os.makedirs(index, exist_ok=True)
    ix = tantivy.Index(sb.build(), path=index)
    w = ix.writer(heap_size=1 << 30, num_threads=THREADS)
    for pid, text in read_corpus(corpus):
        w.add_document(tantivy.Document(id=pid, body=text))
    w.commit()
    w.wait_merging_threads()
    return time.perf_counter() - start, {
        "analyzer": "tantivy en_stem: simple tokenizer, long words dropped, lower case, no stop words, Porter2",
        "k1": 1.2, "b": 0.75, "norms": "tantivy's one-byte lengths",
        "topk": "block-max WAND", "build": "IndexWriter, %d threads, 1 GiB heap" % THREADS, "stores": "ids only",
    }


class TantivySearcher:
    def __init__(self, index):
        import tantivy

        self.ix = tantivy.Index.open(index)
        self.s = self.ix.searcher()

    def search(self, text):
        q, _ = self.ix.parse_query_lenient(text, ["body"])
        return [(self.s.doc(addr)["id"][0], score) for score, addr in self.s.search(q, K).hits]

    def batch(self, queries):
        with ThreadPoolExecutor(THREADS) as ex:
            got = list(ex.map(self.search, [t for _, t in queries]))
        return {qid: g for (qid, _), g in zip(queries, got)}


BUILD = {"pyserini": pyserini_build, "pisa": pisa_build, "bm25s": bm25s_build, "tantivy": tantivy_build}
SEARCH = {"pyserini": PyseriniSearcher, "pisa": PisaSearcher, "bm25s": Bm25sSearcher, "tantivy": TantivySearcher}


def search(engine, index, queries_path, results_path):
    queries = read_queries(queries_path)
    start = time.perf_counter()
    s = SEARCH[engine](index)
    open_s = time.perf_counter() - start
    times = [0.0] * len(queries)
    results = {}
    qps_single = 0.0
    for p in range(3):
        t0 = time.perf_counter()
        for i, (qid, text) in enumerate(queries):
            t = time.perf_counter()
            results[qid] = s.search(text)
            d = time.perf_counter() - t
            if p == 1 or d < times[i]:
                times[i] = d
        if p > 0:
            qps_single = max(qps_single, len(queries) / (time.perf_counter() - t0))
    with open(results_path, "w", encoding="utf-8") as f:
        for qid, _ in queries:
            hits = results[qid]
            f.write("%s\t%s\t%s\n" % (qid, " ".join(h[0] for h in hits), " ".join(repr(float(h[1])) for h in hits)))
    done, t0 = 0, time.perf_counter()
    while done == 0 or time.perf_counter() - t0 < BATCH_SECONDS:
        s.batch(queries)
        done += len(queries)
    qps_batch = done / (time.perf_counter() - t0)
    return {"open_s": open_s, "qps_single": qps_single, "qps_batch": qps_batch, "times": times}


def dense(vectors, queries, dim, nlist, nprobes, prefix):
    import faiss
    import numpy as np

    xb = np.fromfile(vectors, dtype=np.float32).reshape(-1, dim)
    xq = np.fromfile(queries, dtype=np.float32).reshape(-1, dim)
    rows = []

    def measure(name, index, build_s, nprobe=None):
        path = "%s-%s.faiss" % (prefix, name)
        if not os.path.exists(path):
            faiss.write_index(index, path)
        faiss.omp_set_num_threads(1)
        # One query at a time, one thread; at least 20 queries or 2 seconds.
        times, t0 = [], time.perf_counter()
        for i in range(len(xq)):
            t = time.perf_counter()
            index.search(xq[i:i + 1], K)
            times.append(time.perf_counter() - t)
            if i >= 19 and time.perf_counter() - t0 > BATCH_SECONDS:
                break
        qps_single = len(times) / sum(times)
        faiss.omp_set_num_threads(THREADS)
        done, t0 = 0, time.perf_counter()
        while done == 0 or time.perf_counter() - t0 < BATCH_SECONDS:
            _, got = index.search(xq, K)
            done += len(xq)
        qps_batch = done / (time.perf_counter() - t0)
        key = name if nprobe is None else "%s-%d" % (name, nprobe)
        with open("%s-%s.tsv" % (prefix, key), "w") as f:
            for i, row in enumerate(got):
                f.write("%d\t%s\n" % (i, " ".join(str(int(d)) for d in row)))
        times.sort()
        rows.append({"index": name, "nprobe": nprobe, "build_s": build_s, "index_mb": os.path.getsize(path) / 1e6,
                     "qps_single": qps_single,
                     "qps_batch": qps_batch, "p50_ms": 1000 * times[len(times) // 2],
                     "p99_ms": 1000 * times[min(len(times) - 1, int(0.99 * len(times)))], "results": key})

    faiss.omp_set_num_threads(THREADS)
    t = time.perf_counter()
    flat = faiss.IndexFlatIP(dim)
    flat.add(xb)
    measure("IndexFlatIP", flat, time.perf_counter() - t)
    # IVF with the rows as they are, and with each dimension quantized to
    # 8 bits (IndexIVFScalarQuantizer, QT_8bit: the peer of distill's int8
    # IVF).
    for name, make in (
        ("IndexIVFFlat", lambda q: faiss.IndexIVFFlat(q, dim, nlist, faiss.METRIC_INNER_PRODUCT)),
        ("IndexIVFScalarQuantizer", lambda q: faiss.IndexIVFScalarQuantizer(
            q, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)),
    ):
        t = time.perf_counter()
        quantizer = faiss.IndexFlatIP(dim)
        ivf = make(quantizer)
        ivf.train(xb)
        ivf.add(xb)
        build_s = time.perf_counter() - t
        for nprobe in nprobes:
            ivf.nprobe = nprobe
            measure(name, ivf, build_s, nprobe)
        del ivf, quantizer
    return rows


def peak_rss_bytes():
    """The process's peak resident memory (VmHWM): its own, unlike
    getrusage's, which counts what the parent held when it forked this one."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    cmd = argv[1]
    if cmd == "build" and len(argv) == 5:
        took, settings = BUILD[argv[2]](argv[3], argv[4])
        out = {"build_s": took, "settings": settings}
    elif cmd == "search" and len(argv) == 6:
        out = search(argv[2], argv[3], argv[4], argv[5])
    elif cmd == "dense" and len(argv) == 8:
        out = dense(argv[2], argv[3], int(argv[4]), int(argv[5]), [int(x) for x in argv[6].split(",")], argv[7])
    else:
        raise SystemExit(__doc__)
    if isinstance(out, dict):
        out["peak_rss_bytes"] = peak_rss_bytes()
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
