package main

import "syscall"

// diesWithTest makes a child process receive SIGKILL when the test
// binary that started it dies, whatever kills it.
func diesWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
