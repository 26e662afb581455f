// Package props judges simulation runs: history checkers for the queue's
// promises (nothing confirmed is lost, nothing settled comes back, replicas
// agree, order is kept) and the property tests that draw scenarios.
package props
