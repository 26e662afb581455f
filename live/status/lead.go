package status

import "time"

// leadWindow bounds how far before a plan the marks that led to it are
// looked for: a suspicion older than this belongs to another story.
const leadWindow = time.Minute

// leadStages derives the stages before a recovery's first attempt from
// the cluster's marks, oldest first: observation, from the first
// suspicion of the old owner (since it was last heard from again) to its
// confirmation; plan, from there to the leader's plan for the epoch; and
// dispatch, from the plan to the attempt's start. A stage whose moments
// are missing is left out; none are derived for a retry, whose lead is
// the attempt before it.
func leadStages(a Recovery, marks []Mark) []Stage {
	if a.Attempt != 1 {
		return nil
	}
	plan, ok := firstMark(marks, func(m Mark) bool { return m.Kind == MarkPlan && m.Queue == a.Queue && m.Epoch == a.Epoch })
	if !ok {
		return nil
	}
	var out []Stage
	confirm, confirmed := lastMarkBefore(marks, plan.Time, func(m Mark) bool { return m.Kind == MarkConfirm && m.Node == plan.From })
	if confirmed {
		heard, _ := lastMarkBefore(marks, confirm.Time, func(m Mark) bool { return m.Kind == MarkRecovered && m.Node == plan.From })
		suspect, ok := firstMark(marks, func(m Mark) bool {
			return m.Kind == MarkSuspect && m.Node == plan.From && m.Time.After(heard.Time) && !m.Time.After(confirm.Time)
		})
		if ok {
			out = append(out, span("observation", suspect.Time, confirm.Time))
		}
		out = append(out, span("plan", confirm.Time, plan.Time))
	}
	if !a.Start.Before(plan.Time) {
		out = append(out, span("dispatch", plan.Time, a.Start))
	}
	return out
}

// span is a derived stage from one moment to another.
func span(name string, from, to time.Time) Stage {
	return Stage{Name: name, Outcome: "ok", Start: from, TookSeconds: max(0, to.Sub(from).Seconds())}
}

// firstMark returns the earliest mark that matches; marks are in time
// order.
func firstMark(marks []Mark, match func(Mark) bool) (Mark, bool) {
	for _, m := range marks {
		if match(m) {
			return m, true
		}
	}
	return Mark{}, false
}

// lastMarkBefore returns the latest matching mark at or before t and
// within leadWindow of it.
func lastMarkBefore(marks []Mark, t time.Time, match func(Mark) bool) (Mark, bool) {
	for i := len(marks) - 1; i >= 0; i-- {
		m := marks[i]
		if !m.Time.After(t) && t.Sub(m.Time) <= leadWindow && match(m) {
			return m, true
		}
	}
	return Mark{}, false
}
