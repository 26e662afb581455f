//go:build !linux

package main

import "syscall"

// diesWithTest has no portable form outside Linux; the tests that need it
// (the network namespace suite) run on Linux alone.
func diesWithTest() *syscall.SysProcAttr { return nil }
