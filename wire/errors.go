package wire

import "fmt"

// Reason is why a header failed validation. The set is closed so callers can
// switch on it and count drops by reason without parsing strings.
type Reason uint8

const (
	// ReasonTruncated: the bytes end before the field does.
	ReasonTruncated Reason = iota + 1
	// ReasonInvalid: the field holds a value the spec forbids (a reserved
	// opcode, TVer != 0, a version nibble that is not 4 or 6, ...).
	ReasonInvalid
	// ReasonInconsistent: the field disagrees with another field or with the
	// frame length (an IP total length longer than the frame, a PktLen that
	// does not match, a PadCnt on a FIRST packet, ...).
	ReasonInconsistent
	// ReasonChecksum: a checksum or CRC does not verify.
	ReasonChecksum
	// ReasonUnsupported: valid on the wire but not something this emulator
	// decodes (IPv4 fragments, IPv6 extension headers, RD/XRC opcodes).
	ReasonUnsupported
)

func (r Reason) String() string {
	switch r {
	case ReasonTruncated:
		return "truncated"
	case ReasonInvalid:
		return "invalid"
	case ReasonInconsistent:
		return "inconsistent"
	case ReasonChecksum:
		return "bad checksum"
	case ReasonUnsupported:
		return "unsupported"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Error is the one error type every decoder in wire/ and bth/ returns. It
// names the header and the field so a user sees "BTH.PadCnt: inconsistent:
// ..." instead of "short buffer", and so tools such as `emulab decode` can
// report exactly what was wrong with which frame.
//
// Decoders return *Error by value of a pointer to a package-level or
// caller-owned value only on the error path; the success path allocates
// nothing.
type Error struct {
	Header string // header name as in the spec: "Ethernet", "IPv4", "BTH", "RETH", "LRH", ...
	Field  string // field name as in the spec: "TotalLength", "PadCnt", "OpCode", ...
	Offset int    // byte offset of the header within the frame, -1 if unknown
	Reason Reason
	Detail string // optional human detail: "need 12 bytes, have 7"
}

func (e *Error) Error() string {
	s := e.Header
	if e.Field != "" {
		s += "." + e.Field
	}
	s += ": " + e.Reason.String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return s
}

// Truncated returns the error for a header cut short: need bytes were
// required, have were present.
func Truncated(header, field string, offset, need, have int) *Error {
	return &Error{Header: header, Field: field, Offset: offset, Reason: ReasonTruncated,
		Detail: fmt.Sprintf("need %d bytes, have %d", need, have)}
}

// Errorf builds an *Error with a formatted detail.
func Errorf(header, field string, offset int, r Reason, format string, args ...any) *Error {
	return &Error{Header: header, Field: field, Offset: offset, Reason: r, Detail: fmt.Sprintf(format, args...)}
}
