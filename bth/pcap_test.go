package bth

import (
	"encoding/binary"
	"os"
	"testing"
)

// Classic pcap (not pcapng), as the golden captures are stored: a 24-byte
// file header, then per record a 16-byte header and the bytes.

const pcapLinkEthernet = 1

func readPcap(t testing.TB, path string) (linkType uint32, frames [][]byte) {
	t.Helper()
	d, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) < 24 {
		t.Fatalf("%s: %d bytes, no pcap header", path, len(d))
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(d) {
	case 0xa1b2c3d4:
		bo = binary.LittleEndian
	case 0xd4c3b2a1:
		bo = binary.BigEndian
	default:
		t.Fatalf("%s: not a classic pcap file", path)
	}
	linkType = bo.Uint32(d[20:])
	for off := 24; off < len(d); {
		if off+16 > len(d) {
			t.Fatalf("%s: truncated record header at %d", path, off)
		}
		incl := int(bo.Uint32(d[off+8:]))
		orig := int(bo.Uint32(d[off+12:]))
		off += 16
		if off+incl > len(d) || incl != orig {
			t.Fatalf("%s: bad record at %d (incl %d, orig %d)", path, off, incl, orig)
		}
		frames = append(frames, d[off:off+incl])
		off += incl
	}
	return linkType, frames
}

func writePcap(t testing.TB, path string, linkType uint32, frames [][]byte) {
	t.Helper()
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, 0xa1b2c3d4)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = binary.LittleEndian.AppendUint32(b, 0) // thiszone
	b = binary.LittleEndian.AppendUint32(b, 0) // sigfigs
	b = binary.LittleEndian.AppendUint32(b, 65535)
	b = binary.LittleEndian.AppendUint32(b, linkType)
	for i, f := range frames {
		b = binary.LittleEndian.AppendUint32(b, uint32(i)) // seconds: the frame index
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
