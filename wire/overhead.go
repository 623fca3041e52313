package wire

// Per-frame wire overhead: the byte times a link spends on each frame
// beyond the frame's own bytes. A link's configured rate is its data rate
// (the line encoding, 64b/66b or 8b/10b, is already outside it), so this
// is the whole difference between the bytes a frame carries and the time
// it holds the link.
//
// The frame's last bit leaves after its own bytes; the link takes the next
// frame Overhead byte times later. Where exactly the overhead sits (the
// preamble before the frame, the FCS and gap after it) does not change a
// link's frame rate, only when the first bit of each frame shows up, and
// the engines time a frame from its first byte of header.
const (
	// EthernetOverhead is IEEE 802.3's per-frame cost outside the frame
	// bytes this emulator carries: preamble and SFD, 8 bytes (clause
	// 3.1.1); the FCS, 4 bytes (clause 3.2.9), which frames here never
	// carry (eth.go); and the minimum inter-packet gap of 96 bit times,
	// 12 bytes (clause 4.4.2). 24 in all: a 64-byte frame (60 + FCS)
	// takes 84 byte times, 148.8 Mpps at 100 Gb/s.
	EthernetOverhead = 8 + 4 + 12

	// IBOverhead is 0. IBA vol 2 (physical layer) frames each packet
	// between a start delimiter (SDP for data packets, SLP for link
	// packets) and an end delimiter (EGP, or EBP for a bad packet), and
	// sends idles when the link has nothing to send; unlike Ethernet's
	// IPG it sets no minimum idle gap between packets. What the
	// delimiters cost depends on the link's width and encoding generation
	// (8b/10b control symbols striped over the lanes at SDR to QDR,
	// control blocks of the 64b/66b framing from FDR on), plus the
	// periodic skip ordered sets, none of which the emulator models; the
	// VCRC is already one of the packet's bytes. No single per-packet
	// figure holds across IB link speeds, so IB links count packet bytes
	// only: their packet rate is an upper bound, a few byte times per
	// packet above a real link's.
	IBOverhead = 0
)

// Overhead is the per-frame wire overhead of a link: native InfiniBand
// (ib) or Ethernet.
func Overhead(ib bool) int {
	if ib {
		return IBOverhead
	}
	return EthernetOverhead
}
