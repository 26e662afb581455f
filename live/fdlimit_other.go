//go:build !unix

package live

// openFileLimit reports 0: the platform has no descriptor limit to read,
// so only the configured connection cap applies.
func openFileLimit() int { return 0 }
