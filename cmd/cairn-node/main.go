// Command cairn-node runs a cairn node.
//
//	cairn-node --config node.toml            serve one node
//	cairn-node dev --nodes 3 [--dir D]       a local cluster in one process
//	cairn-node certs --dir D --nodes 3       a development CA and certificates
//
// SIGTERM (or Ctrl-C) drains the node and exits 0.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
