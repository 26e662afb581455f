package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressBar shows a sweep's progress on stderr. On a terminal it
// redraws one line in place, a few times a second at most; anywhere else
// (a CI log, a pod's log) it writes a plain line every few seconds, since
// carriage returns there only make a mess.
type progressBar struct {
	w       io.Writer
	tty     bool
	total   int
	start   time.Time
	last    time.Time // last draw
	drawn   bool      // a bar is on the terminal's current line
	every   time.Duration
	barSize int
}

func newProgress(w io.Writer, total int) *progressBar {
	p := &progressBar{w: w, tty: isTerminal(w), total: total, start: time.Now(), every: 5 * time.Second, barSize: 30}
	if p.tty {
		p.every = 200 * time.Millisecond
	}
	return p
}

// isTerminal reports whether w is a character device, i.e. a terminal,
// and the terminal is not one that declares it cannot move the cursor.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// update redraws if enough time has passed since the last draw.
func (p *progressBar) update(done, failed int) {
	if now := time.Now(); now.Sub(p.last) >= p.every {
		p.last = now
		p.draw(done, failed)
	}
}

// finish draws the final state and leaves the cursor on a fresh line.
func (p *progressBar) finish(done, failed int) {
	p.draw(done, failed)
	if p.tty {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// clear erases the bar before other output is written to the same
// terminal; the next due update draws it again.
func (p *progressBar) clear() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progressBar) draw(done, failed int) {
	elapsed := time.Since(p.start)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	eta := "?"
	if done > 0 {
		eta = time.Duration(float64(p.total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	pct := 100 * float64(done) / float64(max(p.total, 1))
	stats := fmt.Sprintf("%d/%d seeds %3.0f%%  %.1f seeds/s  ETA %s  failures %d", done, p.total, pct, rate, eta, failed)
	if !p.tty {
		fmt.Fprintf(p.w, "sweep: %s  elapsed %v\n", stats, elapsed.Round(time.Second))
		return
	}
	filled := p.barSize * done / max(p.total, 1)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", p.barSize-filled)
	if filled > 0 && filled < p.barSize {
		bar = bar[:filled-1] + ">" + bar[filled:]
	}
	fmt.Fprintf(p.w, "\r\033[K[%s] %s", bar, stats)
	p.drawn = true
}
