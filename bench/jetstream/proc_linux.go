package main

import "syscall"

// serverProcAttr asks Linux to kill each nats-server if the harness dies
// without stopping it: cairn-bench kills its peer with SIGKILL when it is
// interrupted, and servers left running would hold their ports and disk.
// The signal is tied to the thread that started the server, which the Go
// runtime does not end, since nothing here locks a goroutine to a thread.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
