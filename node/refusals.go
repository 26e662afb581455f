package node

import "github.com/cairnmq/cairn/wire"

// A request the node refused (said it did not and will not act on) must
// stay refused: a client that heard "disk full" reports the publish
// failed, so a copy of the same request arriving later, once there is
// room, must not be acted on. TCP does not duplicate a request, but
// nothing else in the node may rely on that (the simulator's network
// does duplicate, and found a late copy of a refused publish stored).
// Each client connection keeps its latest refusals by ReqID, and a
// request that carries one is answered the same way again.

// refusalsKept bounds the refusals kept per client connection: a copy
// arrives soon after the original or not at all.
const refusalsKept = 64

// refusal is one refused request and its answer.
type refusal struct {
	reqID  uint64
	status wire.Status
	detail string
}

// refusals is a connection's latest refusals, oldest overwritten first.
type refusals struct {
	ring [refusalsKept]refusal
	next int
}

// noteRefusal records that the node refused reqID on conn.
func (n *Node) noteRefusal(conn ConnID, reqID uint64, st wire.Status, detail string) {
	rs := n.refused[conn]
	if rs == nil {
		rs = &refusals{}
		n.refused[conn] = rs
	}
	rs.ring[rs.next%refusalsKept] = refusal{reqID: reqID, status: st, detail: detail}
	rs.next++
}

// refusedBefore finds the refusal of reqID on conn, if it is kept.
func (n *Node) refusedBefore(conn ConnID, reqID uint64) (refusal, bool) {
	rs := n.refused[conn]
	if rs == nil {
		return refusal{}, false
	}
	for _, r := range rs.ring[:min(rs.next, refusalsKept)] {
		if r.reqID == reqID {
			return r, true
		}
	}
	return refusal{}, false
}

// answerRefusedAgain answers every request of req that was refused
// before with the same refusal, and returns what is left to handle: nil
// when nothing is.
func (n *Node) answerRefusedAgain(conn ConnID, req wire.Message) wire.Message {
	if n.refused[conn] == nil {
		return req
	}
	if b, ok := req.(*wire.SettleBatch); ok {
		kept := &wire.SettleBatch{Queue: b.Queue}
		for _, it := range b.Items {
			if r, again := n.refusedBefore(conn, it.ReqID); again {
				n.env.Reply(conn, &wire.Reply{ReqID: r.reqID, Status: r.status, Detail: r.detail})
				continue
			}
			kept.Items = append(kept.Items, it)
		}
		return kept
	}
	id, ok := wire.RequestID(req)
	if !ok {
		return req
	}
	if r, again := n.refusedBefore(conn, id); again {
		n.env.Reply(conn, &wire.Reply{ReqID: r.reqID, Status: r.status, Detail: r.detail})
		return nil
	}
	return req
}
