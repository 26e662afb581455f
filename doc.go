// Package cairn is a replicated, durable message queue whose owner
// failover is tested by a deterministic simulator. This root package holds
// no code; it carries the repository-wide checks: determinism_test.go
// keeps the node logic a pure function of its scenario and seed, and
// eventnames_test.go keeps event names spelt only in package event. The
// system lives in the subpackages: node, event, storage, netsim, sim,
// props and the commands under cmd.
package cairn
