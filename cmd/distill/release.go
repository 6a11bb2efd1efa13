//go:build !fakes

package main

import "github.com/urfave/cli/v2"

// fakeCommands are none in a release build; see fakellm.go.
func fakeCommands() []*cli.Command { return nil }
