package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// replayPage runs replay with --html (and --trace) and returns the page,
// its decoded data, the trace text and what the command printed.
func replayPage(t *testing.T, args ...string) (string, page, string, string) {
	t.Helper()
	dir := t.TempDir()
	htmlPath, tracePath := filepath.Join(dir, "run.html"), filepath.Join(dir, "trace.txt")
	var out, errOut bytes.Buffer
	args = append([]string{"replay"}, append(args, "--html", htmlPath, "--trace", tracePath)...)
	code := runMain(args, &out, &errOut)
	if code != exitOK && code != exitSafety && code != exitLiveness {
		t.Fatalf("%v exited %d:\n%s%s", args, code, out.String(), errOut.String())
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatalf("no page written: %v", err)
	}
	trace, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(html), pageData(t, string(html)), string(trace), out.String()
}

// pageData decodes the JSON the page carries for its script.
func pageData(t *testing.T, html string) page {
	t.Helper()
	const open = `<script id="data" type="application/json">`
	_, rest, ok := strings.Cut(html, open)
	data, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 {
		t.Fatal("the page carries no data block")
	}
	var p page
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		t.Fatalf("the page's data is not JSON: %v", err)
	}
	return p
}

// checkSelfContained fails when the page would fetch anything.
func checkSelfContained(t *testing.T, html string) {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "<script src", "<link", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("the page is not self-contained: it holds %q", bad)
		}
	}
}

// processes lists the processes that wrote the trace, "sim" included.
func processes(trace string) map[string]bool {
	who := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(trace), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			who[f[1]] = true
		}
	}
	return who
}

func checkLanes(t *testing.T, p page, trace string) {
	t.Helper()
	want := processes(trace)
	if len(p.Lanes) != len(want) {
		t.Errorf("lanes %v, want one for each of %v", p.Lanes, want)
	}
	for _, l := range p.Lanes {
		if !want[l] {
			t.Errorf("lane %s writes nothing to the trace", l)
		}
	}
	if p.Lanes[0] != "sim" || p.Lanes[1] != "n1" {
		t.Errorf("lanes in order %v, want sim, the nodes, then the clients", p.Lanes)
	}
}

func TestReplayHTMLForASeed(t *testing.T) {
	html, p, trace, out := replayPage(t, "--seed", "7")
	checkSelfContained(t, html)
	checkLanes(t, p, trace)
	if len(html) > 5<<20 {
		t.Errorf("the page for seed 7 is %d bytes, want under 5 MiB", len(html))
	}
	lines := strings.Count(trace, "\n")
	if p.Lines != lines || p.TraceLines != lines {
		t.Errorf("the page read %d lines and carries %d, the trace has %d", p.Lines, p.TraceLines, lines)
	}
	if len(p.Arrows.Send) == 0 || len(p.Marks) == 0 || len(p.Density) == 0 {
		t.Errorf("the page shows %d arrows, %d events, %d strips", len(p.Arrows.Send), len(p.Marks), len(p.Density))
	}
	if !strings.Contains(out, "seed=7 ") || strings.Count(out, "\n") > 200 {
		t.Errorf("replay printed more than its outcome:\n%.500s", out)
	}
}

func TestReplayHTMLForAScenarioShowsTheRecovery(t *testing.T) {
	html, p, trace, _ := replayPage(t, "--scenario", filepath.Join("..", "..", "seeds", "named", "owner-kill.seed1.scenario"))
	checkSelfContained(t, html)
	checkLanes(t, p, trace)
	kinds := map[string]int{}
	for _, b := range p.Bands {
		kinds[b.Kind]++
		if b.To < b.From {
			t.Errorf("band %+v ends before it starts", b)
		}
	}
	for _, k := range []string{"recovery", "stage", "owner", "down", "fault", "leader", "phase"} {
		if kinds[k] == 0 {
			t.Errorf("no %s band on the owner-kill page (bands: %v)", k, kinds)
		}
	}
	if !strings.Contains(p.Title, "owner-kill.seed1.scenario") {
		t.Errorf("title %q does not name the scenario", p.Title)
	}
}

func TestReplayHTMLAloneKeepsTheTraceOffStdout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.html")
	var out, errOut bytes.Buffer
	code := runMain([]string{"replay", "--seed", "3", "--html", path}, &out, &errOut)
	if code == exitUsage || code == exitCrash {
		t.Fatalf("exited %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), " emit ") {
		t.Errorf("--html without --trace printed the trace")
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}

// timelineOf builds a timeline from trace lines written by hand.
func timelineOf(lines ...string) *timeline {
	tl := newTimeline()
	for _, l := range lines {
		tl.add(l)
	}
	tl.finish(0)
	return tl
}

func TestTimelineMatchesMessages(t *testing.T) {
	tl := timelineOf(
		"    0.001000 c1   send to=n1 Publish{req=1 q=q0 id=p1.1} copies=2",
		"    0.002000 n1   client conn=1 from=c1 Publish{req=1 q=q0 id=p1.1}",
		"    0.002500 n1   client conn=1 from=c1 Publish{req=1 q=q0 id=p1.1}",
		"    0.003000 n1   reply conn=1 to=c1 Reply{req=1 ok} copies=1",
		"    0.003000 n1   send to=n2 Append{q=q0} copies=0",
		"    0.003000 n1   send to=n3 Ping{Seq:1}: peer down",
		"    0.004000 c1   recv from=n1 Reply{req=1 ok}",
		"    0.005000 c1   done publish p1.1 q=q0 ok status=ok",
	)
	if len(tl.arrows) != 5 {
		t.Fatalf("%d arrows, want 5: %+v", len(tl.arrows), tl.arrows)
	}
	got := []int64{}
	for _, a := range tl.arrows {
		got = append(got, a.Recv)
	}
	want := []int64{2000, 2500, 4000, -1, -1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("arrival times %v, want %v", got, want)
		}
	}
	if span := tl.ids["p1.1"]; span != [2]int64{1000, 5000} {
		t.Errorf("p1.1 mentioned over %v, want 1000..5000", span)
	}
	if tl.lanes[0] != "sim" || tl.lanes[1] != "n1" || tl.lanes[len(tl.lanes)-1] != "c1" {
		t.Errorf("lanes %v", tl.lanes)
	}
}

func TestTimelineBands(t *testing.T) {
	tl := timelineOf(
		"    0.100000 n2   emit meta.leader term=1 node=2",
		"    0.200000 n2   emit queue.active q=q0 epoch=1 inc=7 last=0",
		"    1.000000 sim  fault at=1s split group=[0 2] for=500ms",
		"    2.000000 sim  fault at=2s crash n2 for=1s",
		"    2.000000 n2   crash (fault) down=1s",
		"    2.500000 n3   emit recovery.start q=q0 epoch=2 attempt=1",
		"    2.600000 n3   emit recovery.stage q=q0 epoch=2 stage=seal outcome=ok us=100000",
		"    2.900000 n3   emit recovery.stage q=q0 epoch=2 stage=install outcome=ok us=300000",
		"    2.900000 n3   emit recovery.done q=q0 epoch=2 us=400000",
		"    2.900000 n3   emit queue.active q=q0 epoch=2 inc=7 last=9",
		"    3.000000 n2   start inc=2",
		"    4.000000 sim  liveness phase: heal, calm, restart all",
	)
	type span struct {
		lane     string
		from, to int64
	}
	got := map[string][]span{}
	for _, b := range tl.bands {
		lane := "*"
		if b.Lane >= 0 {
			lane = tl.lanes[b.Lane]
		}
		got[b.Kind] = append(got[b.Kind], span{lane, b.From, b.To})
	}
	want := map[string][]span{
		"leader":   {{"n2", 100000, 2000000}},
		"owner":    {{"n2", 200000, 2000000}, {"n3", 2900000, 4000000}},
		"fault":    {{"sim", 1000000, 1500000}, {"n1", 1000000, 1500000}, {"n3", 1000000, 1500000}, {"sim", 2000000, 3000000}, {"n2", 2000000, 3000000}},
		"down":     {{"n2", 2000000, 3000000}},
		"recovery": {{"n3", 2500000, 2900000}},
		"stage":    {{"n3", 2500000, 2600000}, {"n3", 2600000, 2900000}},
		"phase":    {{"*", 4000000, 4000000}},
	}
	for kind, w := range want {
		g := got[kind]
		if len(g) != len(w) {
			t.Errorf("%s bands %v, want %v", kind, g, w)
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s bands %v, want %v", kind, g, w)
				break
			}
		}
	}
}

func TestViolationLinksToWhatItNames(t *testing.T) {
	tl := timelineOf(
		"    1.000000 c1   send to=n1 Publish{req=1 q=q0 id=p1.7 delay=0s} copies=1",
		"    1.500000 c1   done publish p1.7 q=q0 ok status=ok",
		"    3.000000 sim  liveness phase: heal, calm, restart all",
	)
	v := tl.violation("liveness violation [total-queue]: message p1.7 was delivered but never settled, activated at 1.25s", false)
	want := []pageJump{{"first p1.7", 1000000}, {"last p1.7", 1500000}, {"at 1.25s", 1250000}, {"liveness phase", 3000000}}
	if len(v.Jumps) != len(want) {
		t.Fatalf("jumps %v, want %v", v.Jumps, want)
	}
	for i := range want {
		if v.Jumps[i] != want[i] {
			t.Fatalf("jumps %v, want %v", v.Jumps, want)
		}
	}
}
