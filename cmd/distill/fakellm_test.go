//go:build fakes

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestFakeLLMCommand starts the hidden fake-llm command, reads its URL,
// sends it a chat request and stops it by cancelling the run.
func TestFakeLLMCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	app := newApp(pw, &stderr)
	done := make(chan int)
	go func() {
		done <- runWithSignals(ctx, app, []string{"distill", "--quiet", "fake-llm", "--seed", "3"})
		pw.Close()
	}()
	url, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL: %v (stderr %q)", err, stderr.String())
	}
	url = strings.TrimSpace(url)
	resp, err := http.Post(url+"/chat/completions", "application/json",
		strings.NewReader(`{"model": "m", "messages": [{"role": "user", "content": "hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"choices"`) {
		t.Errorf("chat answer: status %d, body %q", resp.StatusCode, body)
	}
	go io.Copy(io.Discard, pr)
	cancel()
	if code := <-done; code != exitInterrupted && code != 0 {
		t.Errorf("exit %d after cancel, stderr %q", code, stderr.String())
	}
	r := runDistill(t, "fake-llm", "--server-error", "0.8", "--malformed", "0.5")
	if r.code != exitUsage || !strings.Contains(r.stderr, "fault rates add up to 1.3") {
		t.Errorf("rates over 1: exit %d, stderr %q", r.code, r.stderr)
	}
}
