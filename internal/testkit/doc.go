// Package testkit holds what the tests of several packages share: golden
// files refreshed with -update, and the helpers that start loopback servers
// for the real wire formats.
//
// It is imported by tests and by the fake servers only; nothing in the
// release binary depends on it.
package testkit
