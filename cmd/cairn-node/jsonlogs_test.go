package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
)

// jsonLine is one line of a node's JSON log: its keys in the order
// written (a key may repeat: an event's "node" follows the logger's
// own) and the value of each key's last occurrence.
type jsonLine struct {
	raw    string
	keys   []string
	values map[string]any
}

// str returns the line's value of key as a string, "" if it has none.
func (l jsonLine) str(key string) string {
	switch v := l.values[key].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// readJSONLog reads a node's log, failing the test on any line that is
// not one JSON object. A last line not yet ended is still being written
// and is left for the next read.
func readJSONLog(t *testing.T, path string) []jsonLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	end := strings.LastIndexByte(string(b), '\n')
	var out []jsonLine
	for _, raw := range strings.Split(string(b[:end+1]), "\n") {
		if raw == "" {
			continue
		}
		l, err := parseJSONLine(raw)
		if err != nil {
			t.Fatalf("%s: a line that is not a JSON object (%v): %q", path, err, raw)
		}
		out = append(out, l)
	}
	return out
}

// parseJSONLine decodes one object, token by token, to keep its keys in
// order, repeats included.
func parseJSONLine(raw string) (jsonLine, error) {
	l := jsonLine{raw: raw, values: map[string]any{}}
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return l, fmt.Errorf("no object: %v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return l, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return l, err
		}
		l.keys = append(l.keys, tok.(string))
		l.values[tok.(string)] = v
	}
	if _, err := dec.Token(); err != nil {
		return l, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return l, fmt.Errorf("more after the object")
	}
	return l, nil
}

// durationTolerance parses a duration as the recovery summary renders
// it ("1.234ms", "12.5s") and returns it with the rounding of that
// rendering: a microsecond below a second, a millisecond from there.
func durationTolerance(s string) (time.Duration, time.Duration, error) {
	if ms, ok := strings.CutSuffix(s, "ms"); ok {
		f, err := strconv.ParseFloat(ms, 64)
		return time.Duration(f * float64(time.Millisecond)), time.Microsecond, err
	}
	if sec, ok := strings.CutSuffix(s, "s"); ok {
		f, err := strconv.ParseFloat(sec, 64)
		return time.Duration(f * float64(time.Second)), time.Millisecond, err
	}
	return 0, 0, fmt.Errorf("duration %q: want ms or s", s)
}

// stageSum adds up a summary's stages ("seal=1.2ms fetch=0.3ms(retry)")
// and the rounding of their rendering. Each stage's duration was also
// cut to whole microseconds by its event, hence one more microsecond a
// stage.
func stageSum(stages string) (sum, tolerance time.Duration, n int, err error) {
	for _, s := range strings.Fields(stages) {
		if strings.HasPrefix(s, "+") || s == "more" {
			return 0, 0, 0, fmt.Errorf("stages %q: some were left out", stages)
		}
		_, d, ok := strings.Cut(s, "=")
		if !ok {
			return 0, 0, 0, fmt.Errorf("stage %q: want name=duration", s)
		}
		d, _, _ = strings.Cut(d, "(")
		took, tol, err := durationTolerance(d)
		if err != nil {
			return 0, 0, 0, err
		}
		sum, tolerance, n = sum+took, tolerance+tol+time.Microsecond, n+1
	}
	return sum, tolerance, n, nil
}

// checkSummary checks one recovery-summary line: at info, with the
// summary's keys, and, for a recovery that took one attempt, stage
// durations that add up to its total within the rounding of each.
// Across retries the total also counts the gaps between attempts, so the
// stages may only add up to less.
func checkSummary(t *testing.T, l jsonLine) {
	t.Helper()
	for _, k := range []string{"time", "level", "msg", "node", "q", "epoch", "took", "stages", "outcome", "retries"} {
		if _, ok := l.values[k]; !ok {
			t.Errorf("the summary lacks %q: %s", k, l.raw)
		}
	}
	if l.str("level") != "INFO" || l.str("outcome") != "ok" {
		t.Errorf("summary %s: want an ok recovery at INFO", l.raw)
	}
	sum, tol, n, err := stageSum(l.str("stages"))
	took, tookTol, err2 := durationTolerance(l.str("took"))
	if err != nil || err2 != nil || n == 0 {
		t.Fatalf("summary %s: %v %v (%d stages)", l.raw, err, err2, n)
	}
	tol += tookTol + time.Microsecond
	diff := took - sum
	switch {
	case l.str("retries") == "0" && (diff > tol || diff < -tol):
		t.Errorf("stages add up to %v, the total is %v: more apart than the rounding (%v): %s", sum, took, tol, l.raw)
	case diff < -tol:
		t.Errorf("stages add up to %v, more than the total %v: %s", sum, took, l.raw)
	default:
		t.Logf("recovery of %s into epoch %s: stages %s add up to %v, total %v", l.str("q"), l.str("epoch"), l.str("stages"), sum, took)
	}
}

// jsonLogChanges are the changes of who serves what that a node logs as
// one line each at the default level, and the keys each line carries
// besides time, level, msg and the logger's node.
var jsonLogChanges = map[event.Name][]string{
	event.MetaLeader:          {"term"},
	event.MetaActivated:       {"q", "inc"},
	event.MetaPlanRecovery:    {"q", "from", "to", "epoch"},
	event.CheckpointCertified: {"q", "inc", "index", "epoch", "members"},
	event.QueueRetired:        {"q", "inc"},
	event.DetectConfirm:       nil,
}

// A failover with log_format = "json" logs every line as one JSON
// object; the recovery is one info line whose stage durations add up to
// its total, and each change on the way (an election, the queue's
// creation, a certified checkpoint, the suspicion confirmed, the plan,
// the queue's deletion) is one info line whose keys are the same every
// time.
func TestProcessFailoverJSONLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	pc := startHealthy(t, 3, "info", "log_format = \"json\"\ncheckpoint_records = 50\n")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const queue = "logged"
	seedQueue(t, ctx, pc, queue, 300)
	waitLogged(t, pc.nodes, string(event.CheckpointCertified), queue)

	old := pc.owner(ctx, queue)
	oldView := viewOf(t, ctx, old, queue)
	if err := old.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-old.exited
	survivors := pc.others(old)
	pc.waitOwnerAbove(ctx, queue, oldView.Epoch, survivors, serviceBound)
	waitLogged(t, survivors, "recovery-summary", queue)

	admin, err := client.Dial(ctx, client.Options{Secret: []byte(processAdminSecret), Admin: true}, survivors[0].clientAddr, survivors[1].clientAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.DeleteQueue(ctx, queue); err != nil {
		t.Fatal(err)
	}
	waitLogged(t, survivors, string(event.QueueRetired), queue)

	var lines []jsonLine
	for _, nd := range pc.nodes {
		lines = append(lines, readJSONLog(t, nd.log)...)
	}
	summaries := map[string]int{} // by epoch
	keysOf := map[string][]string{}
	for _, l := range lines {
		msg := l.str("msg")
		if msg == "recovery-summary" && l.str("q") == queue {
			summaries[l.str("epoch")]++
			checkSummary(t, l)
		}
		want, tracked := jsonLogChanges[event.Name(msg)]
		if !tracked {
			continue
		}
		keys := slices.DeleteFunc(slices.Clone(l.keys), func(k string) bool { return k == "suppressed" })
		for _, k := range append([]string{"time", "level", "msg", "node"}, want...) {
			if !slices.Contains(keys, k) {
				t.Errorf("%s lacks %q: %s", msg, k, l.raw)
			}
		}
		if l.str("level") != "INFO" {
			t.Errorf("%s logged at %s, want INFO: %s", msg, l.str("level"), l.raw)
		}
		if prev, ok := keysOf[msg]; ok && !slices.Equal(prev, keys) {
			t.Errorf("%s lines carry different keys: %v and %v", msg, prev, keys)
		}
		keysOf[msg] = keys
	}
	if len(summaries) == 0 {
		t.Errorf("no recovery-summary line for %s", queue)
	}
	for epoch, n := range summaries {
		if n != 1 {
			t.Errorf("%d recovery-summary lines for %s into epoch %s, want one", n, queue, epoch)
		}
	}
	for name := range jsonLogChanges {
		if _, ok := keysOf[string(name)]; !ok {
			t.Errorf("no node logged %s", name)
		}
	}
}

// waitLogged waits until one of nodes logged a line with msg about
// queue q.
func waitLogged(t *testing.T, nodes []*procNode, msg, q string) {
	t.Helper()
	deadline := time.Now().Add(serviceBound)
	for time.Now().Before(deadline) {
		for _, nd := range nodes {
			for _, l := range readJSONLog(t, nd.log) {
				if l.str("msg") == msg && l.str("q") == q {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no node of %v logged %s for %s within %v", ids(nodes), msg, q, serviceBound)
}
