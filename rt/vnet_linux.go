package rt

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// VnetHdrLen is the size of struct virtio_net_hdr (include/uapi/linux/
// virtio_net.h), which precedes every frame on a TAP opened with
// IFF_VNET_HDR (the default TUNSETVNETHDRSZ).
const VnetHdrLen = 10

// VnetHdr is a view of struct virtio_net_hdr. Without TUNSETVNETLE/BE the
// kernel uses the legacy virtio convention: fields in host byte order.
//
//	u8  flags        VIRTIO_NET_HDR_F_NEEDS_CSUM: complete the checksum
//	u8  gso_type     VIRTIO_NET_HDR_GSO_{NONE,TCPV4,TCPV6,UDP_L4} | _ECN
//	u16 hdr_len      length of the headers to replicate (a hint)
//	u16 gso_size     payload bytes per segment (the MSS)
//	u16 csum_start   where checksumming starts (the L4 header)
//	u16 csum_offset  where, from csum_start, the checksum is stored
type VnetHdr []byte

func (h VnetHdr) Flags() uint8       { return h[0] }
func (h VnetHdr) GSOType() uint8     { return h[1] }
func (h VnetHdr) HdrLen() uint16     { return binary.NativeEndian.Uint16(h[2:]) }
func (h VnetHdr) GSOSize() uint16    { return binary.NativeEndian.Uint16(h[4:]) }
func (h VnetHdr) CsumStart() uint16  { return binary.NativeEndian.Uint16(h[6:]) }
func (h VnetHdr) CsumOffset() uint16 { return binary.NativeEndian.Uint16(h[8:]) }
func (h VnetHdr) NeedsCsum() bool    { return h[0]&unix.VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 }
func (h VnetHdr) GSOKind() uint8     { return h[1] &^ unix.VIRTIO_NET_HDR_GSO_ECN }
func (h VnetHdr) ECN() bool          { return h[1]&unix.VIRTIO_NET_HDR_GSO_ECN != 0 }

// VnetFields is the decoded header, for building one.
type VnetFields struct {
	Flags, GSOType                         uint8
	HdrLen, GSOSize, CsumStart, CsumOffset uint16
}

// Encode writes f into h.
func (h VnetHdr) Encode(f *VnetFields) {
	h[0], h[1] = f.Flags, f.GSOType
	binary.NativeEndian.PutUint16(h[2:], f.HdrLen)
	binary.NativeEndian.PutUint16(h[4:], f.GSOSize)
	binary.NativeEndian.PutUint16(h[6:], f.CsumStart)
	binary.NativeEndian.PutUint16(h[8:], f.CsumOffset)
}

func (h VnetHdr) String() string {
	return fmt.Sprintf("vnet{flags %#x gso %#x hdr_len %d gso_size %d csum %d+%d}",
		h.Flags(), h.GSOType(), h.HdrLen(), h.GSOSize(), h.CsumStart(), h.CsumOffset())
}
