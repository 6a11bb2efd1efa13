package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretNeverShows(t *testing.T) {
	const key = "sk-live-1234567890"
	cfg := Config{Model: "m", APIKey: key, Role: "judge"}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("start", "config", cfg, "key", cfg.APIKey)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("start", "config", cfg, "key", cfg.APIKey)
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v":    fmt.Sprintf("%v", cfg),
		"%+v":   fmt.Sprintf("%+v", cfg),
		"%#v":   fmt.Sprintf("%#v", cfg),
		"%s":    fmt.Sprintf("%s", cfg.APIKey),
		"%q":    fmt.Sprintf("%q", cfg.APIKey),
		"%x":    fmt.Sprintf("%x", cfg.APIKey),
		"slog":  logs.String(),
		"json":  string(js),
		"error": fmt.Errorf("with %v", cfg.APIKey).Error(),
	}
	for name, out := range outputs {
		if strings.Contains(out, key) || strings.Contains(out, fmt.Sprintf("%x", key)) {
			t.Errorf("%s shows the key: %s", name, out)
		}
	}
	if !strings.Contains(logs.String(), "[redacted]") {
		t.Errorf("logs: got %s, want [redacted]", logs.String())
	}
	if got := fmt.Sprint(Secret("")); got != "" {
		t.Errorf("empty secret: got %q, want empty", got)
	}
}

func TestKeyFromEnv(t *testing.T) {
	tests := []struct {
		name, role, roleKey, openai, want string
	}{
		{"role key wins", "judge", "sk-judge", "sk-openai", "sk-judge"},
		{"falls back", "judge", "", "sk-openai", "sk-openai"},
		{"none", "judge", "", "", ""},
		{"odd role name", "teacher-2", "sk-t2", "", "sk-t2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "DISTILL_" + strings.ToUpper(strings.ReplaceAll(tt.role, "-", "_")) + "_API_KEY"
			t.Setenv(name, tt.roleKey)
			t.Setenv("OPENAI_API_KEY", tt.openai)
			if got := string(KeyFromEnv(tt.role)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
