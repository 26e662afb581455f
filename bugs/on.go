//go:build cairn_bugs

package bugs

import "fmt"

// Planted reports whether this binary was built with planted bugs.
const Planted = true

// active is the bug switched on for this process, or "". It is set once,
// before any run, and only read afterwards.
var active string

// Active reports whether the named bug is switched on.
func Active(name string) bool { return active == name }

// Enable switches on one planted bug (or none, with "").
func Enable(name string) error {
	if name != "" && !Known(name) {
		return fmt.Errorf("unknown planted bug %q (known: %v)", name, All)
	}
	active = name
	return nil
}
