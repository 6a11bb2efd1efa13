// Package testkit holds what the tests of several packages share: golden
// files refreshed with -update, and the helpers that start loopback servers
// for the real wire formats.
//
// It is imported by tests only; nothing in the distill binary depends on it.
package testkit
