// Package cairn is a replicated, durable message queue whose owner
// failover is tested by a deterministic simulator. This root package holds
// no code; it carries the repository-wide checks (see determinism_test.go)
// that keep the node logic a pure function of its scenario and seed. The
// system lives in the subpackages: node, storage, netsim, sim, props and
// the commands under cmd.
package cairn
