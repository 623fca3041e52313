package lab

import (
	"encoding/binary"
	"hash/fnv"
)

// TopologyDigest is a digest of what a switch's routes are computed from:
// the nodes (name, kind, address), their ports in order, the links, and
// the switches' explicit routes. Two copies of a lab file that differ in
// any of these make switches that route inconsistently (each computes
// every route from its own copy); the switches' link-state advertisements
// carry the digest so that a switch can tell (switchcore
// SetLinkStateTopology). Rates, delays, buffers and traffic do not enter
// it: they do not move a route. Never 0 (0 means "not given").
func (s *Spec) TopologyDigest() uint64 {
	h := fnv.New64a()
	var b [8]byte
	str := func(v string) {
		binary.BigEndian.PutUint16(b[:2], uint16(len(v)))
		h.Write(b[:2])
		h.Write([]byte(v))
	}
	num := func(v uint64) {
		binary.BigEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	num(uint64(len(s.Nodes)))
	for _, n := range s.Nodes {
		str(n.Name)
		str(string(n.Kind))
		h.Write(n.IPv4[:])
		num(uint64(n.LID))
		num(uint64(len(n.Ports)))
		for _, p := range n.Ports {
			str(p.Name)
		}
		num(uint64(len(n.Routes)))
		for _, r := range n.Routes {
			str(r.Dst)
			h.Write(r.Prefix[:])
			num(uint64(r.Len))
			num(uint64(len(r.Via)))
			for _, v := range r.Via {
				num(uint64(v))
			}
		}
	}
	num(uint64(len(s.Links)))
	for _, l := range s.Links {
		str(l.A.Node.Name)
		str(l.A.Name)
		str(l.B.Node.Name)
		str(l.B.Name)
	}
	return max(h.Sum64(), 1)
}
