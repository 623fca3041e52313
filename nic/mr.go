package nic

import (
	"errors"
	"fmt"
)

// PD is a protection domain: QPs, MRs and AHs of one PD work together only.
type PD struct {
	nic *NIC
	id  uint32
}

// AllocPD creates a protection domain (ibv_alloc_pd).
func (n *NIC) AllocPD() *PD {
	n.nextPD++
	return &PD{nic: n, id: n.nextPD}
}

// MR is a registered memory region backed by a caller's byte slice. Remote
// peers name it by RKey and a virtual address in [Addr, Addr+Len); local
// work requests by LKey. As on a real NIC the bytes are the caller's: the
// NIC reads and writes them in place.
type MR struct {
	pd     *PD
	buf    []byte
	addr   uint64
	key    uint32
	access AccessFlags
	valid  bool
}

// Addr is the region's base virtual address.
func (mr *MR) Addr() uint64 { return mr.addr }

// Len is the region's length.
func (mr *MR) Len() int { return len(mr.buf) }

// LKey and RKey are the region's keys (equal, as on mlx5).
func (mr *MR) LKey() uint32 { return mr.key }
func (mr *MR) RKey() uint32 { return mr.key }

// Buf is the memory the region covers.
func (mr *MR) Buf() []byte { return mr.buf }

// Access returns the region's access flags.
func (mr *MR) Access() AccessFlags { return mr.access }

// Valid reports whether the region may be used (not deregistered, not
// invalidated by a SEND with Invalidate).
func (mr *MR) Valid() bool { return mr.valid }

// SGE is one scatter/gather element (struct ibv_sge).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// mrPageAlign aligns region addresses so that addresses look like a host's.
const mrPageAlign = 4096

// mrVABase is where the NIC starts handing out virtual addresses; a
// non-zero base catches a peer that sends an offset instead of an address.
const mrVABase = 0x7f00_0000_0000

// RegMR registers buf with access rights (ibv_reg_mr). Remote write and
// remote atomic need local write, as in verbs (EINVAL otherwise).
func (pd *PD) RegMR(buf []byte, access AccessFlags) (*MR, error) {
	n := pd.nic
	switch {
	case access&^accessKnown != 0:
		return nil, fmt.Errorf("reg_mr: unknown access flags 0x%x", uint32(access&^accessKnown))
	case access&(IBV_ACCESS_REMOTE_WRITE|IBV_ACCESS_REMOTE_ATOMIC) != 0 && access&IBV_ACCESS_LOCAL_WRITE == 0:
		return nil, errors.New("reg_mr: remote write or atomic access needs IBV_ACCESS_LOCAL_WRITE")
	case len(buf) == 0:
		return nil, errors.New("reg_mr: empty buffer")
	}
	idx := len(n.mrs)
	if idx >= 1<<24 {
		return nil, errors.New("reg_mr: out of memory keys")
	}
	n.mrKeyGen++
	mr := &MR{pd: pd, buf: buf, addr: n.nextVA, key: uint32(idx)<<8 | uint32(n.mrKeyGen), access: access, valid: true}
	n.nextVA += (uint64(len(buf)) + 2*mrPageAlign - 1) &^ (mrPageAlign - 1) // plus a guard page
	n.mrs = append(n.mrs, mr)
	return mr, nil
}

// Dereg deregisters the region (ibv_dereg_mr): its keys stop working.
func (mr *MR) Dereg() error {
	if !mr.valid && mr.buf == nil {
		return errors.New("dereg_mr: not registered")
	}
	n := mr.pd.nic
	n.mrs[mr.key>>8] = nil
	mr.valid = false
	mr.buf = nil
	return nil
}

// mrCheck is why a memory access was refused.
type mrCheck uint8

const (
	mrOK        mrCheck = iota
	mrBadKey            // no such key, deregistered or invalidated
	mrBadPD             // region of another protection domain
	mrNoAccess          // the region lacks the access right
	mrOutOfBand         // [va, va+len) is not inside the region
)

// lookup returns the bytes [va, va+length) of the region named by key,
// checking PD, access and bounds (IBA memory protection; rxe's lookup_mr
// and mr_check_range).
func (n *NIC) lookup(pd *PD, key uint32, va uint64, length uint32, need AccessFlags) ([]byte, *MR, mrCheck) {
	idx := int(key >> 8)
	if idx >= len(n.mrs) {
		return nil, nil, mrBadKey
	}
	mr := n.mrs[idx]
	switch {
	case mr == nil || !mr.valid || mr.key != key:
		return nil, nil, mrBadKey
	case mr.pd != pd:
		return nil, nil, mrBadPD
	case mr.access&need != need:
		return nil, nil, mrNoAccess
	case va < mr.addr || va-mr.addr > uint64(len(mr.buf)) || uint64(length) > uint64(len(mr.buf))-(va-mr.addr):
		return nil, nil, mrOutOfBand
	}
	off := va - mr.addr
	return mr.buf[off : off+uint64(length)], mr, mrOK
}

// sgl is a gather or scatter list resolved against memory regions.
type sgl struct {
	sge  [MaxSGE]SGE
	n    int
	size uint32 // total length
}

// MaxSGE is the largest scatter/gather list a work request may carry.
const MaxSGE = 8

func (s *sgl) set(list []SGE) error {
	if len(list) > MaxSGE {
		return fmt.Errorf("%d SGEs, at most %d", len(list), MaxSGE)
	}
	s.n = copy(s.sge[:], list)
	s.size = 0
	for _, e := range list {
		s.size += e.Length
	}
	return nil
}

// check validates every element against the regions of pd.
func (n *NIC) checkSGL(pd *PD, s *sgl, need AccessFlags) bool {
	for i := range s.n {
		e := &s.sge[i]
		if _, _, r := n.lookup(pd, e.LKey, e.Addr, e.Length, need); r != mrOK {
			return false
		}
	}
	return true
}

// copyOut copies len(dst) bytes starting at byte off of the list into dst
// (gather). The list was checked.
func (n *NIC) copyOut(pd *PD, s *sgl, off uint32, dst []byte) {
	for i := 0; i < s.n && len(dst) > 0; i++ {
		e := &s.sge[i]
		if off >= e.Length {
			off -= e.Length
			continue
		}
		b, _, _ := n.lookup(pd, e.LKey, e.Addr+uint64(off), e.Length-off, 0)
		k := copy(dst, b)
		dst = dst[k:]
		off = 0
	}
}

// copyIn copies src into the list starting at byte off (scatter). The list
// was checked.
func (n *NIC) copyIn(pd *PD, s *sgl, off uint32, src []byte) {
	for i := 0; i < s.n && len(src) > 0; i++ {
		e := &s.sge[i]
		if off >= e.Length {
			off -= e.Length
			continue
		}
		b, _, _ := n.lookup(pd, e.LKey, e.Addr+uint64(off), e.Length-off, 0)
		k := copy(b, src)
		src = src[k:]
		off = 0
	}
}

// contiguous returns the list's bytes [off, off+k) as one slice when they
// lie in one element, so the builder can avoid a gather copy.
func (n *NIC) contiguous(pd *PD, s *sgl, off, k uint32) ([]byte, bool) {
	for i := 0; i < s.n; i++ {
		e := &s.sge[i]
		if off >= e.Length {
			off -= e.Length
			continue
		}
		if e.Length-off < k {
			return nil, false
		}
		b, _, _ := n.lookup(pd, e.LKey, e.Addr+uint64(off), k, 0)
		return b, true
	}
	return nil, k == 0
}
