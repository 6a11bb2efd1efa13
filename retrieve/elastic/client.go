package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/distill-rag/distill/llm/httperr"
)

// Sentinel errors callers branch on.
var (
	// ErrNotFound: the index does not exist.
	ErrNotFound = errors.New("index not found")
	// ErrExists: Load found the index already there and was not asked to
	// recreate it.
	ErrExists = errors.New("index already exists")
)

// Error is an answer of the cluster that was not a success: Op is what
// was asked ("search", "create index", ...), StatusCode the HTTP status,
// Type and Message come from the error body ("index_not_found_exception",
// "no such index [wiki]", with the reasons of its causes; the start of the
// body when it is not the cluster's JSON error), RetryAfter from the
// Retry-After header. A missing index matches ErrNotFound. It is the one
// error type of distill's HTTP clients: llm.StatusError is the same type.
type Error = httperr.Error

// newError reads an answer of the cluster that was not a success, and adds
// what to do about the failures a user can fix.
func newError(op string, status int, h http.Header, body []byte) error {
	e := httperr.Decode(op, status, h, body)
	if status == http.StatusNotFound && (e.Type == "index_not_found_exception" || e.Type == "") {
		e.Err = ErrNotFound
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w (credentials come from %s, or %s and %s)", e, EnvAPIKey, EnvUsername, EnvPassword)
	case http.StatusRequestEntityTooLarge:
		return fmt.Errorf("%w (send smaller bulk requests: lower the batch size)", e)
	}
	return e
}

// maxBody caps the answers read into memory.
const maxBody = 256 << 20

// client sends esapi requests through an elastictransport.Client.
//
// It deliberately does not use elasticsearch.Client: that client checks on
// the first successful answer that the server sent "X-Elastic-Product:
// Elasticsearch" (OpenSearch does not, so every call would fail with "the
// client noticed that the server is not Elasticsearch") and, when
// ELASTIC_CLIENT_APIVERSIONING is set, sends the
// "application/vnd.elasticsearch+json;compatible-with=8" media type, which
// OpenSearch refuses. The esapi requests themselves are plain REST calls
// that both products answer alike; sending them through the transport
// directly keeps the connection pool, retries and authentication and
// drops the product check and the compatibility header.
type client struct {
	tp  *elastictransport.Client
	cfg Config
}

func newClient(cfg Config) (*client, error) {
	urls := make([]*url.URL, len(cfg.URLs))
	for i, raw := range cfg.URLs {
		u, err := url.Parse(strings.TrimRight(raw, "/"))
		if err != nil {
			return nil, fmt.Errorf("cluster URL: %w", err)
		}
		urls[i] = u
	}
	opts := []elastictransport.Option{
		elastictransport.WithURLs(urls...),
		elastictransport.WithUserAgent("distill (go-elasticsearch/" + esapi.Version + ")"),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, elastictransport.WithTransport(clientTransport{cfg.HTTPClient}))
	}
	switch {
	case cfg.APIKey != "":
		opts = append(opts, elastictransport.WithAPIKey(string(cfg.APIKey)))
	case cfg.Username != "" || cfg.Password != "":
		opts = append(opts, elastictransport.WithBasicAuth(cfg.Username, string(cfg.Password)))
	}
	if cfg.Retries < 0 {
		opts = append(opts, elastictransport.WithDisableRetry())
	} else {
		opts = append(opts,
			elastictransport.WithMaxRetries(cfg.Retries),
			elastictransport.WithRetryOnStatus(http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout),
			elastictransport.WithRetryBackoff(cfg.backoff),
			// A request whose context has ended is not worth sending again.
			elastictransport.WithRetryOnError(func(r *http.Request, _ error) bool { return r.Context().Err() == nil }),
		)
	}
	tp, err := elastictransport.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	return &client{tp: tp, cfg: cfg}, nil
}

// clientTransport sends requests through an *http.Client, so that its
// own transport, timeout and cookie jar apply.
type clientTransport struct{ c *http.Client }

func (t clientTransport) RoundTrip(r *http.Request) (*http.Response, error) { return t.c.Do(r) }

func (c *client) close() { _ = c.tp.Close(context.Background()) }

// where names the cluster in error messages.
func (c *client) where() string { return strings.Join(c.cfg.URLs, ",") }

// call sends req under the configured timeout and returns the status and
// body of the answer. An answer other than 2xx is an *Error, perhaps
// wrapped with advice (the status and body are returned with it); a
// context that ended is reported as ctx.Err(), wrapped.
func (c *client) call(ctx context.Context, op string, req esapi.Request) (int, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", op, err)
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	fail := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
		if cctx.Err() != nil {
			return fmt.Errorf("%s: no answer from %s within %v: %w", op, c.where(), c.cfg.Timeout, cctx.Err())
		}
		return fmt.Errorf("%s: %s: %w", op, c.where(), err)
	}
	res, err := req.Do(cctx, c.tp)
	if err != nil {
		return 0, nil, fail(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return res.StatusCode, nil, fail(fmt.Errorf("read answer: %w", err))
	}
	if len(body) > maxBody {
		return res.StatusCode, nil, fmt.Errorf("%s: answer larger than %d MiB", op, maxBody>>20)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, body, newError(op, res.StatusCode, res.Header, body)
	}
	return res.StatusCode, body, nil
}

// decode unmarshals a successful answer, naming the call when the body is
// not what the API promises.
func decode(op string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return httperr.Malformed(op, err, body)
	}
	return nil
}

// info is the part of GET / that matters here.
type info struct {
	Version struct {
		Number       string `json:"number"`
		Distribution string `json:"distribution"`
	} `json:"version"`
}

// flavor asks the cluster what it is: OpenSearch says so in
// version.distribution; Elasticsearch has no such field.
func (c *client) flavor(ctx context.Context) (Flavor, string, error) {
	_, body, err := c.call(ctx, "cluster info", esapi.InfoRequest{})
	if err != nil {
		return "", "", err
	}
	var in info
	if err := decode("cluster info", body, &in); err != nil {
		return "", "", err
	}
	if in.Version.Number == "" {
		return "", "", fmt.Errorf("cluster info: %s did not answer like Elasticsearch or OpenSearch: %s", c.where(), httperr.Excerpt(body))
	}
	if strings.EqualFold(in.Version.Distribution, "opensearch") {
		return OpenSearch, in.Version.Number, nil
	}
	return Elasticsearch, in.Version.Number, nil
}
