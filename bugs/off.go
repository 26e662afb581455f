//go:build !cairn_bugs

package bugs

// Planted reports whether this binary was built with planted bugs.
const Planted = false

// Active always reports false in an ordinary build.
func Active(name string) bool { return false }

// Enable refuses: an ordinary build carries no planted bugs.
func Enable(name string) error { return errNotPlanted }
