package elastic

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/distill-rag/distill/llm"
)

// Flavor is the kind of cluster. The two differ, for distill, only in how
// dense vectors are mapped and searched.
type Flavor string

// The flavours distill knows.
const (
	Elasticsearch Flavor = "elasticsearch"
	OpenSearch    Flavor = "opensearch"
)

// The environment variables credentials come from (see Config).
const (
	EnvAPIKey   = "DISTILL_ES_API_KEY"
	EnvUsername = "DISTILL_ES_USERNAME"
	EnvPassword = "DISTILL_ES_PASSWORD"
)

// Defaults of Config.
const (
	DefaultTimeout = time.Minute
	DefaultRetries = 3
	DefaultBackoff = 500 * time.Millisecond
	// maxBackoff caps the doubling waits between retries.
	maxBackoff = 30 * time.Second
)

// Config says where the index lives and how to talk to its cluster. The
// zero value of every field but URLs and Index means its default.
type Config struct {
	// URLs are the base URLs of the cluster's nodes (http:// or https://,
	// optionally with a path prefix for a proxy); requests go round-robin
	// and a node that fails is set aside for a while. They must not hold
	// credentials.
	URLs []string
	// Index is the index name (or, for Open, an alias).
	Index string
	// Flavor is the kind of cluster; empty means ask the cluster (Load) or
	// read it from the index's mapping (Open).
	Flavor Flavor
	// Search is how Open's retriever searches: SearchBM25 (empty), or by
	// the index's vectors, SearchKNN (the graph) or SearchExact (every
	// vector), embedding the queries as the index records
	// (OpenOptions.EmbedderFor). An address sets it with ?search=.
	Search Search
	// APIKey is an Elasticsearch API key (the base64 "encoded" form), sent
	// as "Authorization: ApiKey ...". Username and Password are for HTTP
	// basic authentication. When all three are empty, Load and Open read
	// them from DISTILL_ES_API_KEY, DISTILL_ES_USERNAME and
	// DISTILL_ES_PASSWORD. Secrets print and log as "[redacted]".
	APIKey   llm.Secret
	Username string
	Password llm.Secret
	// HTTPClient sends the requests (default: a client of its own, with
	// Go's default transport settings). Its Timeout, if any, applies to
	// each attempt.
	HTTPClient *http.Client
	// Timeout bounds one call to the cluster, retries included (default
	// DefaultTimeout).
	Timeout time.Duration
	// Retries is how many times a request that failed as a whole (no
	// connection, 429, 502, 503, 504) is sent again (default
	// DefaultRetries; negative: never). Load also retries the single
	// documents a bulk request reports as rejected: see LoadOptions.Retries.
	Retries int
	// Backoff is the wait before the first retry; it doubles for each
	// later one, up to 30s (default DefaultBackoff).
	Backoff time.Duration
}

// String returns the index's address in the form ParseURL reads,
// without credentials.
func (c Config) String() string {
	if len(c.URLs) == 0 {
		return "es:///" + c.Index
	}
	scheme := "es"
	var hosts []string
	prefix := ""
	for i, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return strings.Join(c.URLs, ",") + "/" + c.Index
		}
		if i == 0 {
			if u.Scheme == "https" {
				scheme = "ess"
			}
			prefix = strings.TrimRight(u.Path, "/")
		}
		hosts = append(hosts, u.Host)
	}
	s := scheme + "://" + strings.Join(hosts, ",") + prefix + "/" + c.Index
	var q []string
	if c.Flavor != "" {
		q = append(q, "flavor="+string(c.Flavor))
	}
	if c.Search != "" && c.Search != SearchBM25 {
		q = append(q, "search="+string(c.Search))
	}
	if len(q) > 0 {
		s += "?" + strings.Join(q, "&")
	}
	return s
}

// Search is how a retriever searches an index (Config.Search).
type Search string

// The searches: BM25 over title and text, kNN over the index's vectors by
// its graph, or exactly, scoring every vector.
const (
	SearchBM25  Search = "bm25"
	SearchKNN   Search = "knn"
	SearchExact Search = "exact"
)

// IsURL reports whether s is an index address for ParseURL (it starts
// with es:// or ess://), as opposed to a path to an index on disk.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "es://") || strings.HasPrefix(s, "ess://")
}

// ParseURL reads an index address:
//
//	es://HOST[:PORT][,HOST[:PORT]...][/PREFIX]/INDEX[?flavor=opensearch]
//
// es:// talks plain HTTP (port 9200 when none is given), ess:// talks
// HTTPS (port 443 when none is given). Several hosts, comma-separated, are
// nodes of one cluster. Path segments before the index name are a prefix
// that every request carries (a cluster behind a proxy). The flavor
// parameter sets Config.Flavor ("elasticsearch" or "opensearch").
// Credentials do not belong in the address: they come from the
// environment (see Config).
func ParseURL(s string) (Config, error) {
	cfg, err := parseURL(s)
	if err != nil {
		return Config{}, fmt.Errorf("index address %q: %w", redact(s), err)
	}
	return cfg, nil
}

// redact hides what an address holds between its scheme and an "@", so
// that an error message never repeats a password.
func redact(s string) string {
	i := strings.Index(s, "://")
	at := strings.LastIndexByte(s, '@')
	if i < 0 || at < i {
		return s
	}
	return s[:i+3] + "REDACTED" + s[at:]
}

func parseURL(s string) (Config, error) {
	var scheme, rest string
	switch {
	case strings.HasPrefix(s, "es://"):
		scheme, rest = "http", s[len("es://"):]
	case strings.HasPrefix(s, "ess://"):
		scheme, rest = "https", s[len("ess://"):]
	default:
		return Config{}, errors.New("want es://HOST:PORT/INDEX or ess://HOST:PORT/INDEX")
	}
	var cfg Config
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		q, err := url.ParseQuery(rest[i+1:])
		if err != nil {
			return Config{}, err
		}
		rest = rest[:i]
		for k, v := range q {
			switch k {
			case "flavor":
				f := Flavor(strings.ToLower(v[len(v)-1]))
				if f != Elasticsearch && f != OpenSearch {
					return Config{}, fmt.Errorf("flavor %q: want elasticsearch or opensearch", v[len(v)-1])
				}
				cfg.Flavor = f
			case "search":
				m := Search(strings.ToLower(v[len(v)-1]))
				if !slices.Contains([]Search{SearchBM25, SearchKNN, SearchExact}, m) {
					return Config{}, fmt.Errorf("search %q: want bm25, knn or exact", v[len(v)-1])
				}
				if m != SearchBM25 {
					cfg.Search = m // BM25 is the default, said by no value
				}
			default:
				return Config{}, fmt.Errorf("unknown parameter %q (known: flavor, search)", k)
			}
		}
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return Config{}, errors.New("no index name (want es://HOST:PORT/INDEX)")
	}
	hostList, path := rest[:slash], strings.TrimRight(rest[slash:], "/")
	if strings.Contains(hostList, "@") {
		return Config{}, fmt.Errorf("credentials do not belong in the address; set %s, or %s and %s", EnvAPIKey, EnvUsername, EnvPassword)
	}
	if path == "" {
		return Config{}, errors.New("no index name (want es://HOST:PORT/INDEX)")
	}
	if strings.Contains(path, "//") {
		return Config{}, errors.New("empty path segment")
	}
	cut := strings.LastIndexByte(path, '/')
	prefix, name := path[:cut], path[cut+1:]
	if strings.IndexFunc(prefix, func(r rune) bool { return !isPathRune(r) }) >= 0 {
		return Config{}, fmt.Errorf("path prefix %q: only letters, digits and . _ ~ - / allowed", prefix)
	}
	if err := checkIndexName(name); err != nil {
		return Config{}, err
	}
	cfg.Index = name
	for h := range strings.SplitSeq(hostList, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return Config{}, errors.New("empty host")
		}
		u, err := url.Parse(scheme + "://" + h + prefix)
		if err != nil || u.Host == "" || u.Hostname() == "" || u.Path != prefix || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return Config{}, fmt.Errorf("bad host %q", h)
		}
		host, port := u.Hostname(), u.Port()
		if port == "" && scheme == "http" {
			port = "9200"
		}
		switch {
		case port != "":
			u.Host = net.JoinHostPort(host, port)
		case strings.Contains(host, ":"):
			u.Host = "[" + host + "]"
		default:
			u.Host = host
		}
		cfg.URLs = append(cfg.URLs, u.String())
	}
	return cfg, nil
}

func isPathRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._~-/", r)
}

// checkIndexName applies the cluster's rules for index names, so that a
// bad name fails with a clear message before any request.
func checkIndexName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty index name")
	case name == "." || name == "..":
		return fmt.Errorf("index name %q is not allowed", name)
	case len(name) > 255:
		return fmt.Errorf("index name of %d bytes: at most 255 allowed", len(name))
	case strings.ContainsAny(name[:1], "-_+"):
		return fmt.Errorf("index name %q: must not start with -, _ or +", name)
	case strings.ToLower(name) != name:
		return fmt.Errorf("index name %q: must be lower case", name)
	case strings.ContainsAny(name, `\/*?"<>| ,#:`):
		return fmt.Errorf("index name %q: must not contain any of \\ / * ? \" < > | space , # :", name)
	}
	return nil
}

// withDefaults checks cfg and fills in its defaults and, when cfg holds no
// credentials, those of the environment.
func (c Config) withDefaults(getenv func(string) string) (Config, error) {
	if len(c.URLs) == 0 {
		return c, fmt.Errorf("no cluster URL (want es://HOST:PORT/INDEX or Config.URLs)")
	}
	for _, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			return c, fmt.Errorf("cluster URL: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return c, fmt.Errorf("cluster URL %q: want http://HOST:PORT or https://HOST:PORT", raw)
		}
		if u.User != nil {
			return c, fmt.Errorf("cluster URL %s: credentials do not belong in the URL; set %s, or %s and %s", u.Redacted(), EnvAPIKey, EnvUsername, EnvPassword)
		}
	}
	if err := checkIndexName(c.Index); err != nil {
		return c, err
	}
	if c.Flavor != "" && c.Flavor != Elasticsearch && c.Flavor != OpenSearch {
		return c, fmt.Errorf("flavor %q: want %q or %q", c.Flavor, Elasticsearch, OpenSearch)
	}
	if c.APIKey == "" && c.Username == "" && c.Password == "" {
		c.APIKey = llm.Secret(getenv(EnvAPIKey))
		c.Username = getenv(EnvUsername)
		c.Password = llm.Secret(getenv(EnvPassword))
	}
	if c.APIKey != "" && (c.Username != "" || c.Password != "") {
		return c, fmt.Errorf("both an API key and a user name or password are set: use one (%s, or %s and %s)", EnvAPIKey, EnvUsername, EnvPassword)
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	c.URLs = slices.Clone(c.URLs)
	return c, nil
}

// backoff is the wait before retry number attempt (from 1).
func (c Config) backoff(attempt int) time.Duration {
	d := c.Backoff
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}
