package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Code coverage of a sweep. With --cover DIR the sweep builds a copy of
// this command with Go's binary coverage instrumentation of the packages
// the protocol lives in, runs its workers from that copy with GOCOVERDIR
// pointing into DIR, and afterwards reports, per package, the share of
// statements the seeds executed and every function none of them entered.
// It needs the Go toolchain and the module's source, as `make sim` does.

// coveredPackages are the packages a sweep's coverage report is about:
// the node's state machines (not node/live, which the simulator never
// runs) and its storage.
var coveredPackages = []string{"github.com/cairnmq/cairn/node", "github.com/cairnmq/cairn/node/recovery",
	"github.com/cairnmq/cairn/storage"}

// mainPackage is instrumented too, though not reported: a binary whose
// main package is left out of -coverpkg writes no counters at exit.
const mainPackage = "github.com/cairnmq/cairn/cmd/cairn-sim"

// coverSetup builds the instrumented binary into dir and returns its path
// and the environment its workers need.
func coverSetup(dir string) (exe string, env []string, err error) {
	counters := filepath.Join(dir, "counters")
	if err := os.RemoveAll(counters); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(counters, 0o755); err != nil {
		return "", nil, err
	}
	exe, err = filepath.Abs(filepath.Join(dir, "cairn-sim.cover"))
	if err != nil {
		return "", nil, err
	}
	build := exec.Command("go", "build", "-cover", "-coverpkg="+strings.Join(append(coveredPackages, mainPackage), ","), "-o", exe,
		mainPackage)
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the instrumented simulator (run the sweep from the module's directory): %v\n%s", err, out)
	}
	abs, err := filepath.Abs(counters)
	if err != nil {
		return "", nil, err
	}
	return exe, append(os.Environ(), "GOCOVERDIR="+abs), nil
}

// uncoveredFunc is a function no seed entered.
type uncoveredFunc struct {
	pos, name string
}

// coverReport reads the counters the workers left in dir, writes a text
// profile next to them (for `go tool cover -html`), and prints the
// coverage per package and every function of the covered packages that
// no seed executed.
func coverReport(dir string, out io.Writer) error {
	counters := filepath.Join(dir, "counters")
	pkgs := "-pkg=" + strings.Join(coveredPackages, ",")
	percent, err := exec.Command("go", "tool", "covdata", "percent", "-i", counters, pkgs).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool covdata percent: %v\n%s", err, percent)
	}
	profile := filepath.Join(dir, "cover.out")
	if msg, err := exec.Command("go", "tool", "covdata", "textfmt", "-i", counters, pkgs, "-o", profile).CombinedOutput(); err != nil {
		return fmt.Errorf("go tool covdata textfmt: %v\n%s", err, msg)
	}
	funcs, err := exec.Command("go", "tool", "covdata", "func", "-i", counters, pkgs).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool covdata func: %v\n%s", err, funcs)
	}
	never := uncovered(funcs)
	fmt.Fprintf(out, "code coverage (statements executed by at least one seed; profile in %s):\n", profile)
	for _, line := range strings.Split(strings.TrimSpace(string(percent)), "\n") {
		fmt.Fprintf(out, "  %s\n", strings.TrimSpace(line))
	}
	fmt.Fprintf(out, "functions no seed entered (%d):\n", len(never))
	for _, f := range never {
		fmt.Fprintf(out, "  %-48s %s\n", f.name, f.pos)
	}
	return nil
}

// uncovered parses `go tool covdata func` output ("file:line:  name  P%")
// and returns the functions at 0.0%, in its order (by file and line).
func uncovered(funcs []byte) []uncoveredFunc {
	var never []uncoveredFunc
	sc := bufio.NewScanner(bytes.NewReader(funcs))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[2] != "0.0%" {
			continue
		}
		pos := strings.TrimPrefix(fields[0], "github.com/cairnmq/cairn/")
		never = append(never, uncoveredFunc{pos: strings.TrimSuffix(pos, ":"), name: fields[1]})
	}
	return never
}
