package bugs

import "errors"

var errNotPlanted = errors.New("this binary has no planted bugs; build it with -tags cairn_bugs")
