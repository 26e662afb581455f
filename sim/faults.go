package sim

import "github.com/cairnmq/cairn/netsim"

// applyFault starts one scheduled fault, and schedules its end.
func (w *World) applyFault(f Fault) {
	if w.live {
		return
	}
	w.trace.line(w.now, "sim", "fault %s", f)
	p := w.procs[f.Node]
	a, b := netsim.Addr(p.id), netsim.Addr(w.procs[f.Peer].id)
	end := w.now + f.Length
	switch f.Kind {
	case FaultCrash:
		if p.state == statePaused {
			p.resume()
		}
		p.crash("fault", f.Length)
	case FaultCrashAt:
		p.armed = append(p.armed, armedCrash{boundary: f.Boundary, remaining: f.Hit, down: f.Length})
	case FaultPause:
		p.pause()
		w.schedule(end, -1, 0, p.resume)
	case FaultIsolate:
		all := w.addrs()
		w.net.Isolate(a, all)
		w.schedule(end, -1, 0, func() {
			for _, o := range all {
				if o != a {
					w.net.Unblock(a, o)
					w.net.Unblock(o, a)
				}
			}
		})
	case FaultOneWay:
		w.net.Block(a, b)
		w.schedule(end, -1, 0, func() { w.net.Unblock(a, b) })
	case FaultSplit:
		in, out := w.splitGroups(f.Group)
		w.net.Partition(in, out)
		w.schedule(end, -1, 0, func() {
			for _, x := range in {
				for _, y := range out {
					w.net.Unblock(x, y)
					w.net.Unblock(y, x)
				}
			}
		})
	case FaultClog:
		w.net.Clog(a, b, end)
	case FaultSpike:
		w.net.Spike(a, b, f.Extra, end)
	case FaultClockJump:
		p.clockOffset += f.Extra
	}
}

func (w *World) splitGroups(group []int) (in, out []netsim.Addr) {
	member := make([]bool, len(w.procs))
	for _, i := range group {
		member[i] = true
	}
	for i, p := range w.procs {
		if member[i] {
			in = append(in, netsim.Addr(p.id))
		} else {
			out = append(out, netsim.Addr(p.id))
		}
	}
	return in, out
}
