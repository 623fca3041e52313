package bth

import (
	"fmt"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/wire"
)

// AETH is a view of the 4-byte ACK Extended Transport Header (IBA 9.3.5),
// carried by ACKNOWLEDGE, ATOMIC ACKNOWLEDGE and the READ RESPONSE
// FIRST/LAST/ONLY packets.
//
//	+-----------+-----------------------+
//	| Syndrome  |          MSN          |  byte 0, bytes 1-3
//	+-----------+-----------------------+
type AETH []byte

// AETHSize is the length of the AETH.
const AETHSize = 4

func (b AETH) Syndrome() Syndrome     { return Syndrome(b[0]) }
func (b AETH) MSN() uint32            { return uint24(b[1:]) }
func (b AETH) SetSyndrome(s Syndrome) { b[0] = uint8(s) }
func (b AETH) SetMSN(msn uint32)      { putUint24(b[1:], msn) }

// AETHFields holds the AETH fields for Encode.
type AETHFields struct {
	Syndrome Syndrome
	MSN      uint32 // 24 bits
}

// Encode writes f into the first AETHSize bytes of b.
func (b AETH) Encode(f *AETHFields) {
	_ = b[AETHSize-1]
	b[0] = uint8(f.Syndrome)
	putUint24(b[1:], f.MSN)
}

// Fields returns every field of the header.
func (b AETH) Fields() AETHFields { return AETHFields{Syndrome: b.Syndrome(), MSN: b.MSN()} }

// Validate checks the length and that the syndrome is a defined encoding.
func (b AETH) Validate(offset int) error {
	if len(b) < AETHSize {
		return wire.Truncated("AETH", "", offset, AETHSize, len(b))
	}
	if s := b.Syndrome(); !s.Valid() {
		return wire.Errorf("AETH", "Syndrome", offset, wire.ReasonInvalid, "syndrome 0x%02x is reserved", uint8(s))
	}
	return nil
}

// Syndrome is the AETH syndrome byte (IBA 9.7.5.1, rxe_hdr.h enum
// aeth_syndrome): bit 7 reserved (0), bits 6..5 the type, bits 4..0 a value
// whose meaning depends on the type.
//
//	type 00  ACK      value = credit code (0x1F: no credit count)
//	type 01  RNR NAK  value = RNR timer code
//	type 10  reserved
//	type 11  NAK      value = NAK code (0 PSN sequence error .. 4 invalid RD request)
type Syndrome uint8

// SyndromeType is bits 6..5 of the syndrome.
type SyndromeType uint8

const (
	SyndromeACK      SyndromeType = 0
	SyndromeRNR      SyndromeType = 1
	SyndromeReserved SyndromeType = 2
	SyndromeNAK      SyndromeType = 3
)

// NAKCode is the value of a NAK syndrome (IBA 9.7.5.2.4).
type NAKCode uint8

const (
	NAKPSNSequenceError       NAKCode = 0 // syndrome 0x60
	NAKInvalidRequest         NAKCode = 1 // 0x61
	NAKRemoteAccessError      NAKCode = 2 // 0x62
	NAKRemoteOperationalError NAKCode = 3 // 0x63
	NAKInvalidRDRequest       NAKCode = 4 // 0x64
)

var nakNames = [...]string{
	NAKPSNSequenceError:       "PSN_SEQUENCE_ERROR",
	NAKInvalidRequest:         "INVALID_REQUEST",
	NAKRemoteAccessError:      "REMOTE_ACCESS_ERROR",
	NAKRemoteOperationalError: "REMOTE_OPERATIONAL_ERROR",
	NAKInvalidRDRequest:       "INVALID_RD_REQUEST",
}

func (c NAKCode) String() string {
	if int(c) < len(nakNames) {
		return nakNames[c]
	}
	return fmt.Sprintf("nak(%d)", uint8(c))
}

const (
	synTypeShift = 5
	synTypeMask  = 0x60
	synValueMask = 0x1F
	synResv      = 0x80

	// CreditCodeInvalid is the ACK credit code meaning "no credit count"
	// (end-to-end flow control not in use; rxe AETH_ACK_UNLIMITED).
	CreditCodeInvalid = 0x1F
)

// ACKSyndrome returns an ACK syndrome carrying creditCode (0..0x1F).
func ACKSyndrome(creditCode uint8) Syndrome { return Syndrome(creditCode & synValueMask) }

// RNRSyndrome returns an RNR NAK syndrome with RNR timer code timer (0..31).
func RNRSyndrome(timer uint8) Syndrome {
	return Syndrome(uint8(SyndromeRNR)<<synTypeShift | timer&synValueMask)
}

// NAKSyndrome returns a NAK syndrome for code.
func NAKSyndrome(code NAKCode) Syndrome {
	return Syndrome(uint8(SyndromeNAK)<<synTypeShift | uint8(code)&synValueMask)
}

func (s Syndrome) Type() SyndromeType { return SyndromeType((s & synTypeMask) >> synTypeShift) }
func (s Syndrome) Value() uint8       { return uint8(s) & synValueMask }
func (s Syndrome) IsACK() bool        { return s&synResv == 0 && s.Type() == SyndromeACK }
func (s Syndrome) IsRNR() bool        { return s&synResv == 0 && s.Type() == SyndromeRNR }
func (s Syndrome) IsNAK() bool        { return s&synResv == 0 && s.Type() == SyndromeNAK }

// Valid reports whether s is a defined encoding: bit 7 clear, type not 10,
// and for NAKs a code in 0..4.
func (s Syndrome) Valid() bool {
	switch {
	case s&synResv != 0:
		return false
	case s.Type() == SyndromeReserved:
		return false
	case s.Type() == SyndromeNAK:
		return NAKCode(s.Value()) <= NAKInvalidRDRequest
	}
	return true
}

// CreditCode is the credit code of an ACK syndrome.
func (s Syndrome) CreditCode() uint8 { return s.Value() }

// Credits returns the number of receive WQEs an ACK advertises
// (rdmavt credit_table). ok is false for a non-ACK syndrome or for credit
// code 0x1F, which carries no credit count.
func (s Syndrome) Credits() (n int, ok bool) {
	if !s.IsACK() || s.Value() == CreditCodeInvalid {
		return 0, false
	}
	return int(creditTable[s.Value()]), true
}

// RNRTimer is the timer code of an RNR NAK syndrome.
func (s Syndrome) RNRTimer() uint8 { return s.Value() }

// RNRDelay returns how long the requester waits before retrying after an RNR
// NAK (rdmavt ib_rvt_rnr_table). ok is false for a non-RNR syndrome.
func (s Syndrome) RNRDelay() (d clock.Time, ok bool) {
	if !s.IsRNR() {
		return 0, false
	}
	return RNRTimerDelay(s.Value()), true
}

// NAKCode is the code of a NAK syndrome.
func (s Syndrome) NAKCode() NAKCode { return NAKCode(s.Value()) }

// String describes the syndrome in the words Wireshark uses:
// "ACK credits=10", "ACK credits=invalid", "RNR_NAK timer=14 (1.28ms)",
// "NAK PSN_SEQUENCE_ERROR".
func (s Syndrome) String() string {
	switch {
	case !s.Valid():
		return fmt.Sprintf("reserved(0x%02x)", uint8(s))
	case s.IsACK():
		if n, ok := s.Credits(); ok {
			return fmt.Sprintf("ACK credits=%d", n)
		}
		return "ACK credits=invalid"
	case s.IsRNR():
		return fmt.Sprintf("RNR_NAK timer=%d (%s)", s.Value(), RNRTimerDelay(s.Value()))
	}
	return "NAK " + s.NAKCode().String()
}

// creditTable maps the 5-bit ACK credit code to a number of receive WQEs
// (IBA 9.7.5.1.1 table; rdmavt rc.c credit_table). Code 0x1F has no count.
var creditTable = [31]uint16{
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
	512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
}

// CreditCodeFor returns the largest credit code whose credit count does not
// exceed n, as rdmavt's rvt_compute_aeth does: a responder never advertises
// more WQEs than it has.
func CreditCodeFor(n int) uint8 {
	code := 0
	for code+1 < len(creditTable) && int(creditTable[code+1]) <= n {
		code++
	}
	return uint8(code)
}

// CreditsForCode returns the credit count of code, and false for 0x1F (or
// any value above it).
func CreditsForCode(code uint8) (int, bool) {
	if int(code) >= len(creditTable) {
		return 0, false
	}
	return int(creditTable[code]), true
}

// rnrTable is the RNR NAK timer encoding (IBA table 45; rdmavt
// ib_rvt_rnr_table, there in microseconds). Code 0 is the longest delay.
var rnrTable = [32]clock.Time{
	655360 * clock.Microsecond, // 0: 655.36 ms
	10 * clock.Microsecond,     // 1: 0.01 ms
	20 * clock.Microsecond,
	30 * clock.Microsecond,
	40 * clock.Microsecond,
	60 * clock.Microsecond,
	80 * clock.Microsecond,
	120 * clock.Microsecond,
	160 * clock.Microsecond,
	240 * clock.Microsecond,
	320 * clock.Microsecond, // 10
	480 * clock.Microsecond,
	640 * clock.Microsecond,
	960 * clock.Microsecond,
	1280 * clock.Microsecond,
	1920 * clock.Microsecond,
	2560 * clock.Microsecond,
	3840 * clock.Microsecond,
	5120 * clock.Microsecond,
	7680 * clock.Microsecond,
	10240 * clock.Microsecond, // 20
	15360 * clock.Microsecond,
	20480 * clock.Microsecond,
	30720 * clock.Microsecond,
	40960 * clock.Microsecond,
	61440 * clock.Microsecond,
	81920 * clock.Microsecond,
	122880 * clock.Microsecond,
	163840 * clock.Microsecond,
	245760 * clock.Microsecond,
	327680 * clock.Microsecond, // 30
	491520 * clock.Microsecond,
}

// RNRTimerDelay returns the delay of an RNR timer code (only the low 5 bits
// are used).
func RNRTimerDelay(code uint8) clock.Time { return rnrTable[code&synValueMask] }

// RNRTimerFor returns the code of the shortest RNR delay that is at least d,
// so a responder never asks for less time than it needs; delays beyond the
// table's largest entry get code 0 (655.36 ms).
func RNRTimerFor(d clock.Time) uint8 {
	best := uint8(0) // 655.36 ms, the longest
	for c := uint8(1); c < 32; c++ {
		if rnrTable[c] >= d && rnrTable[c] < rnrTable[best] {
			best = c
		}
	}
	return best
}
