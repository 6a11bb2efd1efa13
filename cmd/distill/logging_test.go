package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		format, level string
		quiet         bool
		want          slog.Level // lowest level enabled
		json          bool
	}{
		{"text", "info", false, slog.LevelInfo, false},
		{"json", "debug", false, slog.LevelDebug, true},
		{"TEXT", "WARN", false, slog.LevelWarn, false},
		{"text", "error", false, slog.LevelError, false},
		{"text", "debug", true, slog.LevelWarn, false},
		{"json", "error", true, slog.LevelError, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/quiet=%v", tt.format, tt.level, tt.quiet), func(t *testing.T) {
			var buf bytes.Buffer
			l, err := newLogger(&buf, tt.format, tt.level, tt.quiet)
			if err != nil {
				t.Fatal(err)
			}
			for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
				if got, want := l.Enabled(context.Background(), lvl), lvl >= tt.want; got != want {
					t.Errorf("Enabled(%v) = %v, want %v", lvl, got, want)
				}
			}
			l.Error("boom", "n", 1)
			if got := json.Valid(buf.Bytes()); got != tt.json {
				t.Errorf("output %q: JSON %v, want %v", buf.String(), got, tt.json)
			}
		})
	}
}

func TestNewLoggerBadValues(t *testing.T) {
	for _, tt := range []struct{ format, level string }{{"xml", "info"}, {"text", "verbose"}, {"text", "info+4"}} {
		_, err := newLogger(&bytes.Buffer{}, tt.format, tt.level, false)
		if got := exitCode(context.Background(), err); got != exitUsage {
			t.Errorf("newLogger(%q, %q): %v, exit code %d; want a usage error", tt.format, tt.level, err, got)
		}
	}
}

func TestSecretIsRedacted(t *testing.T) {
	const key = "sk-live-0123456789"
	s := secret(key)
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		slog.New(h).Info("calling the API", "api_key", s, slog.Group("client", "key", s))
	}
	buf.WriteString(fmt.Sprintf("%v %s %q %#v %+v\n", s, s, s, s, struct{ Key secret }{s}))
	b, err := json.Marshal(struct{ Key secret }{s})
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(b)

	out := buf.String()
	if strings.Contains(out, key) {
		t.Errorf("the key leaked:\n%s", out)
	}
	if got, want := strings.Count(out, redacted), 10; got != want {
		t.Errorf("%q appears %d times, want %d:\n%s", redacted, got, want, out)
	}
	if string(s) != key {
		t.Errorf("string(s) = %q, want the value", string(s))
	}
}

// TestLogRoundsFloats: floats are logged with 4 significant digits.
func TestLogRoundsFloats(t *testing.T) {
	var b strings.Builder
	log, err := newLogger(&b, "text", "info", false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("done", "questions_per_second", 1062.2335440266486, "seconds", 0.012345678, "n", 3)
	if got := b.String(); !strings.Contains(got, "questions_per_second=1062 ") || !strings.Contains(got, "seconds=0.01235 ") || !strings.Contains(got, "n=3") {
		t.Errorf("log %q", got)
	}
}
