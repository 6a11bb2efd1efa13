// Package testkit holds what the tests of several packages share: golden
// files refreshed with -update, the helpers that start loopback servers
// for the real wire formats, and the fixed inputs (questions, evidence
// blocks) of the roles' tests.
//
// It is imported by tests and by the fake servers only; nothing in the
// release binary depends on it.
package testkit
