package llmtest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Loopback is an HTTP server on a loopback port for the fake servers that
// tests talk to (llmtest, elastictest): it can keep a request waiting, as
// a slow or hanging server does, and Close ends every such wait, so that
// closing never blocks on a handler that waits for the client.
type Loopback struct {
	ts   *httptest.Server
	done chan struct{}
	once sync.Once
}

// NewLoopback returns a Loopback that does not serve yet: a server keeps
// it before Start, so that its handlers can use it.
func NewLoopback() *Loopback {
	return &Loopback{done: make(chan struct{})}
}

// Start serves h on a loopback port.
func (l *Loopback) Start(h http.Handler) {
	l.ts = httptest.NewServer(h)
}

// URL is the server's base URL (http://127.0.0.1:PORT).
func (l *Loopback) URL() string { return l.ts.URL }

// Client returns an HTTP client for the server.
func (l *Loopback) Client() *http.Client { return l.ts.Client() }

// Close ends the waits of Hang and Wait, stops the server and waits for
// its handlers to return. It may be called more than once.
func (l *Loopback) Close() {
	l.once.Do(func() { close(l.done) })
	l.ts.CloseClientConnections()
	l.ts.Close()
}

// Wait sleeps d unless the request or the server ends first, reporting
// whether it slept the whole time.
func (l *Loopback) Wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-l.done:
		return false
	}
}

// Hang keeps r unanswered until the client gives up or the server is
// closed, then cuts the connection rather than send an empty answer. It
// does not return: call it from the handler's goroutine, having read the
// request's body (only then does the server notice a client that goes
// away).
func (l *Loopback) Hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-l.done:
	}
	panic(http.ErrAbortHandler)
}
