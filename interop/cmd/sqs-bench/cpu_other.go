//go:build !unix

package main

import "time"

// cpuTime is not measured here: CPU per message prints as 0.
func cpuTime() time.Duration { return 0 }
