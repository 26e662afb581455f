//go:build !linux

package main

import "syscall"

// serverProcAttr returns nil elsewhere than on Linux, which alone offers a
// signal on the parent's death: there a harness killed outright leaves its
// servers running, and stopping them is up to whoever killed it.
func serverProcAttr() *syscall.SysProcAttr {
	return nil
}
