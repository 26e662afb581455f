package mutate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Verdict is what became of one mutant.
type Verdict string

// The verdicts. A mutant that does not build says nothing and is not
// counted; every other one is killed or survives.
const (
	NoBuild Verdict = "does-not-build"
	// Killed: the sweep reported a violation, a liveness failure or a
	// crash of the simulator, or ran past its time limit.
	Killed Verdict = "killed"
	// KilledByTests: the sweep missed it and the tests caught it.
	KilledByTests Verdict = "killed-by-tests"
	// Changed: the sweep passed, but its summary differs from the
	// unmutated code's, so the mutant ran and changed what happened.
	Changed Verdict = "survived-changed"
	// Unchanged: the sweep passed with the unmutated code's summary, to
	// the event: the mutant never ran, or it is equivalent.
	Unchanged Verdict = "survived-unchanged"
)

// Config says what to mutate and how to judge it.
type Config struct {
	Root   string   // the module's root directory
	Files  []string // Go files under Root to mutate, slash-separated
	Sample int      // how many mutants to try; 0 for all
	Seed   uint64   // draws the sample
	Seeds  string   // the sweep's seed range, e.g. "1-500"
	Tests  []string // packages whose tests judge mutants the sweep missed; none to skip
	// Timeout bounds a mutant's sweep: one that runs longer is killed (a
	// mutant can make a node loop forever). Zero means four times what
	// the unmutated sweep took, and at least two minutes.
	Timeout  time.Duration
	Progress func(done, total int, r Result) // called after each mutant; may be nil
}

// Result is one mutant's verdict, with the sweep's last line.
type Result struct {
	Site    Site
	Verdict Verdict
	Detail  string
}

// Sites lists every mutant of the configured files.
func Sites(cfg Config) ([]Site, error) {
	var all []Site
	for _, name := range cfg.Files {
		src, err := os.ReadFile(filepath.Join(cfg.Root, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		sites, err := Find(name, src)
		if err != nil {
			return nil, err
		}
		all = append(all, sites...)
	}
	return all, nil
}

// Choose draws n of sites with a seeded shuffle, kept in file order; all
// of them when n is zero or at least their number.
func Choose(sites []Site, n int, seed uint64) []Site {
	if n <= 0 || n >= len(sites) {
		return sites
	}
	idx := rand.New(rand.NewPCG(seed, 0x6d75746174650a)).Perm(len(sites))[:n]
	slices.Sort(idx)
	out := make([]Site, 0, n)
	for _, i := range idx {
		out = append(out, sites[i])
	}
	return out
}

// Run judges each of sites: it builds the simulator with the mutant
// overlaid (go build -overlay, so the tree is never touched), runs the
// sweep, and on a pass runs the configured tests.
func Run(cfg Config, sites []Site) ([]Result, error) {
	work, err := os.MkdirTemp("", "cairn-mutate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	base, took, err := baseline(cfg, work)
	if err != nil {
		return nil, fmt.Errorf("the unmutated code: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = max(4*took, 2*time.Minute)
	}
	out := make([]Result, 0, len(sites))
	for i, s := range sites {
		r := judge(cfg, work, s, base)
		out = append(out, r)
		if cfg.Progress != nil {
			cfg.Progress(i+1, len(sites), r)
		}
	}
	return out, nil
}

// baseline builds and sweeps the unmutated code and returns the sweep's
// summary line, with the wall time taken out, and how long it took.
func baseline(cfg Config, work string) (string, time.Duration, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Hour // the unmutated sweep sets the bound
	}
	bin := filepath.Join(work, "cairn-sim")
	if msg, err := build(cfg, "", bin); err != nil {
		return "", 0, fmt.Errorf("build: %v\n%s", err, msg)
	}
	start := time.Now()
	summary, failed, err := sweep(cfg, bin)
	took := time.Since(start)
	if err != nil {
		return "", 0, err
	}
	if failed {
		return "", 0, fmt.Errorf("the sweep fails without any mutant: %s", summary)
	}
	if len(cfg.Tests) > 0 {
		if msg, err := goTest(cfg, ""); err != nil {
			return "", 0, fmt.Errorf("the tests fail without any mutant: %s", msg)
		}
	}
	return summary, took, nil
}

func judge(cfg Config, work string, s Site, base string) Result {
	src, err := os.ReadFile(filepath.Join(cfg.Root, filepath.FromSlash(s.File)))
	if err != nil {
		return Result{s, NoBuild, err.Error()}
	}
	mutated := filepath.Join(work, "mutant.go")
	if err := os.WriteFile(mutated, s.Apply(src), 0o644); err != nil {
		return Result{s, NoBuild, err.Error()}
	}
	overlay := filepath.Join(work, "overlay.json")
	spec, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(cfg.Root, filepath.FromSlash(s.File)): mutated}})
	if err := os.WriteFile(overlay, spec, 0o644); err != nil {
		return Result{s, NoBuild, err.Error()}
	}
	bin := filepath.Join(work, "cairn-sim-mutant")
	if msg, err := build(cfg, overlay, bin); err != nil {
		return Result{s, NoBuild, firstLine(msg)}
	}
	summary, failed, err := sweep(cfg, bin)
	switch {
	case err != nil:
		return Result{s, Killed, err.Error()}
	case failed:
		return Result{s, Killed, summary}
	}
	if len(cfg.Tests) > 0 {
		if msg, err := goTest(cfg, overlay); err != nil {
			return Result{s, KilledByTests, msg}
		}
	}
	if summary == base {
		return Result{s, Unchanged, ""}
	}
	return Result{s, Changed, summary}
}

func build(cfg Config, overlay, bin string) (string, error) {
	args := []string{"build", "-o", bin}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, "./cmd/cairn-sim")...)
	cmd.Dir = cfg.Root
	msg, err := cmd.CombinedOutput()
	return string(msg), err
}

// wallTime matches the parts of a sweep's summary that vary from run to
// run of the same code.
var wallTime = regexp.MustCompile(` wall=\S+ \(\d+ simulated s per wall s\)`)

// sweep runs the simulator's sweep and returns its summary line and
// whether it failed. A sweep past the time limit is an error.
func sweep(cfg Config, bin string) (summary string, failed bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "sweep", "--seeds", cfg.Seeds)
	// The sweep runs its seeds in worker processes, and a mutant that
	// loops forever keeps them spinning: on timeout the whole process
	// group goes, or the orphans would slow every later mutant.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return "", true, fmt.Errorf("the sweep ran past %v", cfg.Timeout)
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, "seeds=") {
			summary = wallTime.ReplaceAllString(line, "")
		}
	}
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		if summary == "" {
			summary = "exit " + exit.String()
		}
		return summary, true, nil
	case runErr != nil:
		return "", true, runErr
	case summary == "":
		return "", true, errors.New("the sweep printed no summary")
	}
	return summary, false, nil
}

func goTest(cfg Config, overlay string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*cfg.Timeout)
	defer cancel()
	args := []string{"test", "-count=1"}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, cfg.Tests...)...)
	cmd.Dir = cfg.Root
	msg, err := cmd.CombinedOutput()
	if err != nil {
		for _, line := range strings.Split(string(msg), "\n") {
			if strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "FAIL") || strings.Contains(line, "panic:") {
				return strings.TrimSpace(line), err
			}
		}
		return firstLine(string(msg)), err
	}
	return "", nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
