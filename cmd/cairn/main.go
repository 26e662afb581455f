// Command cairn is the command line for a cairn cluster: queues,
// publishing, consuming and the cluster's status. Run `cairn help`.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})) }
