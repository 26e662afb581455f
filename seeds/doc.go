// Package seeds is cairn's regression corpus: scenario files (the text
// format of the sim package) that the simulator must keep passing.
//
// Every file starts with a comment line saying what the scenario caught
// or exercises. The corpus has three parts:
//
//   - named/: the owner failover acceptance scenarios, each on a few
//     seeds' workloads, generated from props.NamedScenarios (the test
//     fails if a file drifts from its definition; -update rewrites them);
//   - bugs/: for each planted bug, the first generated scenario that
//     caught it. They must pass in ordinary builds and fail with the bug
//     switched on (go test -tags cairn_bugs ./seeds);
//   - regressions/: scenarios that once failed against real code, kept
//     after the fix, each with a line on what it caught. Save a failing
//     run's scenario there (cairn-sim prints it, or cairn-sim scenario
//     --seed N writes it) once the cause is fixed. None so far: every
//     failure found since the simulator could write scenarios has been
//     a planted one.
//
// go test ./seeds replays them all; make test includes it.
package seeds
