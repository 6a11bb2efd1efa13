package elastictest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/llm/llmtest"
)

// Flavours the server can play.
const (
	Elasticsearch = "elasticsearch"
	OpenSearch    = "opensearch"
)

// Endpoints, as Request.Endpoint names them.
const (
	EndpointInfo     = "info"           // GET, HEAD /
	EndpointExists   = "index.exists"   // HEAD /{index}
	EndpointGet      = "index.get"      // GET /{index}
	EndpointCreate   = "index.create"   // PUT /{index}
	EndpointDelete   = "index.delete"   // DELETE /{index}
	EndpointSettings = "index.settings" // GET, PUT /{index}/_settings
	EndpointMapping  = "index.mapping"  // PUT /{index}/_mapping (_meta only)
	EndpointBulk     = "bulk"           // POST, PUT /_bulk, /{index}/_bulk
	EndpointRefresh  = "refresh"        // POST, GET /{index}/_refresh
	EndpointSearch   = "search"         // POST, GET /{index}/_search
	EndpointCount    = "count"          // POST, GET /{index}/_count
	EndpointUnknown  = "unknown"
)

// Fault is what the server does with one request instead of serving it.
type Fault int

const (
	// None serves the request.
	None Fault = iota
	// TooManyRequests answers 429 es_rejected_execution_exception for the
	// whole request.
	TooManyRequests
	// ServerError answers 500.
	ServerError
	// Unavailable answers 503.
	Unavailable
	// Malformed answers 200 with a body that is not JSON, after doing the
	// work (as when the answer is lost on its way back).
	Malformed
	// Hang never answers: the handler waits until the client gives up or
	// the server is closed.
	Hang
)

var faultNames = [...]string{"none", "too_many_requests", "server_error", "unavailable", "malformed", "hang"}

func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// Options configure a Server. The zero value plays an Elasticsearch 8
// node without security that serves every request.
type Options struct {
	// Flavor is Elasticsearch (default) or OpenSearch.
	Flavor string
	// APIKey, when set, is required as "Authorization: ApiKey KEY".
	// Username and Password, when set, are required as basic
	// authentication. Either accepted credential will do.
	APIKey             string
	Username, Password string
	// Fault, when set, picks what the server does with each request,
	// given the request (Seq, Endpoint, Body...). It is called with the
	// server's lock held, one request at a time, so it may keep counters.
	Fault func(Request) Fault
	// RejectItems makes the first n index operations of the document with
	// the given id fail with 429 es_rejected_execution_exception; later
	// ones succeed.
	RejectItems map[string]int
	// BadItems lists document ids whose index operations always fail with
	// 400 mapper_parsing_exception.
	BadItems []string
}

// Request is one request as the server received it.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq      int
	Endpoint string
	// Index is the index named in the path ("" for none).
	Index  string
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
	// Fault is what the server did instead of serving it.
	Fault Fault
	// Status is the HTTP status it answered (0 for a hang).
	Status int
}

// JSON decodes the body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Server is a running loopback cluster of one node. Close it when done.
type Server struct {
	lb   *llmtest.Loopback
	opts Options
	bad  map[string]bool

	mu       sync.Mutex
	seq      int
	requests []Request
	indices  map[string]*index
	rejected map[string]int // index operations rejected so far, by doc id
	an       analysis.Analyzer
}

// NewServer starts a server on a loopback port.
func NewServer(opts Options) *Server {
	if opts.Flavor == "" {
		opts.Flavor = Elasticsearch
	}
	if opts.Flavor != Elasticsearch && opts.Flavor != OpenSearch {
		panic("elastictest: unknown flavor " + opts.Flavor)
	}
	s := &Server{
		lb:       llmtest.NewLoopback(),
		opts:     opts,
		bad:      make(map[string]bool),
		indices:  make(map[string]*index),
		rejected: make(map[string]int),
	}
	for _, id := range opts.BadItems {
		s.bad[id] = true
	}
	s.opts.RejectItems = make(map[string]int, len(opts.RejectItems))
	for id, n := range opts.RejectItems {
		s.opts.RejectItems[id] = n
	}
	s.lb.Start(http.HandlerFunc(s.serve))
	return s
}

// URL is the node's base URL (http://127.0.0.1:PORT).
func (s *Server) URL() string { return s.lb.URL() }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.lb.Client() }

// Close ends hanging requests, stops the server and waits for its
// handlers to return.
func (s *Server) Close() { s.lb.Close() }

// Requests returns a copy of every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Endpoint returns the requests received at one endpoint, in order.
func (s *Server) Endpoint(endpoint string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Endpoint == endpoint {
			out = append(out, r)
		}
	}
	return out
}

// IndexInfo is the server's view of an index, for assertions.
type IndexInfo struct {
	// Settings are flat ("index.similarity.x.k1": "0.9"), as the cluster
	// keeps them; values are strings or lists of strings.
	Settings map[string]any
	// Mappings is the mapping as created.
	Mappings json.RawMessage
	// Docs counts the documents stored; Visible those a search sees (the
	// documents as of the last refresh).
	Docs, Visible int
}

// Index describes an index, if it exists.
func (s *Server) Index(name string) (IndexInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, ok := s.indices[name]
	if !ok {
		return IndexInfo{}, false
	}
	settings := make(map[string]any, len(ix.settings))
	for k, v := range ix.settings {
		settings[k] = v
	}
	return IndexInfo{Settings: settings, Mappings: slices.Clone(ix.mappings), Docs: len(ix.docs), Visible: len(ix.visible)}, true
}

// Doc returns the source of a stored document.
func (s *Server) Doc(index, id string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, ok := s.indices[index]
	if !ok {
		return nil, false
	}
	d, ok := ix.docs[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(d.source), true
}

// reply is an answer to write.
type reply struct {
	status int
	body   []byte
}

func jsonReply(status int, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the server only marshals its own values
	}
	return reply{status: status, body: b}
}

// errorReply is the cluster's error body:
// {"error":{"root_cause":[{...}],"type":...,"reason":...},"status":N}.
func errorReply(status int, typ, reason string) reply {
	cause := map[string]any{"type": typ, "reason": reason}
	e := map[string]any{"root_cause": []any{cause}, "type": typ, "reason": reason}
	return jsonReply(status, map[string]any{"error": e, "status": status})
}

// route names the endpoint of a request and the index in its path.
func route(method, path string) (endpoint, index string, allowed []string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if path == "/" || path == "" {
		return EndpointInfo, "", []string{"GET", "HEAD"}
	}
	if len(parts) == 1 {
		if parts[0] == "_bulk" {
			return EndpointBulk, "", []string{"POST", "PUT"}
		}
		switch method {
		case "HEAD":
			return EndpointExists, parts[0], nil
		case "GET":
			return EndpointGet, parts[0], nil
		case "PUT":
			return EndpointCreate, parts[0], nil
		case "DELETE":
			return EndpointDelete, parts[0], nil
		}
		return EndpointUnknown, parts[0], []string{"HEAD", "GET", "PUT", "DELETE"}
	}
	if len(parts) == 2 {
		switch parts[1] {
		case "_bulk":
			return EndpointBulk, parts[0], []string{"POST", "PUT"}
		case "_search":
			return EndpointSearch, parts[0], []string{"GET", "POST"}
		case "_count":
			return EndpointCount, parts[0], []string{"GET", "POST"}
		case "_refresh":
			return EndpointRefresh, parts[0], []string{"GET", "POST"}
		case "_settings":
			return EndpointSettings, parts[0], []string{"GET", "PUT"}
		case "_mapping":
			return EndpointMapping, parts[0], []string{"PUT"}
		}
	}
	return EndpointUnknown, "", nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away while sending
	}
	endpoint, index, allowed := route(r.Method, r.URL.Path)
	if idx, err := url.PathUnescape(index); err == nil {
		index = idx
	}
	rec := Request{Endpoint: endpoint, Index: index, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}

	s.mu.Lock()
	s.seq++
	rec.Seq = s.seq
	pre := s.check(r, rec, allowed)
	if pre == nil && s.opts.Fault != nil {
		rec.Fault = s.opts.Fault(rec)
	}
	at := len(s.requests)
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	var rep reply
	switch {
	case pre != nil:
		rep = *pre
	case rec.Fault == Hang:
		s.lb.Hang(r)
	case rec.Fault == TooManyRequests:
		rep = errorReply(http.StatusTooManyRequests, "es_rejected_execution_exception", "rejected execution of coordinating operation [elastictest]")
	case rec.Fault == ServerError:
		rep = errorReply(http.StatusInternalServerError, "exception", "injected by elastictest")
	case rec.Fault == Unavailable:
		rep = errorReply(http.StatusServiceUnavailable, "unavailable_shards_exception", "primary shard is not active (injected by elastictest)")
	default:
		s.mu.Lock()
		rep = s.handle(rec)
		s.mu.Unlock()
		if rec.Fault == Malformed {
			rep = reply{status: http.StatusOK, body: []byte(`{"took": 3, "errors": fals<html>proxy error</html>`)}
		}
	}

	s.mu.Lock()
	s.requests[at].Status = rep.status
	s.mu.Unlock()
	h := w.Header()
	if s.opts.Flavor == Elasticsearch {
		h.Set("X-Elastic-Product", "Elasticsearch")
	}
	if rep.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="security", charset="UTF-8"`)
	}
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Content-Length", strconv.Itoa(len(rep.body)))
	w.WriteHeader(rep.status)
	if r.Method != http.MethodHead {
		w.Write(rep.body)
	}
}

// check applies what the node checks before serving anything: the media
// types, the credentials, the method.
func (s *Server) check(r *http.Request, rec Request, allowed []string) *reply {
	if s.opts.Flavor == OpenSearch {
		for _, h := range []string{"Accept", "Content-Type"} {
			if v := r.Header.Get(h); strings.Contains(v, "vnd.elasticsearch") {
				rep := jsonReply(http.StatusNotAcceptable, map[string]any{
					"error":  fmt.Sprintf("Content-Type header [%s] is not supported", v),
					"status": http.StatusNotAcceptable,
				})
				return &rep
			}
		}
	}
	if s.opts.APIKey != "" || s.opts.Username != "" || s.opts.Password != "" {
		if !s.authorized(r.Header.Get("Authorization")) {
			rep := errorReply(http.StatusUnauthorized, "security_exception", "missing authentication credentials for REST request ["+rec.Path+"]")
			return &rep
		}
	}
	if rec.Endpoint == EndpointUnknown && allowed == nil {
		rep := errorReply(http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf("no handler found for uri [%s] and method [%s]", rec.Path, rec.Method))
		return &rep
	}
	if allowed != nil && !slices.Contains(allowed, rec.Method) {
		rep := jsonReply(http.StatusMethodNotAllowed, map[string]any{
			"error":  fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s], allowed: [%s]", rec.Path, rec.Method, strings.Join(allowed, ", ")),
			"status": http.StatusMethodNotAllowed,
		})
		return &rep
	}
	return nil
}

func (s *Server) authorized(h string) bool {
	scheme, cred, _ := strings.Cut(h, " ")
	switch strings.ToLower(scheme) {
	case "apikey":
		return s.opts.APIKey != "" && cred == s.opts.APIKey
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return false
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		return (s.opts.Username != "" || s.opts.Password != "") && user == s.opts.Username && pass == s.opts.Password
	}
	return false
}

// handle serves a request; the lock is held.
func (s *Server) handle(rec Request) reply {
	switch rec.Endpoint {
	case EndpointInfo:
		return s.info()
	case EndpointBulk:
		return s.bulk(rec)
	case EndpointCreate:
		return s.create(rec)
	}
	ix, ok := s.indices[rec.Index]
	if !ok {
		return errorReply(http.StatusNotFound, "index_not_found_exception", "no such index ["+rec.Index+"]")
	}
	switch rec.Endpoint {
	case EndpointExists:
		return reply{status: http.StatusOK}
	case EndpointGet:
		return jsonReply(http.StatusOK, map[string]any{ix.name: map[string]any{
			"aliases": map[string]any{}, "mappings": json.RawMessage(ix.mappings), "settings": nest(ix.settings),
		}})
	case EndpointDelete:
		delete(s.indices, rec.Index)
		return jsonReply(http.StatusOK, map[string]any{"acknowledged": true})
	case EndpointSettings:
		if rec.Method == http.MethodGet {
			return jsonReply(http.StatusOK, map[string]any{ix.name: map[string]any{"settings": nest(ix.settings)}})
		}
		return ix.updateSettings(rec.Body)
	case EndpointMapping:
		return ix.updateMeta(rec.Body)
	case EndpointRefresh:
		ix.refresh()
		return jsonReply(http.StatusOK, map[string]any{"_shards": shards()})
	case EndpointSearch:
		return s.search(ix, rec)
	case EndpointCount:
		return s.count(ix, rec)
	}
	return errorReply(http.StatusBadRequest, "illegal_argument_exception", "no handler for "+rec.Endpoint)
}

func shards() map[string]any {
	return map[string]any{"total": 1, "successful": 1, "skipped": 0, "failed": 0}
}

func (s *Server) info() reply {
	v := map[string]any{
		"name":         "elastictest",
		"cluster_name": "elastictest",
		"cluster_uuid": "ZWxhc3RpY3Rlc3QtdXVpZA",
	}
	if s.opts.Flavor == OpenSearch {
		v["version"] = map[string]any{
			"distribution":   "opensearch",
			"number":         "2.19.0",
			"build_type":     "tar",
			"lucene_version": "9.12.1",
		}
		v["tagline"] = "The OpenSearch Project: https://opensearch.org/"
	} else {
		v["version"] = map[string]any{
			"number":         "8.19.7",
			"build_flavor":   "default",
			"build_type":     "docker",
			"lucene_version": "9.12.2",
		}
		v["tagline"] = "You Know, for Search"
	}
	return jsonReply(http.StatusOK, v)
}

// parseError is the type a flavour gives a document it cannot parse.
func (s *Server) parseError() string {
	if s.opts.Flavor == OpenSearch {
		return "mapper_parsing_exception"
	}
	return "document_parsing_exception"
}
