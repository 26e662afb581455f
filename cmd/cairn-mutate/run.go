package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/mutate"
)

// defaultDirs hold the code whose mutants matter most: what a node does
// and what it keeps on disk.
var defaultDirs = []string{"node", "node/recovery", "storage"}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cairn-mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sample := fs.Int("sample", 40, "how many mutants to try, drawn with --seed; 0 for every one")
	seed := fs.Uint64("seed", 1, "draws the sample")
	seeds := fs.String("seeds", "1-500", "the sweep that judges each mutant")
	tests := fs.String("tests", "", "comma-separated packages whose tests judge the mutants the sweep missed")
	list := fs.Bool("list", false, "list the sample's mutants and stop")
	timeout := fs.Duration("timeout", 0, "a sweep running longer kills its mutant; 0 for four times the unmutated sweep's time (at least 2m)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = goFiles(defaultDirs); err != nil {
			fmt.Fprintln(stderr, "cairn-mutate:", err)
			return 1
		}
	}
	cfg := mutate.Config{Root: ".", Files: files, Sample: *sample, Seed: *seed, Seeds: *seeds, Timeout: *timeout}
	if *tests != "" {
		cfg.Tests = strings.Split(*tests, ",")
	}
	all, err := mutate.Sites(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "cairn-mutate:", err)
		return 1
	}
	chosen := mutate.Choose(all, cfg.Sample, cfg.Seed)
	fmt.Fprintf(stdout, "%d mutants in %d files; trying %d (seed %d), each against sweep --seeds %s\n", len(all), len(files), len(chosen), cfg.Seed, cfg.Seeds)
	if *list {
		for _, s := range chosen {
			fmt.Fprintln(stdout, s)
		}
		return 0
	}
	start := time.Now()
	cfg.Progress = func(done, total int, r mutate.Result) {
		fmt.Fprintf(stdout, "[%d/%d %s] %-18s %s\n", done, total, time.Since(start).Round(time.Second), r.Verdict, r.Site)
	}
	results, err := mutate.Run(cfg, chosen)
	if err != nil {
		fmt.Fprintln(stderr, "cairn-mutate:", err)
		return 1
	}
	report(stdout, results)
	return 0
}

// goFiles lists the non-test Go files of dirs, slash-separated.
func goFiles(dirs []string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !strings.HasSuffix(n, "_test.go") {
				out = append(out, filepath.ToSlash(n))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// report prints the score and every survivor.
func report(w io.Writer, results []mutate.Result) {
	count := map[mutate.Verdict]int{}
	for _, r := range results {
		count[r.Verdict]++
	}
	built := len(results) - count[mutate.NoBuild]
	fmt.Fprintf(w, "\n%d mutants built (%d did not build)\n", built, count[mutate.NoBuild])
	if built == 0 {
		return
	}
	pct := func(n int) string { return fmt.Sprintf("%d (%.0f%%)", n, 100*float64(n)/float64(built)) }
	fmt.Fprintf(w, "  killed by the sweep     %s\n", pct(count[mutate.Killed]))
	fmt.Fprintf(w, "  killed by the tests     %s\n", pct(count[mutate.KilledByTests]))
	fmt.Fprintf(w, "  survived, run changed   %s\n", pct(count[mutate.Changed]))
	fmt.Fprintf(w, "  survived, run the same  %s\n", pct(count[mutate.Unchanged]))
	fmt.Fprintln(w, "\nsurvivors:")
	for _, r := range results {
		if r.Verdict == mutate.Changed || r.Verdict == mutate.Unchanged {
			fmt.Fprintf(w, "  %-18s %s\n", r.Verdict, r.Site)
		}
	}
}
