// Package testkit holds what the tests of several packages share: golden
// files refreshed with -update, HTTP requests, and the fixed inputs
// (questions, evidence blocks) of the roles' tests. The loopback server of
// the fake servers is llmtest.Loopback.
//
// It is imported by tests and test helpers only; nothing in the release
// binary depends on it.
package testkit
