package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/builtin"
)

// backendFlags are the flags that configure the fine-tuning backends; the
// status and cancel subcommands take them too, as they drive the backend.
func backendFlags() []cli.Flag {
	return []cli.Flag{}
}

// newBackend wires the backend that name names: the one place where
// fine-tuning backends are built.
func newBackend(c *cli.Context, name string) (finetune.Backend, error) {
	switch name {
	case builtin.Name:
		return builtin.Backend{}, nil
	}
	return nil, usageErrorf("train: backend %q is not available (want %s)", name, strings.Join(backendKinds, ", "))
}
