package llm

import (
	"fmt"
	"slices"
	"sync"
)

// Dialer opens the model stacks of a run's roles: one stack (StackInner:
// limits, retries, cache) for each role, model and server, made on first
// use and shared after that, and a Meter over it for each Chatter handed
// out, counted in a group. A run with one group (rollout, label) reads its
// usage with Usage(""); a benchmark gives each variant its own group, so
// that the variants share the caches and limits and report their usage
// apart. Safe for concurrent use.
type Dialer struct {
	// Client makes the endpoint of one role's model at baseURL.
	Client func(role, model, baseURL string) (Endpoint, error)
	// Stack configures every stack; its Prices price the Meters.
	Stack StackOptions

	mu     sync.Mutex
	inner  map[dialKey]Chatter
	meters map[string][]*Meter
}

type dialKey struct{ role, model, baseURL string }

// Dial returns a Chatter for role's model at baseURL whose use counts in
// group.
func (d *Dialer) Dial(group, role, model, baseURL string) (Chatter, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := dialKey{role, model, baseURL}
	inner, ok := d.inner[key]
	if !ok {
		client, err := d.Client(role, model, baseURL)
		if err != nil {
			return nil, err
		}
		if inner, err = StackInner(client, d.Stack); err != nil {
			return nil, fmt.Errorf("%s model: %w", role, err)
		}
		if d.inner == nil {
			d.inner, d.meters = map[dialKey]Chatter{}, map[string][]*Meter{}
		}
		d.inner[key] = inner
	}
	meter := Account(inner, AccountOptions{Role: role, Model: model, Prices: d.Stack.Prices})
	d.meters[group] = append(d.meters[group], meter)
	return meter, nil
}

// Dialed reports whether any Chatter was handed out.
func (d *Dialer) Dialed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.meters) > 0
}

// Usage returns the usage so far of the Chatters of group, one Stats for
// each role and model.
func (d *Dialer) Usage(group string) []Stats {
	d.mu.Lock()
	meters := slices.Clone(d.meters[group])
	d.mu.Unlock()
	var out []Stats
	for _, m := range meters {
		out = AddStats(out, []Stats{m.Snapshot()})
	}
	return out
}
