package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
)

// Endpoint is what Stack wraps: a Chatter and Embedder with the names
// accounting and caching need. *Client and *Pool are Endpoints.
type Endpoint interface {
	Chatter
	Embedder
	// BaseURL, Model and Role name the endpoint in cache keys, logs and
	// usage; ChatExtra (Config.ChatExtra) is part of cache keys too.
	BaseURL() string
	Model() string
	Role() string
	ChatExtra() json.RawMessage
}

var (
	_ Endpoint = (*Client)(nil)
	_ Endpoint = (*Pool)(nil)
)

// Pool spreads requests over replicas of one model (vLLM replicas behind
// several base URLs): each request goes to the replica with the fewest
// requests in flight, the first such in round-robin order after the last
// one chosen. Retries, limits and the cache wrap the Pool as they wrap a
// Client (Stack), so a retried request may go to another replica, the
// limits apply to the model as a whole, and the cache is shared by the
// replicas (its key uses BaseURL, the replicas' URLs joined). Safe for
// concurrent use.
type Pool struct {
	clients []*Client

	mu       sync.Mutex
	inFlight []int
	next     int
}

// ErrPool is returned by NewPool for replicas that are not one model.
var ErrPool = errors.New("bad replica pool")

// NewPool returns a pool over clients of the same model and role.
func NewPool(clients ...*Client) (*Pool, error) {
	if len(clients) == 0 {
		return nil, errors.New("llm: a pool needs at least one client")
	}
	for _, c := range clients[1:] {
		if c.Model() != clients[0].Model() || c.Role() != clients[0].Role() {
			return nil, errors.Join(ErrPool, errors.New("llm: the replicas of a pool must serve one model for one role"))
		}
	}
	return &Pool{clients: clients, inFlight: make([]int, len(clients))}, nil
}

// pick chooses a replica and counts the request in flight on it; done
// must be called when the request ends.
func (p *Pool) pick() (c *Client, done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for k := range p.clients {
		i := (p.next + k) % len(p.clients)
		if best < 0 || p.inFlight[i] < p.inFlight[best] {
			best = i
		}
	}
	p.next = (best + 1) % len(p.clients)
	p.inFlight[best]++
	return p.clients[best], func() {
		p.mu.Lock()
		p.inFlight[best]--
		p.mu.Unlock()
	}
}

// Chat implements Chatter.
func (p *Pool) Chat(ctx context.Context, req Request) (Response, error) {
	c, done := p.pick()
	defer done()
	return c.Chat(ctx, req)
}

// Embed implements Embedder.
func (p *Pool) Embed(ctx context.Context, inputs []string) ([][]float32, Usage, error) {
	c, done := p.pick()
	defer done()
	return c.Embed(ctx, inputs)
}

// BaseURL returns the replicas' base URLs joined by commas.
func (p *Pool) BaseURL() string {
	urls := make([]string, len(p.clients))
	for i, c := range p.clients {
		urls[i] = c.BaseURL()
	}
	return strings.Join(urls, ",")
}

// Model returns the replicas' model.
func (p *Pool) Model() string { return p.clients[0].Model() }

// Role returns the replicas' role.
func (p *Pool) Role() string { return p.clients[0].Role() }

// ChatExtra returns the replicas' extra chat members.
func (p *Pool) ChatExtra() json.RawMessage { return p.clients[0].ChatExtra() }
