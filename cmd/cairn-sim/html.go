package main

import (
	_ "embed"

	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cairnmq/cairn/sim"
)

// The page is one HTML file with its style, script and data inline, so
// it opens offline and can be attached to a bug report as it is.
var (
	//go:embed timeline.html.tmpl
	timelinePage string
	//go:embed timeline.css
	timelineStyle string
	//go:embed timeline.js
	timelineScript string
)

// maxEmbeddedTrace bounds the compressed trace the page carries for its
// tooltips and trace view; lines past it are described by the timeline
// alone.
const maxEmbeddedTrace = 3 << 20

// timelineRecorder is the io.Writer a replay's trace is copied to when
// it should become a page. It builds the timeline line by line and keeps
// a compressed copy of the text.
type timelineRecorder struct {
	tl       *timeline
	partial  []byte
	z        bytes.Buffer
	gz       *gzip.Writer
	embedded int
	full     bool
}

// recordTimeline returns the writer a replay should trace to: trace
// itself when path is empty, or trace and a new recorder together.
func recordTimeline(path string, trace io.Writer) (*timelineRecorder, io.Writer) {
	if path == "" {
		return nil, trace
	}
	r := &timelineRecorder{tl: newTimeline()}
	r.gz, _ = gzip.NewWriterLevel(&r.z, gzip.DefaultCompression)
	return r, io.MultiWriter(trace, r)
}

// Write takes trace text, which arrives a line at a time but need not.
func (r *timelineRecorder) Write(p []byte) (int, error) {
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		line := r.partial[:i+1]
		r.tl.add(string(line[:i]))
		if !r.full {
			r.gz.Write(line)
			r.embedded++
			r.full = r.z.Len() > maxEmbeddedTrace
		}
		r.partial = r.partial[i+1:]
	}
	if len(r.partial) == 0 {
		r.partial = nil // let a long run's buffer go
	}
	return len(p), nil
}

// save writes the page for the finished run o to path; a nil recorder
// (no page was asked for) does nothing.
func (r *timelineRecorder) save(path string, o outcome, bug string) error {
	if r == nil {
		return nil
	}
	if err := r.gz.Close(); err != nil {
		return err
	}
	r.tl.finish(o.res.SimTime.Microseconds())
	data, err := json.Marshal(r.page(o, bug))
	if err != nil {
		return err
	}
	title := fmt.Sprintf("cairn-sim replay --seed %d", o.res.Seed)
	if o.file != "" {
		title = "cairn-sim replay --scenario " + o.file
	}
	out := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString(title),
		"{{STYLE}}", timelineStyle,
		"{{SCRIPT}}", timelineScript,
		"{{DATA}}", string(data),
	).Replace(timelinePage)
	return os.WriteFile(path, []byte(out), 0o644)
}

// page is the data the page's script draws, as JSON.
type page struct {
	Title      string          `json:"title"`
	Outcome    string          `json:"outcome"`
	Scenario   string          `json:"scenario"`
	Header     []string        `json:"header"`
	Violations []pageViolation `json:"violations"`
	End        int64           `json:"end"`
	Lanes      []string        `json:"lanes"`
	Queues     []string        `json:"queues"`
	Bands      []band          `json:"bands"`
	Marks      []mark          `json:"marks"`
	Arrows     pageArrows      `json:"arrows"`
	Classes    []string        `json:"classes"`
	Messages   []string        `json:"messages"`
	DensityBin int64           `json:"densityBin"`
	Density    []pageDensity   `json:"density"`
	Dropped    int             `json:"dropped"`
	Lines      int             `json:"lines"`
	TraceLines int             `json:"traceLines"`
	Trace      string          `json:"trace"`
}

// pageViolation is one failed check with the instants it points at.
type pageViolation struct {
	Text   string     `json:"text"`
	Safety bool       `json:"safety"`
	Jumps  []pageJump `json:"jumps"`
}

type pageJump struct {
	Label string `json:"label"`
	At    int64  `json:"t"`
}

// pageArrows holds the arrows column by column, times and line numbers
// as differences from the previous arrow's, which keeps the page small.
type pageArrows struct {
	Send     []int64 `json:"t"`
	Length   []int64 `json:"d"` // -1: never arrived
	From     []int   `json:"f"`
	To       []int   `json:"o"`
	Class    []int   `json:"c"`
	Msg      []int   `json:"m"`
	Line     []int   `json:"l"`
	RecvLine []int   `json:"r"` // lines after the send; -1: never arrived
}

type pageDensity struct {
	Lane   int     `json:"l"`
	Kind   string  `json:"k"`
	Counts []int32 `json:"c"`
}

func (r *timelineRecorder) page(o outcome, bug string) page {
	tl := r.tl
	var text bytes.Buffer
	printOutcome(&text, o, bug)
	sc, _ := o.scenario.MarshalText()
	p := page{
		Title: fmt.Sprintf("seed %d", o.res.Seed), Outcome: text.String(), Scenario: string(sc), Header: tl.header,
		End: tl.now, Lanes: tl.lanes, Queues: tl.queues, Bands: tl.bands, Marks: tl.marks,
		Classes: arrowClasses, Messages: tl.msgNames, DensityBin: densityBin,
		Dropped: max(tl.bulk-maxBulkArrows, 0) + max(tl.key-maxKeyArrows, 0),
		Lines:   tl.line, TraceLines: r.embedded, Trace: base64.StdEncoding.EncodeToString(r.z.Bytes()),
	}
	if o.file != "" {
		p.Title = fmt.Sprintf("scenario %s (seed %d)", o.file, o.res.Seed)
	}
	p.Arrows = encodeArrows(tl.arrows)
	for k, counts := range tl.density {
		p.Density = append(p.Density, pageDensity{Lane: k.lane, Kind: k.kind, Counts: counts})
	}
	sort.Slice(p.Density, func(i, j int) bool {
		a, b := p.Density[i], p.Density[j]
		return a.Lane < b.Lane || a.Lane == b.Lane && a.Kind < b.Kind
	})
	for _, v := range o.res.Violations {
		p.Violations = append(p.Violations, tl.violation(v.String(), v.Kind == sim.Safety))
	}
	if o.crash != "" {
		first, _, _ := strings.Cut(o.crash, "\n")
		p.Violations = append(p.Violations, tl.violation("simulator crash: "+first, true))
	}
	return p
}

func encodeArrows(arrows []arrow) pageArrows {
	var p pageArrows
	var t int64
	line := 0
	for _, a := range arrows {
		p.Send = append(p.Send, a.Send-t)
		t = a.Send
		p.Line = append(p.Line, a.SendLine-line)
		line = a.SendLine
		p.From, p.To = append(p.From, a.From), append(p.To, a.To)
		p.Class, p.Msg = append(p.Class, a.Class), append(p.Msg, a.Msg)
		if a.Recv < 0 {
			p.Length, p.RecvLine = append(p.Length, -1), append(p.RecvLine, -1)
		} else {
			p.Length, p.RecvLine = append(p.Length, a.Recv-a.Send), append(p.RecvLine, a.RecvLine-a.SendLine)
		}
	}
	return p
}

// idPattern finds message ids in a violation.
var idPattern = regexp.MustCompile(`\bp\d+\.\d+\b`)

// violation describes a failed check with links to the instants it
// names: the first and last mention of each message id, each time it
// quotes, and the start of the liveness phase for a liveness failure.
func (tl *timeline) violation(text string, safety bool) pageViolation {
	v := pageViolation{Text: text, Safety: safety}
	at := map[int64]bool{}
	add := func(label string, t int64) {
		if len(v.Jumps) < 10 && t >= 0 && t <= tl.now && !at[t] {
			at[t] = true
			v.Jumps = append(v.Jumps, pageJump{label, t})
		}
	}
	seen := map[string]bool{}
	for _, id := range idPattern.FindAllString(text, -1) {
		span, ok := tl.ids[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		add("first "+id, span[0])
		if span[1] != span[0] {
			add("last "+id, span[1])
		}
	}
	isUnit := func(c rune) bool { return !strings.ContainsRune("0123456789.nµums", c) }
	for _, w := range strings.FieldsFunc(text, isUnit) {
		if d, err := time.ParseDuration(w); err == nil && d > 0 && !seen[w] {
			seen[w] = true
			add("at "+w, d.Microseconds())
		}
	}
	if !safety && tl.liveAt >= 0 {
		add("liveness phase", tl.liveAt)
	}
	return v
}

// flagGiven reports whether the command line set the named flag.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
