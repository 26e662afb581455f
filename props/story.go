package props

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cairnmq/cairn/sim"
)

// storyHalf is how many story lines a violation quotes from each end of
// its window: the cause of a loss is usually the first recovery after the
// message was confirmed, and the state that revealed it the last.
const storyHalf = 12

// storyEnd stands for "until the end of the run".
const storyEnd = time.Duration(math.MaxInt64)

// storyLine is one line of a told story: an event, and how often the same
// node said the same thing again, until when.
type storyLine struct {
	sim.StoryEvent
	again int
	last  time.Duration
}

// String renders the line.
func (l storyLine) String() string {
	s := fmt.Sprintf("\n      %-12v %s %s", l.At, l.Node, l.Text)
	if l.again > 0 {
		s += fmt.Sprintf(" (and %d more times until %v)", l.again, l.last)
	}
	return s
}

// queueStory renders the part of queue's ownership story between from and
// until: which plans the metadata made, which recovery sealed which
// witnesses, which source it chose and what it installed, who was
// activated, fenced or made to truncate, and which faults broke a
// replica. A node that repeats itself (a refused truncation retried every
// tick) is told once, with a count. A long window keeps its first and
// last storyHalf lines.
func queueStory(h *sim.History, queue string, from, until time.Duration) string {
	var lines []storyLine
	seen := make(map[string]int)
	for _, e := range h.Story {
		if e.Queue != queue || e.At < from || e.At > until {
			continue
		}
		key := e.Node.String() + " " + e.Text
		if i, ok := seen[key]; ok {
			lines[i].again++
			lines[i].last = e.At
			continue
		}
		seen[key] = len(lines)
		lines = append(lines, storyLine{StoryEvent: e})
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	window := "from " + from.String()
	if until != storyEnd {
		window += " to " + until.String()
	}
	fmt.Fprintf(&b, "\n    story of %s %s:", queue, window)
	for i, l := range lines {
		switch {
		case len(lines) <= 2*storyHalf || i < storyHalf || i >= len(lines)-storyHalf:
			b.WriteString(l.String())
		case i == storyHalf:
			fmt.Fprintf(&b, "\n      ... %d more ...", len(lines)-2*storyHalf)
		}
	}
	return b.String()
}
