package llmtest

import (
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fault is what the server does with one request instead of answering it.
type Fault int

const (
	// None answers normally.
	None Fault = iota
	// RateLimited answers 429 with a Retry-After header.
	RateLimited
	// ServerError answers 500.
	ServerError
	// Unavailable answers 503.
	Unavailable
	// Malformed answers 200 with a body that is not JSON.
	Malformed
	// Truncated answers 200 with a Content-Length larger than the body it
	// sends, then cuts the connection.
	Truncated
	// Hang never answers: the handler waits until the client goes away or
	// the server is closed.
	Hang
)

var faultNames = [...]string{"none", "rate_limited", "server_error", "unavailable", "malformed", "truncated", "hang"}

func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// Options configures a Server. The zero value answers every request at
// once and correctly.
type Options struct {
	// Latency delays every answer (and every fault but Hang).
	Latency time.Duration
	// Seed seeds the fault draws: one draw per accepted request, in arrival
	// order, so a sequential client sees the same faults on every run.
	Seed uint64
	// Rates of each fault, as probabilities; their sum must not exceed 1.
	RateLimited, ServerError, Unavailable, Malformed, Truncated, Hang float64
	// Script gives the faults of the first requests, in arrival order,
	// before the rates apply (None answers normally).
	Script []Fault
	// RetryAfter is the wait a 429 asks for, sent in whole seconds rounded
	// up (default 1s).
	RetryAfter time.Duration
	// NoJSONSchema makes the server answer 400 to response_format
	// json_schema; NoJSONObject does the same for json_object.
	NoJSONSchema bool
	NoJSONObject bool
	// APIKey, when set, is required as a bearer token (401 otherwise).
	APIKey string
	// Answer, when set, writes the content of every chat answer.
	Answer func(Request) string
	// Text is the answer to a chat request without a JSON Schema when
	// Answer is nil (default "OK"); with json_object it is "{}".
	Text string
	// EmbeddingDim is the length of the vectors (default 8).
	EmbeddingDim int
	// Observe, when set, sees every accepted request once its fault is
	// drawn, before the server acts on it: tests use it to learn that a
	// request has arrived (a hang has begun) without polling.
	Observe func(Request)
	// BatchScript gives the outcomes of the first batches, in creation
	// order (a batch whose input file is invalid takes its entry too);
	// later batches complete normally. See BatchOutcome.
	BatchScript []BatchOutcome
	// BatchPolls is how many polls a batch answers in_progress before it
	// ends (default 1). The first poll only moves it out of validating.
	BatchPolls int
	// FineTunePolls is how many polls a fine-tuning job answers running
	// before it ends (default 2); see finetune.go.
	FineTunePolls int
}

// Message is one chat message of a recorded request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one request as the server received it.
type Request struct {
	Path   string
	Header http.Header
	// Body is the raw JSON body.
	Body []byte
	// Model, Messages and the response format are decoded from a chat body.
	Model          string
	Messages       []Message
	ResponseFormat string          // "", "text", "json_object" or "json_schema"
	Schema         json.RawMessage // response_format.json_schema.schema
	// Input is the input of an embeddings request.
	Input []string
	// Fault is what the server did with it.
	Fault Fault
	// Status is the HTTP status it answered (0 for a hang).
	Status int
}

// Member returns the raw JSON of a top-level member of the body, such as
// "temperature", and whether it is there.
func (r Request) Member(name string) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Body, &m) != nil {
		return nil, false
	}
	v, ok := m[name]
	return v, ok
}

// Counts are the server's tallies by outcome.
type Counts struct {
	Requests     int // every request received
	OK           int // answered 200 with a good body
	RateLimited  int
	ServerError  int
	Unavailable  int
	Malformed    int
	Truncated    int
	Hang         int
	Rejected     int // 400: bad body or unsupported response_format
	Unauthorized int // 401
	NotFound     int // 404
	Files        int // files uploaded
	Batches      int // batches created
}

// Server is a running fault-injecting server. Close it when done.
type Server struct {
	lb   *Loopback
	opts Options

	mu          sync.Mutex
	rng         *rand.Rand
	script      int
	seq         int
	requests    []Request
	counts      Counts
	inFlight    int
	maxInFlight int
	// Files and batches (batch.go), created lazily.
	files       map[string]*file
	batches     map[string]*batch
	batchIDs    []string // in creation order
	batchScript int
	ft          fineTunes // fine-tuning jobs (finetune.go)
}

// NewServer starts a server on a loopback port.
func NewServer(opts Options) *Server {
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.Text == "" {
		opts.Text = "OK"
	}
	if opts.EmbeddingDim <= 0 {
		opts.EmbeddingDim = 8
	}
	s := &Server{
		lb:   NewLoopback(),
		opts: opts,
		rng:  rand.New(rand.NewPCG(opts.Seed, 0x11a7e57)),
	}
	s.lb.Start(http.HandlerFunc(s.serve))
	return s
}

// URL is the API root to use as a client's base URL, ending in /v1.
func (s *Server) URL() string { return s.lb.URL() + "/v1" }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.lb.Client() }

// Close ends hanging requests, stops the server and waits for its
// handlers to return.
func (s *Server) Close() { s.lb.Close() }

// Requests returns a copy of every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Counts returns the tallies so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// MaxInFlight returns the largest number of requests the server was
// handling at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// draw picks the fault for the next accepted request.
func (s *Server) draw() Fault {
	if s.script < len(s.opts.Script) {
		f := s.opts.Script[s.script]
		s.script++
		return f
	}
	u := s.rng.Float64()
	for _, c := range []struct {
		p float64
		f Fault
	}{
		{s.opts.RateLimited, RateLimited},
		{s.opts.ServerError, ServerError},
		{s.opts.Unavailable, Unavailable},
		{s.opts.Malformed, Malformed},
		{s.opts.Truncated, Truncated},
		{s.opts.Hang, Hang},
	} {
		if u < c.p {
			return c.f
		}
		u -= c.p
	}
	return None
}

// record stores rec (with the status written) and tallies it.
func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	c := &s.counts
	switch {
	case rec.Status == http.StatusUnauthorized:
		c.Unauthorized++
	case rec.Status == http.StatusNotFound:
		c.NotFound++
	case rec.Status == http.StatusBadRequest || rec.Status == http.StatusMethodNotAllowed:
		c.Rejected++
	}
	switch rec.Fault {
	case RateLimited:
		c.RateLimited++
	case ServerError:
		c.ServerError++
	case Unavailable:
		c.Unavailable++
	case Malformed:
		c.Malformed++
	case Truncated:
		c.Truncated++
	case Hang:
		c.Hang++
	default:
		if rec.Status == http.StatusOK {
			c.OK++
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.counts.Requests++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()

	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err != nil {
		// The client went away while sending.
		rec.Status = http.StatusBadRequest
		s.record(rec)
		return
	}
	rt, e := s.admit(r, &rec)
	if e != nil {
		rec.Status = e.status
		s.record(rec)
		writeError(w, rec.Status, e.msg, "invalid_request_error", e.code, e.param)
		return
	}

	s.mu.Lock()
	rec.Fault = s.draw()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	if s.opts.Observe != nil {
		s.opts.Observe(rec)
	}

	if rec.Fault == Hang {
		s.record(rec)
		s.lb.Hang(r)
	}
	if !s.lb.Wait(r, s.opts.Latency) {
		rec.Status = 0
		s.record(rec)
		panic(http.ErrAbortHandler)
	}

	var answer []byte
	ctype := "application/json"
	switch {
	case rt.op != nil:
		// 429, 5xx and hangs change nothing; a malformed or truncated
		// answer comes after the work is done, as when the response is
		// lost on its way back.
		if rec.Fault == None || rec.Fault == Malformed || rec.Fault == Truncated {
			answer, ctype = s.applyBatchOp(rt.op)
		}
	case rt.ft != nil:
		// As for batches.
		if rec.Fault == None || rec.Fault == Malformed || rec.Fault == Truncated {
			answer = s.applyFineTuneOp(rt.ft)
		}
	case rt.chat:
		answer = s.chatAnswer(rec, seq)
	default:
		answer = s.embeddingAnswer(rec)
	}
	s.respond(w, rec, answer, ctype)
}

// asked is what a request asks for: a chat completion, embeddings (none
// of these), a files or batches request, or a fine-tuning request.
type asked struct {
	chat bool
	op   *batchOp
	ft   *fineTuneOp
}

// admit reads a request into rec and says what it asks for, or why it is
// refused.
func (s *Server) admit(r *http.Request, rec *Request) (asked, *apiError) {
	var rt asked
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		return rt, &apiError{status: http.StatusUnauthorized, msg: "Incorrect API key provided.", code: "invalid_api_key"}
	}
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		rt.chat = true
	case "/v1/embeddings", "/embeddings":
	default:
		var e *apiError
		if isFineTunePath(r.URL.Path) {
			rt.ft, e = s.prepareFineTuneOp(r, rec.Body)
		} else {
			rt.op, e = s.prepareBatchOp(r, rec.Body)
		}
		return rt, e
	}
	if r.Method != http.MethodPost {
		return rt, &apiError{status: http.StatusMethodNotAllowed, msg: "Method not allowed"}
	}
	if msg, param := decode(rec, rt.chat); msg != "" {
		return rt, &apiError{status: http.StatusBadRequest, msg: msg, param: param}
	}
	if rt.chat {
		if msg := s.unsupported(rec.ResponseFormat); msg != "" {
			return rt, &apiError{status: http.StatusBadRequest, msg: msg, param: "response_format"}
		}
	}
	return rt, nil
}

// respond records the request and answers it, as its fault says.
func (s *Server) respond(w http.ResponseWriter, rec Request, answer []byte, ctype string) {
	switch rec.Fault {
	case RateLimited:
		rec.Status = http.StatusTooManyRequests
		s.record(rec)
		secs := int(math.Ceil(s.opts.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, rec.Status, "Rate limit reached. Please try again in "+strconv.Itoa(secs)+"s.", "requests", "rate_limit_exceeded", "")
	case ServerError:
		rec.Status = http.StatusInternalServerError
		s.record(rec)
		writeError(w, rec.Status, "The server had an error while processing your request.", "server_error", "", "")
	case Unavailable:
		rec.Status = http.StatusServiceUnavailable
		s.record(rec)
		writeError(w, rec.Status, "The engine is currently overloaded, please try again later.", "server_error", "", "")
	case Malformed:
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Status)
		io.WriteString(w, `{"id": chatcmpl-broken, "choices": [}`)
	case Truncated:
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(rec.Status)
		w.Write(answer[:len(answer)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		// Abort: the server closes the connection without finishing.
		panic(http.ErrAbortHandler)
	default:
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(rec.Status)
		w.Write(answer)
	}
}
