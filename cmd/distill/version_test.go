package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	r := runDistill(t, "version")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("distill version: exit %d, stderr %q", r.code, r.stderr)
	}
	v := readVersionInfo()
	for _, want := range []string{"distill " + v.Version + "\n", "commit:", "build time:", runtime.Version()} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("distill version printed %q, want it to contain %q", r.stdout, want)
		}
	}

	r = runDistill(t, "version", "--json")
	if r.code != 0 {
		t.Fatalf("distill version --json: exit %d, stderr %q", r.code, r.stderr)
	}
	var got versionInfo
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("distill version --json printed %q: %v", r.stdout, err)
	}
	if got != v || got.GoVersion != runtime.Version() || got.Version == "" {
		t.Errorf("distill version --json = %+v, want %+v", got, v)
	}

	r = runDistill(t, "--version")
	if r.code != 0 || r.stdout != "distill version "+v.Version+"\n" {
		t.Errorf("distill --version: exit %d, stdout %q", r.code, r.stdout)
	}
}
