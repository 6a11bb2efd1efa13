package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// Set at build time by the Makefile:
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=<sha> -X main.buildTime=2026-01-02T15:04:05Z"
//
// commit is the fallback for builds without VCS stamping (-buildvcs=false).
var (
	version   = "dev"
	commit    = ""
	buildTime = ""
)

// versionInfo describes the running binary.
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	Modified   bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	CommitTime string `json:"commit_time,omitempty"`
	BuildTime  string `json:"build_time,omitempty"`
	GoVersion  string `json:"go_version"`
	Platform   string `json:"platform"`
}

// readVersionInfo combines the link-time variables with what the Go
// toolchain recorded in the binary (the vcs.* settings are there when it was
// built inside a git checkout with -buildvcs not false).
func readVersionInfo() versionInfo {
	v := versionInfo{
		Version:   version,
		Commit:    commit,
		BuildTime: buildTime,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version // go install github.com/distill-rag/distill/cmd/distill@v0.1.0
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit, build time and Go version",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		},
		Action: func(c *cli.Context) error {
			return printVersion(c.App.Writer, readVersionInfo(), c.Bool("json"))
		},
	}
}

func printVersion(w io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(v)
	}
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown"
	case v.Modified:
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "distill %s\ncommit:      %s\ncommit time: %s\nbuild time:  %s\ngo:          %s %s\n",
		v.Version, commit, orUnknown(v.CommitTime), orUnknown(v.BuildTime), v.GoVersion, v.Platform)
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
