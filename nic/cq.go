package nic

import "errors"

// WC is a work completion (struct ibv_wc).
type WC struct {
	WRID            uint64
	Status          WCStatus
	Opcode          WCOpcode
	VendorErr       uint32
	ByteLen         uint32
	ImmData         uint32 // valid with IBV_WC_WITH_IMM (host order)
	InvalidatedRKey uint32 // valid with IBV_WC_WITH_INV
	QPNum           uint32
	SrcQP           uint32 // UD: the sender's QP
	WCFlags         WCFlags
	PKeyIndex       uint16
	SLID            uint16 // UD over IB: the sender's LID
	SL              uint8
}

// CQ is a completion queue: a ring the NIC fills and the program polls.
type CQ struct {
	nic        *NIC
	ring       []WC
	head, tail uint32 // tail: next to fill; head: next to poll
	overflow   bool
	notify     func(*CQ)
}

// CreateCQ creates a completion queue of at least cqe entries
// (ibv_create_cq).
func (n *NIC) CreateCQ(cqe int) (*CQ, error) {
	if cqe < 1 || cqe > 1<<22 {
		return nil, errors.New("create_cq: cqe must be in 1..4194304")
	}
	size := 1
	for size < cqe {
		size <<= 1
	}
	return &CQ{nic: n, ring: make([]WC, size)}, nil
}

// PollCQ moves up to len(wc) completions into wc and returns how many
// (ibv_poll_cq). It never blocks.
func (cq *CQ) PollCQ(wc []WC) int {
	k := 0
	for k < len(wc) && cq.head != cq.tail {
		wc[k] = cq.ring[cq.head&uint32(len(cq.ring)-1)]
		cq.head++
		k++
	}
	return k
}

// Len is the number of completions waiting.
func (cq *CQ) Len() int { return int(cq.tail - cq.head) }

// Overflowed reports whether a completion was lost because the CQ was
// full (IBV_EVENT_CQ_ERR on a real device).
func (cq *CQ) Overflowed() bool { return cq.overflow }

// SetNotify sets a function called after each completion is added, in the
// engine's time (the completion channel of a real program, armed
// permanently). Programs driving the NIC in simulation use it to post the
// next work request.
func (cq *CQ) SetNotify(f func(*CQ)) { cq.notify = f }

func (cq *CQ) push(wc *WC) {
	if cq.tail-cq.head == uint32(len(cq.ring)) {
		cq.overflow = true
		cq.nic.cnt[CQOverflow]++
		return
	}
	cq.ring[cq.tail&uint32(len(cq.ring)-1)] = *wc
	cq.tail++
	if cq.notify != nil {
		cq.notify(cq)
	}
}
