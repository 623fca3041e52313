package cc

import "github.com/emufabric/emufabric/clock"

// FeedbackKind says what a Feedback carries.
type FeedbackKind uint8

const (
	// FeedbackCNP: a congestion notification packet (RoCEv2 BTH opcode
	// 0x81) for this flow arrived at the sender.
	FeedbackCNP FeedbackKind = iota + 1
	// FeedbackACK: an acknowledgement arrived; RTT and Acked are set.
	// Delay-based algorithms (TIMELY, Swift) and HPCC use it.
	FeedbackACK
	// FeedbackBECN: an InfiniBand ACK or packet with BECN set arrived
	// (IBA Annex A10); the IB congestion control algorithm uses it.
	FeedbackBECN
)

// Feedback is one congestion signal delivered to a sender's algorithm.
type Feedback struct {
	Kind  FeedbackKind
	RTT   clock.Time // FeedbackACK: measured round-trip time, 0 if unknown
	Acked int        // FeedbackACK: bytes newly acknowledged
}

// Algorithm is a sender-side (reaction point) congestion controller for one
// flow or QP. It is a pure state machine: every method takes the current
// time, and nothing happens between calls. The NIC:
//
//   - paces the flow at Rate();
//   - calls OnSend after each packet leaves, with its wire bytes;
//   - calls OnFeedback for each congestion signal;
//   - arms one timer at NextDeadline() and calls Advance when it fires
//     (calling Advance early or late is harmless: it processes exactly the
//     events due at or before now, in order).
//
// Implementations are not safe for concurrent use; one NIC engine owns each.
type Algorithm interface {
	Name() string
	Rate() uint64 // bits per second the flow may send at now
	OnSend(now clock.Time, bytes int)
	OnFeedback(now clock.Time, fb *Feedback)
	Advance(now clock.Time)
	NextDeadline() clock.Time // clock.Never when no timer is pending
}

// Fixed is the algorithm of a flow without congestion control: always the
// rate it was created with. It lets the NIC treat every flow alike.
type Fixed struct{ BPS uint64 }

func (f *Fixed) Name() string                     { return "none" }
func (f *Fixed) Rate() uint64                     { return f.BPS }
func (f *Fixed) OnSend(clock.Time, int)           {}
func (f *Fixed) OnFeedback(clock.Time, *Feedback) {}
func (f *Fixed) Advance(clock.Time)               {}
func (f *Fixed) NextDeadline() clock.Time         { return clock.Never }

var (
	_ Algorithm = (*Fixed)(nil)
	_ Algorithm = (*RP)(nil)
)
