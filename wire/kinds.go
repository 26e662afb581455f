package wire

import (
	"fmt"
	"strings"
)

// Message kinds. Numbers are stable on the wire: append new kinds, never
// renumber or reuse one.
const (
	KindInvalid       Kind = 0
	KindCounterAppend Kind = 10
	KindCounterAck    Kind = 11
	KindCounterProbe  Kind = 12

	KindAppend      Kind = 20
	KindAppendReply Kind = 21
	// KindDeadLetter and KindDeadLetterReply move a message from a queue
	// to its dead-letter queue, owner to owner.
	KindDeadLetter      Kind = 22
	KindDeadLetterReply Kind = 23

	KindRaft Kind = 30
	KindPing Kind = 31
	KindPong Kind = 32
	// KindMetaLostLog: a metadata member found it had lost log entries
	// it once acknowledged.
	KindMetaLostLog Kind = 33
	// KindProbe and KindProbeAck check on a peer through another node.
	KindProbe    Kind = 34
	KindProbeAck Kind = 35
	// KindMetaCommitted: a metadata member tells a peer how far its log
	// is known to be committed.
	KindMetaCommitted Kind = 36

	KindSeal       Kind = 50
	KindSealReply  Kind = 51
	KindFetch      Kind = 52
	KindFetchReply Kind = 53

	KindCheckpointAsk     Kind = 60
	KindCheckpointReceipt Kind = 61
	KindCheckpoint        Kind = 62
	KindCheckpointAck     Kind = 63

	KindCreateQueue Kind = 40
	KindDeleteQueue Kind = 41
	KindPublish     Kind = 42
	KindSubscribe   Kind = 43
	KindSettle      Kind = 44
	KindReply       Kind = 45
	KindDelivery    Kind = 46

	KindSetDetection Kind = 47
	KindSettleBatch  Kind = 48
	KindUnsubscribe  Kind = 49

	// KindExtend starts a second run of client requests: 40-49 are
	// taken.
	KindExtend Kind = 70
	// KindPurge removes every message a queue holds.
	KindPurge Kind = 71
	// KindQueueInfo asks a queue's owner for its depth.
	KindQueueInfo Kind = 72
	// KindMoveOwner asks a queue's owner to hand the queue over.
	KindMoveOwner Kind = 73
	// KindSetQueueOptions changes a queue's delivery limit.
	KindSetQueueOptions Kind = 74
	// KindAddNode, KindRemoveNode and KindMemberList change and list the
	// cluster's members; KindMemberListReply answers the list.
	KindAddNode         Kind = 75
	KindRemoveNode      Kind = 76
	KindMemberList      Kind = 77
	KindMemberListReply Kind = 78
	// KindRebalance spreads existing queues' replicas over the members.
	KindRebalance Kind = 79
)

var kindNames = map[Kind]string{
	KindCounterAppend:     "CounterAppend",
	KindCounterAck:        "CounterAck",
	KindCounterProbe:      "CounterProbe",
	KindAppend:            "Append",
	KindAppendReply:       "AppendReply",
	KindDeadLetter:        "DeadLetter",
	KindDeadLetterReply:   "DeadLetterReply",
	KindRaft:              "Raft",
	KindPing:              "Ping",
	KindPong:              "Pong",
	KindMetaLostLog:       "MetaLostLog",
	KindProbe:             "Probe",
	KindProbeAck:          "ProbeAck",
	KindMetaCommitted:     "MetaCommitted",
	KindSeal:              "Seal",
	KindSealReply:         "SealReply",
	KindFetch:             "Fetch",
	KindFetchReply:        "FetchReply",
	KindCheckpointAsk:     "CheckpointAsk",
	KindCheckpointReceipt: "CheckpointReceipt",
	KindCheckpoint:        "Checkpoint",
	KindCheckpointAck:     "CheckpointAck",
	KindCreateQueue:       "CreateQueue",
	KindDeleteQueue:       "DeleteQueue",
	KindPublish:           "Publish",
	KindSubscribe:         "Subscribe",
	KindSettle:            "Settle",
	KindReply:             "Reply",
	KindDelivery:          "Delivery",
	KindSetDetection:      "SetDetection",
	KindSettleBatch:       "SettleBatch",
	KindUnsubscribe:       "Unsubscribe",
	KindExtend:            "Extend",
	KindPurge:             "Purge",
	KindQueueInfo:         "QueueInfo",
	KindMoveOwner:         "MoveOwner",
	KindSetQueueOptions:   "SetQueueOptions",
	KindAddNode:           "AddNode",
	KindRemoveNode:        "RemoveNode",
	KindMemberList:        "MemberList",
	KindMemberListReply:   "MemberListReply",
	KindRebalance:         "Rebalance",
}

// String names the kind for traces and logs.
func (k Kind) String() string {
	if name, ok := kindNames[k]; ok {
		return name
	}
	return fmt.Sprintf("Kind(%d)", uint16(k))
}

// decodeBody dispatches on kind. One case per message type keeps the set of
// decodable messages explicit and greppable.
func decodeBody(kind Kind, d *Decoder) (Message, error) {
	switch kind {
	case KindCounterAppend:
		return decodeCounterAppend(d), nil
	case KindCounterAck:
		return decodeCounterAck(d), nil
	case KindCounterProbe:
		return decodeCounterProbe(d), nil
	case KindAppend:
		return decodeAppend(d), nil
	case KindAppendReply:
		return decodeAppendReply(d), nil
	case KindDeadLetter:
		return decodeDeadLetter(d), nil
	case KindDeadLetterReply:
		return decodeDeadLetterReply(d), nil
	case KindRaft:
		return decodeRaft(d), nil
	case KindPing:
		return decodePing(d), nil
	case KindPong:
		return decodePong(d), nil
	case KindMetaLostLog:
		return decodeMetaLostLog(d), nil
	case KindProbe:
		return decodeProbe(d), nil
	case KindProbeAck:
		return decodeProbeAck(d), nil
	case KindMetaCommitted:
		return decodeMetaCommitted(d), nil
	case KindSeal:
		return decodeSeal(d), nil
	case KindSealReply:
		return decodeSealReply(d), nil
	case KindFetch:
		return decodeFetch(d), nil
	case KindFetchReply:
		return decodeFetchReply(d), nil
	case KindCheckpointAsk:
		return decodeCheckpointAsk(d), nil
	case KindCheckpointReceipt:
		return decodeCheckpointReceipt(d), nil
	case KindCheckpoint:
		return decodeCheckpoint(d), nil
	case KindCheckpointAck:
		return decodeCheckpointAck(d), nil
	case KindCreateQueue:
		return decodeCreateQueue(d), nil
	case KindDeleteQueue:
		return decodeDeleteQueue(d), nil
	case KindPublish:
		return decodePublish(d), nil
	case KindSubscribe:
		return decodeSubscribe(d), nil
	case KindSettle:
		return decodeSettle(d), nil
	case KindReply:
		return decodeReply(d), nil
	case KindDelivery:
		return decodeDelivery(d), nil
	case KindSetDetection:
		return decodeSetDetection(d), nil
	case KindSettleBatch:
		return decodeSettleBatch(d), nil
	case KindUnsubscribe:
		return decodeUnsubscribe(d), nil
	case KindExtend:
		return decodeExtend(d), nil
	case KindPurge:
		return decodePurge(d), nil
	case KindQueueInfo:
		return decodeQueueInfo(d), nil
	case KindMoveOwner:
		return decodeMoveOwner(d), nil
	case KindSetQueueOptions:
		return decodeSetQueueOptions(d), nil
	case KindAddNode:
		return decodeAddNode(d), nil
	case KindRemoveNode:
		return decodeRemoveNode(d), nil
	case KindMemberList:
		return decodeMemberList(d), nil
	case KindMemberListReply:
		return decodeMemberListReply(d), nil
	case KindRebalance:
		return decodeRebalance(d), nil
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownKind, uint16(kind))
	}
}

// Describe renders a message for a trace line: its kind and fields, never
// a payload (messages that carry payloads print only their sizes).
func Describe(m Message) string {
	if s, ok := m.(fmt.Stringer); ok {
		return m.Kind().String() + s.String()
	}
	return m.Kind().String() + strings.TrimPrefix(fmt.Sprintf("%+v", m), "&")
}
