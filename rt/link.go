package rt

import (
	"errors"

	"github.com/emufabric/emufabric/clock"
)

// Link is one end of an emulated link: a transport that moves whole
// Ethernet frames (one frame per message) in batches.
//
// Read fills bufs[i][offset:] with up to len(bufs) frames, stores their
// lengths in sizes[i] and returns how many it filled; it blocks until at
// least one frame is available or the link is closed. A transport may use
// bufs[i][:offset] as scratch (headroom), never bytes outside bufs[i].
// Write sends bufs[i][offset:] for every i and returns how many it sent.
// BatchSize is the number of frames one call moves at best; callers size
// their slices with it. Close releases the transport and unblocks a
// concurrent Read or Write, which then return an error satisfying
// errors.Is(err, ErrClosed).
//
// Read and Write may be called concurrently with each other, but Read
// (likewise Write) only from one goroutine at a time.
type Link interface {
	Read(bufs [][]byte, sizes []int, offset int) (n int, err error)
	Write(bufs [][]byte, offset int) (n int, err error)
	BatchSize() int
	Close() error
}

// ErrClosed is returned by a transport after Close. It wraps
// net.ErrClosed / os.ErrClosed so errors.Is works with either.
var ErrClosed = errors.New("rt: link closed")

// ErrFrameTooLarge is returned by Read when a received frame did not fit
// the caller's buffer and was dropped. It comes with n >= 0 good frames,
// which the caller uses as usual; reading goes on with the next call.
var ErrFrameTooLarge = errors.New("rt: frame larger than buffer")

// DefaultBatchSize is the batch the socket transports move per system call
// (recvmmsg / sendmmsg). wireguard-go's conn.IdealBatchSize is 128; frames
// here are up to 9 KiB, so 64 keeps one batch of buffers well inside L2.
const DefaultBatchSize = 64

// Waiter is a link that counts how often its ends waited (a Shm, whose
// ends sleep on an empty or full ring): RxSleeps, the reader found nothing
// to read and slept until the peer's notification; TxFull, the writer found
// no room and slept until the peer had read. A TxFull is the peer falling
// behind (descheduled, or slower than this side), the link's back-pressure
// at work.
type Waiter interface {
	Waits() (rxSleeps, txFull uint64)
}

// Backlogger is a link that knows how much of what it was given the peer
// has not taken yet (a Shm: the bytes in its send ring). That is the
// emulated cable's length as the peer sees it: frames the sender's engine
// counts as sent and the peer's engine has not received. A peer that runs
// late (descheduled) lets it grow to the ring's size, 4 MiB, which at
// 2 Gb/s is 17 ms of the link: a switch then learns of a burst, and sends
// its XOFF, that much late. Senders bound it in link time (TxBacklog).
type Backlogger interface {
	TxBacklog() int
}

// MaxBacklogTime is the link time a sender lets its link's backlog reach
// before it holds its engine back (MaxBacklog). 2 ms rides out a loaded
// 2-core machine's late wake-ups of the peer as the Pacer's slack does (see
// DelayLine: 200 us under-delivers there, 2 ms holds the rate), and keeps a
// lossless switch's overrun to 2 ms of each sender's traffic instead of
// the ring's 17 ms at 2 Gb/s.
const MaxBacklogTime = 2 * clock.Millisecond

// MinBacklog is MaxBacklog's floor: a few jumbo frames, so that a slow
// link still has frames to hand over between the peer's wake-ups.
const MinBacklog = 64 << 10

// MaxBacklog is the backlog (bytes, TxBacklog) a sender on a link of
// rate bits per second of the lab's time lets build up: MaxBacklogTime
// of the link, at least MinBacklog. In the lab's time, so a dilated lab
// (whose peers' lateness is that much less of its time) bounds the same
// link time.
func MaxBacklog(rate uint64) int {
	b := rate / 8 * uint64(MaxBacklogTime/clock.Microsecond) / 1e6
	return int(max(b, MinBacklog))
}

// StateLink is a link that carries both ends' link state, as a cable's
// carrier does: a ring link over its socket (Shm), a UDP link in its
// keepalives (UDP). SetState announces this end set up or down; PeerState
// is what the peer shows now; OnPeerState hears every change from then on
// (register it first, then read PeerState, and no change is missed).
type StateLink interface {
	Link
	SetState(up bool) error
	PeerState() PeerState
	OnPeerState(fn func(PeerState))
}

// PeerState is the far end of a link as this end sees it.
type PeerState struct {
	// Up: the peer is there and did not set its end down.
	Up bool
	// Silent: nothing was heard from the peer for a while (a UDP link's
	// keepalive timeout), or ever; Up is then false.
	Silent bool
}

var (
	_ StateLink = (*Shm)(nil)
	_ StateLink = (*UDP)(nil)
)

// PeerStateWords says what a link's peer did to show st, for a log line.
func PeerStateWords(st PeerState) string {
	switch {
	case st.Silent:
		return "the peer is silent (nothing heard for " + UDPDeadAfter.String() + "): link down"
	case st.Up:
		return "the peer's end of the link is up"
	}
	return "the peer's end of the link is down"
}
