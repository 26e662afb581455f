package wire

// AddNode asks the cluster to admit node Node, reachable by its peers at
// Addr, as a member. The node joins the metadata group as a learner: it
// receives the metadata and may hold queue replicas at once, and it is
// promoted to a voter only when the group has fewer voters than it
// wants (3, or 5 from five members on). The reply is OK once the
// membership change is committed; asking again with the same address is
// answered OK. Only an admin may ask; any node takes the request.
//
// ClientAddr and HTTPAddr, optional, are where clients and tools reach
// the node: recorded in the metadata, they let a client that connected
// before the node joined follow a redirect to it.
type AddNode struct {
	ReqID      uint64
	Node       uint32
	Addr       string
	ClientAddr string
	HTTPAddr   string
}

// Kind implements Message.
func (*AddNode) Kind() Kind { return KindAddNode }

// AppendBody implements Message.
func (m *AddNode) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendUint32(b, m.Node)
	b = AppendString(b, m.Addr)
	b = AppendString(b, m.ClientAddr)
	return AppendString(b, m.HTTPAddr)
}

func decodeAddNode(d *Decoder) *AddNode {
	return &AddNode{ReqID: d.Uint64(), Node: d.Uint32(), Addr: d.String(), ClientAddr: d.String(), HTTPAddr: d.String()}
}

// RemoveNode asks the cluster to retire node Node. The node is marked
// leaving at once: no new queue is placed on it, it hands the queues it
// owns to other replicas, and the metadata leader replaces each of its
// replicas through the ordinary replacement path. Once it holds no
// replica it leaves the metadata group; a voter is first replaced by a
// learner, so the group never shrinks below three voters while another
// member could take the seat. The reply is OK once the node is marked
// leaving; MemberList shows the rest. Only an admin may ask.
type RemoveNode struct {
	ReqID uint64
	Node  uint32
}

// Kind implements Message.
func (*RemoveNode) Kind() Kind { return KindRemoveNode }

// AppendBody implements Message.
func (m *RemoveNode) AppendBody(b []byte) []byte {
	return AppendUint32(AppendUint64(b, m.ReqID), m.Node)
}

func decodeRemoveNode(d *Decoder) *RemoveNode {
	return &RemoveNode{ReqID: d.Uint64(), Node: d.Uint32()}
}

// MemberList asks any node for the cluster's members as its applied
// metadata knows them. The answer is a MemberListReply.
type MemberList struct {
	ReqID uint64
}

// Kind implements Message.
func (*MemberList) Kind() Kind { return KindMemberList }

// AppendBody implements Message.
func (m *MemberList) AppendBody(b []byte) []byte { return AppendUint64(b, m.ReqID) }

func decodeMemberList(d *Decoder) *MemberList { return &MemberList{ReqID: d.Uint64()} }

// MaxMembers bounds a member list on the wire, and the cluster's size.
const MaxMembers = 256

// MemberInfo is one member of the cluster as the metadata records it.
type MemberInfo struct {
	ID   uint32
	Addr string // the peer address; empty for a founding member, whose address the configuration holds
	// ClientAddr and HTTPAddr are where clients and tools reach it, as
	// AddNode recorded them; empty for a founding member.
	ClientAddr string
	HTTPAddr   string
	Voter      bool // a voter of the metadata group; else a learner
	Leaving    bool // removal under way: its queues are moving away
	Down       bool // the metadata leader confirmed it down
	// Replicas counts the queue replicas the metadata places on it.
	Replicas uint32
}

// MemberListReply answers a MemberList: Status OK and the members in ID
// order, as of the metadata the answering node has applied, or a failure
// status and Detail.
type MemberListReply struct {
	ReqID   uint64
	Status  Status
	Detail  string
	Leader  uint32 // the metadata leader the answering node knows, or 0
	Members []MemberInfo
}

// Kind implements Message.
func (*MemberListReply) Kind() Kind { return KindMemberListReply }

// memberInfoMinSize is the fewest bytes a MemberInfo takes on the wire.
const memberInfoMinSize = 4 + 3*4 + 1 + 1 + 1 + 4

// AppendBody implements Message.
func (m *MemberListReply) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendUint8(b, uint8(m.Status))
	b = AppendString(b, m.Detail)
	b = AppendUint32(b, m.Leader)
	b = AppendUint32(b, uint32(len(m.Members)))
	for _, mi := range m.Members {
		b = AppendUint32(b, mi.ID)
		b = AppendString(b, mi.Addr)
		b = AppendString(b, mi.ClientAddr)
		b = AppendString(b, mi.HTTPAddr)
		b = AppendBool(b, mi.Voter)
		b = AppendBool(b, mi.Leaving)
		b = AppendBool(b, mi.Down)
		b = AppendUint32(b, mi.Replicas)
	}
	return b
}

func decodeMemberListReply(d *Decoder) *MemberListReply {
	r := &MemberListReply{ReqID: d.Uint64(), Status: Status(d.Uint8()), Detail: d.String(), Leader: d.Uint32()}
	n := d.Count(memberInfoMinSize)
	if n > MaxMembers {
		d.fail("member list", n)
		return r
	}
	for range n {
		mi := MemberInfo{ID: d.Uint32(), Addr: d.String(), ClientAddr: d.String(), HTTPAddr: d.String(), Voter: d.Bool(), Leaving: d.Bool(), Down: d.Bool(), Replicas: d.Uint32()}
		r.Members = append(r.Members, mi)
	}
	return r
}

// Rebalance asks the cluster to spread the existing queues' replicas
// evenly over the members that stay, one replica move at a time through
// the replacement path; new queues are placed on every member anyway.
// The reply is OK once the rebalance is committed; MemberList shows the
// replica counts as they even out. Only an admin may ask.
type Rebalance struct {
	ReqID uint64
}

// Kind implements Message.
func (*Rebalance) Kind() Kind { return KindRebalance }

// AppendBody implements Message.
func (m *Rebalance) AppendBody(b []byte) []byte { return AppendUint64(b, m.ReqID) }

func decodeRebalance(d *Decoder) *Rebalance { return &Rebalance{ReqID: d.Uint64()} }
