package bth

import "fmt"

// Opcode is the BTH OpCode byte (IBA 9.2, wire-formats.md §4–5): the top
// three bits name the transport service, the low five bits the operation.
type Opcode uint8

// Opcodes this package decodes. Names and values follow Linux
// include/rdma/ib_pack.h (IB_OPCODE_RC_SEND_FIRST, ...).
const (
	RCSendFirst              Opcode = 0x00
	RCSendMiddle             Opcode = 0x01
	RCSendLast               Opcode = 0x02
	RCSendLastWithImmediate  Opcode = 0x03
	RCSendOnly               Opcode = 0x04
	RCSendOnlyWithImmediate  Opcode = 0x05
	RCWriteFirst             Opcode = 0x06
	RCWriteMiddle            Opcode = 0x07
	RCWriteLast              Opcode = 0x08
	RCWriteLastWithImmediate Opcode = 0x09
	RCWriteOnly              Opcode = 0x0A
	RCWriteOnlyWithImmediate Opcode = 0x0B
	RCReadRequest            Opcode = 0x0C
	RCReadResponseFirst      Opcode = 0x0D
	RCReadResponseMiddle     Opcode = 0x0E
	RCReadResponseLast       Opcode = 0x0F
	RCReadResponseOnly       Opcode = 0x10
	RCAcknowledge            Opcode = 0x11
	RCAtomicAcknowledge      Opcode = 0x12
	RCCompareSwap            Opcode = 0x13
	RCFetchAdd               Opcode = 0x14
	RCSendLastWithInvalidate Opcode = 0x16
	RCSendOnlyWithInvalidate Opcode = 0x17
	UCSendFirst              Opcode = 0x20
	UCSendMiddle             Opcode = 0x21
	UCSendLast               Opcode = 0x22
	UCSendLastWithImmediate  Opcode = 0x23
	UCSendOnly               Opcode = 0x24
	UCSendOnlyWithImmediate  Opcode = 0x25
	UCWriteFirst             Opcode = 0x26
	UCWriteMiddle            Opcode = 0x27
	UCWriteLast              Opcode = 0x28
	UCWriteLastWithImmediate Opcode = 0x29
	UCWriteOnly              Opcode = 0x2A
	UCWriteOnlyWithImmediate Opcode = 0x2B
	UDSendOnly               Opcode = 0x64
	UDSendOnlyWithImmediate  Opcode = 0x65
	IBCNOpcode               Opcode = 0x80 // IB Congestion Notification (CN), IBA Annex A10
	CNPOpcode                Opcode = 0x81 // RoCEv2 CNP, IBA Annex A17
	opRCFlush                Opcode = 0x1C // newer IBA; not decoded
	opRCAtomicWrite          Opcode = 0x1D // newer IBA; not decoded
)

// Transport is the service named by the top three OpCode bits.
type Transport uint8

const (
	TransportRC     Transport = 0 // 000 reliable connection
	TransportUC     Transport = 1 // 001 unreliable connection
	TransportRD     Transport = 2 // 010 reliable datagram (not decoded)
	TransportUD     Transport = 3 // 011 unreliable datagram
	TransportCNP    Transport = 4 // 100 congestion notification
	TransportXRC    Transport = 5 // 101 extended reliable connection (not decoded)
	TransportVendor Transport = 7 // 111 manufacturer specific (not decoded)
)

// Transport returns the service of the opcode (its top three bits).
func (o Opcode) Transport() Transport { return Transport(o >> 5) }

func (t Transport) String() string {
	switch t {
	case TransportRC:
		return "RC"
	case TransportUC:
		return "UC"
	case TransportRD:
		return "RD"
	case TransportUD:
		return "UD"
	case TransportCNP:
		return "CNP"
	case TransportXRC:
		return "XRC"
	case TransportVendor:
		return "vendor"
	}
	return fmt.Sprintf("transport(%d)", uint8(t))
}

// Ext names one extension header, in wire order (wire-formats.md §5:
// [DETH] [RETH|AtomicETH] [AETH] [AtomicAckETH] [ImmDt|IETH]). The CNP's 16
// reserved bytes are treated as one more header so that every byte between
// the BTH and the payload belongs to a header.
type Ext uint8

const (
	ExtDETH Ext = iota
	ExtRETH
	ExtAtomicETH
	ExtAETH
	ExtAtomicAckETH
	ExtImmDt
	ExtIETH
	ExtCNP
	NumExt
)

// extSize is the length of each extension header in bytes.
var extSize = [NumExt]int{
	ExtDETH:         DETHSize,
	ExtRETH:         RETHSize,
	ExtAtomicETH:    AtomicETHSize,
	ExtAETH:         AETHSize,
	ExtAtomicAckETH: AtomicAckETHSize,
	ExtImmDt:        ImmDtSize,
	ExtIETH:         IETHSize,
	ExtCNP:          CNPSize,
}

var extName = [NumExt]string{
	ExtDETH:         "DETH",
	ExtRETH:         "RETH",
	ExtAtomicETH:    "AtomicETH",
	ExtAETH:         "AETH",
	ExtAtomicAckETH: "AtomicAckETH",
	ExtImmDt:        "ImmDt",
	ExtIETH:         "IETH",
	ExtCNP:          "CNP",
}

// Size is the length of the extension header in bytes.
func (e Ext) Size() int {
	if e >= NumExt {
		return 0
	}
	return extSize[e]
}

func (e Ext) String() string {
	if e >= NumExt {
		return fmt.Sprintf("ext(%d)", uint8(e))
	}
	return extName[e]
}

// OpFlags are the properties of an opcode, in the manner of rxe's
// RXE_*_MASK bits (drivers/infiniband/sw/rxe/rxe_opcode.h).
type OpFlags uint32

const (
	HasDETH         OpFlags = 1 << ExtDETH
	HasRETH         OpFlags = 1 << ExtRETH
	HasAtomicETH    OpFlags = 1 << ExtAtomicETH
	HasAETH         OpFlags = 1 << ExtAETH
	HasAtomicAckETH OpFlags = 1 << ExtAtomicAckETH
	HasImmDt        OpFlags = 1 << ExtImmDt
	HasIETH         OpFlags = 1 << ExtIETH
	HasCNP          OpFlags = 1 << ExtCNP

	// First, Middle and Last place the packet in its message; an ONLY
	// packet is First|Last.
	First  OpFlags = 1 << 12
	Middle OpFlags = 1 << 13
	Last   OpFlags = 1 << 14

	Request  OpFlags = 1 << 16 // sent by the requester
	Response OpFlags = 1 << 17 // RDMA READ response: data from the responder
	Ack      OpFlags = 1 << 18 // ACKNOWLEDGE / ATOMIC ACKNOWLEDGE
	Payload  OpFlags = 1 << 19 // the opcode may carry payload (and so PadCnt)

	Send   OpFlags = 1 << 20
	Write  OpFlags = 1 << 21
	Read   OpFlags = 1 << 22
	Atomic OpFlags = 1 << 23
	Notify OpFlags = 1 << 24 // CNP

	Only = First | Last
)

// Has reports whether all bits of m are set.
func (f OpFlags) Has(m OpFlags) bool { return f&m == m }

// OpInfo describes one opcode. HdrLen counts the BTH and every extension
// header; Offset[e] is the byte offset of extension header e from the start
// of the BTH, valid only when the opcode has it (Flags&(1<<e) != 0).
type OpInfo struct {
	Name      string
	Transport Transport
	Flags     OpFlags
	HdrLen    int
	Offset    [NumExt]uint8
}

// Valid reports whether the opcode is one this package decodes.
func (oi *OpInfo) Valid() bool { return oi.Name != "" }

// Has reports whether the opcode carries extension header e.
func (oi *OpInfo) Has(e Ext) bool { return oi.Flags&(1<<e) != 0 }

// Info returns the table entry of the opcode. Undecoded opcodes return an
// entry whose Valid() is false.
func (o Opcode) Info() *OpInfo { return &opTable[o] }

// Valid reports whether the opcode is one this package decodes.
func (o Opcode) Valid() bool { return opTable[o].Name != "" }

// String returns the IBTA name ("RC_SEND_ONLY") or "opcode(0xNN)".
func (o Opcode) String() string {
	if n := opTable[o].Name; n != "" {
		return n
	}
	return fmt.Sprintf("opcode(0x%02x)", uint8(o))
}

// unsupported tells a reserved opcode (ReasonInvalid) from one that is
// defined by the IBA but not decoded by the emulator (ReasonUnsupported):
// RD, XRC, manufacturer-specific, and RC FLUSH / ATOMIC WRITE.
func (o Opcode) unsupported() bool {
	switch o.Transport() {
	case TransportRD, TransportXRC, TransportVendor:
		return true
	}
	return o == opRCFlush || o == opRCAtomicWrite
}

// b0 is the BTH length, the start of every extension header offset below.
const (
	b0 = BTHSize
)

// opTable is the one opcode table; everything else (decoders, builders,
// lengths, names) asks it. Offsets are from the start of the BTH, as in
// rxe_opcode.c. TestOpTable checks every entry against the wire order.
var opTable = [256]OpInfo{
	RCSendFirst:              {"RC_SEND_FIRST", TransportRC, Request | Send | First | Payload, b0, [NumExt]uint8{}},
	RCSendMiddle:             {"RC_SEND_MIDDLE", TransportRC, Request | Send | Middle | Payload, b0, [NumExt]uint8{}},
	RCSendLast:               {"RC_SEND_LAST", TransportRC, Request | Send | Last | Payload, b0, [NumExt]uint8{}},
	RCSendLastWithImmediate:  {"RC_SEND_LAST_WITH_IMMEDIATE", TransportRC, Request | Send | Last | Payload | HasImmDt, b0 + 4, [NumExt]uint8{ExtImmDt: b0}},
	RCSendOnly:               {"RC_SEND_ONLY", TransportRC, Request | Send | Only | Payload, b0, [NumExt]uint8{}},
	RCSendOnlyWithImmediate:  {"RC_SEND_ONLY_WITH_IMMEDIATE", TransportRC, Request | Send | Only | Payload | HasImmDt, b0 + 4, [NumExt]uint8{ExtImmDt: b0}},
	RCWriteFirst:             {"RC_RDMA_WRITE_FIRST", TransportRC, Request | Write | First | Payload | HasRETH, b0 + 16, [NumExt]uint8{ExtRETH: b0}},
	RCWriteMiddle:            {"RC_RDMA_WRITE_MIDDLE", TransportRC, Request | Write | Middle | Payload, b0, [NumExt]uint8{}},
	RCWriteLast:              {"RC_RDMA_WRITE_LAST", TransportRC, Request | Write | Last | Payload, b0, [NumExt]uint8{}},
	RCWriteLastWithImmediate: {"RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", TransportRC, Request | Write | Last | Payload | HasImmDt, b0 + 4, [NumExt]uint8{ExtImmDt: b0}},
	RCWriteOnly:              {"RC_RDMA_WRITE_ONLY", TransportRC, Request | Write | Only | Payload | HasRETH, b0 + 16, [NumExt]uint8{ExtRETH: b0}},
	RCWriteOnlyWithImmediate: {"RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", TransportRC, Request | Write | Only | Payload | HasRETH | HasImmDt, b0 + 20, [NumExt]uint8{ExtRETH: b0, ExtImmDt: b0 + 16}},
	RCReadRequest:            {"RC_RDMA_READ_REQUEST", TransportRC, Request | Read | Only | HasRETH, b0 + 16, [NumExt]uint8{ExtRETH: b0}},
	RCReadResponseFirst:      {"RC_RDMA_READ_RESPONSE_FIRST", TransportRC, Response | Read | First | Payload | HasAETH, b0 + 4, [NumExt]uint8{ExtAETH: b0}},
	RCReadResponseMiddle:     {"RC_RDMA_READ_RESPONSE_MIDDLE", TransportRC, Response | Read | Middle | Payload, b0, [NumExt]uint8{}},
	RCReadResponseLast:       {"RC_RDMA_READ_RESPONSE_LAST", TransportRC, Response | Read | Last | Payload | HasAETH, b0 + 4, [NumExt]uint8{ExtAETH: b0}},
	RCReadResponseOnly:       {"RC_RDMA_READ_RESPONSE_ONLY", TransportRC, Response | Read | Only | Payload | HasAETH, b0 + 4, [NumExt]uint8{ExtAETH: b0}},
	RCAcknowledge:            {"RC_ACKNOWLEDGE", TransportRC, Ack | Only | HasAETH, b0 + 4, [NumExt]uint8{ExtAETH: b0}},
	RCAtomicAcknowledge:      {"RC_ATOMIC_ACKNOWLEDGE", TransportRC, Ack | Atomic | Only | HasAETH | HasAtomicAckETH, b0 + 12, [NumExt]uint8{ExtAETH: b0, ExtAtomicAckETH: b0 + 4}},
	RCCompareSwap:            {"RC_COMPARE_SWAP", TransportRC, Request | Atomic | Only | HasAtomicETH, b0 + 28, [NumExt]uint8{ExtAtomicETH: b0}},
	RCFetchAdd:               {"RC_FETCH_ADD", TransportRC, Request | Atomic | Only | HasAtomicETH, b0 + 28, [NumExt]uint8{ExtAtomicETH: b0}},
	RCSendLastWithInvalidate: {"RC_SEND_LAST_WITH_INVALIDATE", TransportRC, Request | Send | Last | Payload | HasIETH, b0 + 4, [NumExt]uint8{ExtIETH: b0}},
	RCSendOnlyWithInvalidate: {"RC_SEND_ONLY_WITH_INVALIDATE", TransportRC, Request | Send | Only | Payload | HasIETH, b0 + 4, [NumExt]uint8{ExtIETH: b0}},

	UCSendFirst:              {"UC_SEND_FIRST", TransportUC, Request | Send | First | Payload, b0, [NumExt]uint8{}},
	UCSendMiddle:             {"UC_SEND_MIDDLE", TransportUC, Request | Send | Middle | Payload, b0, [NumExt]uint8{}},
	UCSendLast:               {"UC_SEND_LAST", TransportUC, Request | Send | Last | Payload, b0, [NumExt]uint8{}},
	UCSendLastWithImmediate:  {"UC_SEND_LAST_WITH_IMMEDIATE", TransportUC, Request | Send | Last | Payload | HasImmDt, b0 + 4, [NumExt]uint8{ExtImmDt: b0}},
	UCSendOnly:               {"UC_SEND_ONLY", TransportUC, Request | Send | Only | Payload, b0, [NumExt]uint8{}},
	UCSendOnlyWithImmediate:  {"UC_SEND_ONLY_WITH_IMMEDIATE", TransportUC, Request | Send | Only | Payload | HasImmDt, b0 + 4, [NumExt]uint8{ExtImmDt: b0}},
	UCWriteFirst:             {"UC_RDMA_WRITE_FIRST", TransportUC, Request | Write | First | Payload | HasRETH, b0 + 16, [NumExt]uint8{ExtRETH: b0}},
	UCWriteMiddle:            {"UC_RDMA_WRITE_MIDDLE", TransportUC, Request | Write | Middle | Payload, b0, [NumExt]uint8{}},
	UCWriteLast:              {"UC_RDMA_WRITE_LAST", TransportUC, Request | Write | Last | Payload, b0, [NumExt]uint8{}},
	UCWriteLastWithImmediate: {"UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", TransportUC, Request | Write | Last | Payload | HasImmDt, b0 + 4, [NumExt]uint8{ExtImmDt: b0}},
	UCWriteOnly:              {"UC_RDMA_WRITE_ONLY", TransportUC, Request | Write | Only | Payload | HasRETH, b0 + 16, [NumExt]uint8{ExtRETH: b0}},
	UCWriteOnlyWithImmediate: {"UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", TransportUC, Request | Write | Only | Payload | HasRETH | HasImmDt, b0 + 20, [NumExt]uint8{ExtRETH: b0, ExtImmDt: b0 + 16}},

	UDSendOnly:              {"UD_SEND_ONLY", TransportUD, Request | Send | Only | Payload | HasDETH, b0 + 8, [NumExt]uint8{ExtDETH: b0}},
	UDSendOnlyWithImmediate: {"UD_SEND_ONLY_WITH_IMMEDIATE", TransportUD, Request | Send | Only | Payload | HasDETH | HasImmDt, b0 + 12, [NumExt]uint8{ExtDETH: b0, ExtImmDt: b0 + 8}},

	// An IB CN carries nothing after the BTH: BECN set, DestQP the QP whose
	// packet arrived with FECN (Annex A10; Linux IB_OPCODE_CNP).
	IBCNOpcode: {"CNP_IB", TransportCNP, Notify | Only, b0, [NumExt]uint8{}},
	CNPOpcode:  {"CNP", TransportCNP, Notify | Only | HasCNP, b0 + 16, [NumExt]uint8{ExtCNP: b0}},
}
