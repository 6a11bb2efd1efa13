// Package opensearchtest starts a real OpenSearch node for tests: the
// single-node OpenSearch 2.19 of scripts/opensearch, built from its Maven
// artifacts and run on a free loopback port with its data in a temporary
// directory. Tests that use it are behind the e2e build tag (make
// e2e-opensearch); they skip, saying why, where Java or Maven is absent.
//
// The node is stopped when the test that started it ends, and by the
// script's watchdog if the test process is killed first.
package opensearchtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure Start.
type Options struct {
	// BasicAuth, as "user:password", makes the node refuse requests
	// without these credentials.
	BasicAuth string
	// Heap is the JVM's heap (default 1g).
	Heap string
}

// Node is a running node.
type Node struct {
	// URL is the node's base URL, http://127.0.0.1:PORT.
	URL string
	// Dir holds the node's data, its log (node.log) and env.
	Dir string
	// Username and Password are those of Options.BasicAuth.
	Username, Password string

	opts Options
	port int
}

// Script returns the path of scripts/opensearch in the checkout this
// package's source lives in.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "opensearch")
}

// Available reports why a node cannot be started here ("" when it can).
func Available() string {
	for _, tool := range []string{"java", "mvn", "curl", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found: a real OpenSearch node needs Java 17, Maven, curl and setsid (util-linux)"
		}
	}
	return ""
}

// Start starts a node and stops it when t ends; it skips t where Java or
// Maven is absent and fails t when the node does not start.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	if why := Available(); why != "" {
		t.Skip(why)
	}
	n, err := Launch(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop the node: %v", err)
		}
	})
	return n
}

// Launch starts a node with its data in dir; the caller stops it.
func Launch(dir string, opts Options) (*Node, error) {
	if why := Available(); why != "" {
		return nil, errors.New(why)
	}
	n := &Node{Dir: dir, opts: opts}
	if err := n.Restart(); err != nil {
		return nil, err
	}
	return n, nil
}

// The node a test binary shares between its tests (see Shared).
var shared struct {
	sync.Mutex
	node    *Node
	err     error
	skip    string
	started bool
	dir     string
}

// Shared returns a node for t that the tests of the binary share, started
// at the first call; Main stops it. It skips t where Java or Maven is
// absent and fails it when the node did not start. Tests that change the
// node (stop it, check credentials) start one of their own with Start.
func Shared(t testing.TB) *Node {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.started {
		shared.started = true
		if shared.skip = Available(); shared.skip == "" {
			shared.dir, shared.err = os.MkdirTemp("", "distill-opensearch-")
			if shared.err == nil {
				shared.node, shared.err = Launch(shared.dir, Options{})
			}
		}
	}
	switch {
	case shared.skip != "":
		t.Skip(shared.skip)
	case shared.err != nil:
		t.Fatalf("start the shared node: %v", shared.err)
	}
	return shared.node
}

// Main runs the tests of m, then stops the node Shared started; a
// TestMain calls os.Exit(opensearchtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.node != nil {
		if err := shared.node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

// Stop stops the node (the cluster goes away); Restart starts it again.
func (n *Node) Stop() error {
	out, err := exec.Command(Script(), "stop", n.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/opensearch stop: %v: %s", err, out)
	}
	return nil
}

// Restart starts the node again on the same port, with the data it had;
// the first start takes a free port.
func (n *Node) Restart() error {
	args := []string{"start", n.Dir, "--owner", strconv.Itoa(os.Getpid())}
	if n.opts.Heap != "" {
		args = append(args, "--heap", n.opts.Heap)
	}
	if n.opts.BasicAuth != "" {
		args = append(args, "--basic-auth", n.opts.BasicAuth)
	}
	if n.port != 0 {
		args = append(args, "--port", strconv.Itoa(n.port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Script(), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("scripts/opensearch start: %v\n%s", err, out.String())
	}
	env, err := readEnv(filepath.Join(n.Dir, "env"))
	if err != nil {
		return err
	}
	n.URL = env["DISTILL_ES_URL"]
	n.Username, n.Password, _ = strings.Cut(n.opts.BasicAuth, ":")
	u, err := url.Parse(n.URL)
	if err != nil || u.Port() == "" {
		return fmt.Errorf("node env: bad DISTILL_ES_URL %q", n.URL)
	}
	n.port, _ = strconv.Atoi(u.Port())
	return nil
}

// Address returns the es:// address of index name on the node.
func (n *Node) Address(name string) string {
	return "es://" + strings.TrimPrefix(n.URL, "http://") + "/" + name
}

// readEnv reads the export lines scripts/opensearch writes.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("node env: %w", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("node env %s: bad line %q", path, sc.Text())
		}
		env[k] = v
	}
	return env, sc.Err()
}
