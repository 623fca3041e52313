// Package bth is the transport layer of emufabric on the wire: the
// InfiniBand Base Transport Header and its extension headers, the one
// opcode table, PSN arithmetic, the ICRC, and whole RoCEv2 and native IB
// packets built and decoded byte-exact.
//
// # Layout
//
//	opcode.go     Opcode, the [256]OpInfo table (name, transport, flags,
//	              header length, extension-header offsets), in the manner of
//	              Linux rxe_opcode.c. Everything else asks it.
//	bth.go        BTH: the 12-byte view, BTHFields, Encode, Validate.
//	reth.go, aeth.go, atomic.go, deth.go, immdt.go, cnp.go
//	              the extension headers RETH, AETH (+ Syndrome: ACK credit
//	              codes, RNR timers, NAK codes), AtomicETH, AtomicAckETH,
//	              DETH, ImmDt, IETH, and the CNP body.
//	transport.go  Headers: decode BTH..pad with the per-packet rules;
//	              EncodeTransport writes BTH..pad.
//	format.go     Headers.String, a one-line summary for logs and tools.
//	psn.go        24-bit PSN arithmetic.
//	icrc.go       the ICRC for RoCEv2/IPv4, RoCEv2/IPv6, IB local and IB
//	              global, with the masks listed in one place.
//	roce.go       EncodeRoCE / Packet.Decode: Ethernet [802.1Q] IPv4|IPv6
//	              UDP(4791) BTH ... ICRC [Ethernet padding].
//	ib.go         EncodeIB / IBPacket.Decode: LRH [GRH] BTH ... ICRC VCRC.
//	layers.go     gopacket layers (BTH, each extension header, IBPayload),
//	              UDP port 4791 registration, DecodingLayers.
//
// # Conventions
//
// Header views are byte-slice types (BTH, RETH, ...) whose accessors do not
// bounds-check; call Validate, or decode through Headers, Packet or
// IBPacket, first. Each header has a Fields struct and an Encode method.
// Decoders allocate nothing on success and return a *wire.Error naming the
// header and the field on failure; no input makes them panic (fuzzed).
// Builders write into the caller's buffer and compute every length, PadCnt,
// the IPv4 checksum, the ICRC and the VCRC.
//
// The ICRC is always found from the IP/UDP length or the LRH PktLen, never
// from the end of the frame: a RoCEv2 frame shorter than 60 bytes carries
// Ethernet padding after its ICRC.
//
// # What is not checked here
//
// Rules that need connection state are the transport engine's: PSN order,
// PMTU-sized FIRST/MIDDLE packets, a UD payload larger than the PMTU, MSN
// and credit accounting.
//
// # Confidence
//
// The RoCEv2 ICRC and every RoCEv2 header are checked against captures
// built by an independent implementation (testdata/rocev2_*.pcap) and a
// second, bit-at-a-time CRC engine in the tests. For native IB two points
// rest on the specification as read, without a hardware capture to confirm
// them: that the ICRC of a packet with a GRH masks the whole LRH (the same
// rule as RoCEv2's 64 bits of ones), and the byte order of the VCRC (wire
// owns the VCRC and documents its choice).
package bth
