package main

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// newLogger builds the one logger of a run, writing to w (stderr) in format
// "text" or "json" from level "debug", "info", "warn" or "error" up. quiet
// raises the level to warn. Bad values are usage errors.
func newLogger(w io.Writer, format, level string, quiet bool) (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lvl = slog.LevelDebug
	case "info":
		lvl = slog.LevelInfo
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, usageErrorf("bad --log-level %q: want debug, info, warn or error", level)
	}
	if quiet {
		lvl = max(lvl, slog.LevelWarn)
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: roundFloat}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, usageErrorf("bad --log-format %q: want text or json", format)
	}
}

// roundFloat logs a float with 4 significant digits (1062.2335440266486
// as 1062): what a log line's reader can use.
func roundFloat(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindFloat64 {
		f := a.Value.Float64()
		if r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 4, 64), 64); err == nil {
			a.Value = slog.Float64Value(r)
		}
	}
	return a
}

// secret is a string that must not be shown: an API key, a token. Logged,
// printed (%v, %s, %q, %#v) or marshalled to JSON it reads "[redacted]";
// string(s) is the value itself, for the one place that sends it.
type secret string

const redacted = "[redacted]"

// LogValue makes slog log "[redacted]" instead of the value.
func (secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// String makes fmt's %v, %s and %q print "[redacted]" too.
func (secret) String() string { return redacted }

// GoString does the same for %#v.
func (secret) GoString() string { return redacted }

// MarshalText keeps the value out of JSON and YAML written from a struct
// that holds it, such as a run's recorded options.
func (secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
