package nicd

import (
	"errors"
	"fmt"

	"github.com/emufabric/emufabric/nic"
	"golang.org/x/sys/unix"
)

// Client memory: a region is a memfd the client sent over the control
// socket, mapped shared here, so the engine reads and writes the client's
// pages in place (an RNIC's DMA).

// unmap unmaps one mapping the engine no longer uses.
func (s *session) unmap(mem []byte) {
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	for i, m := range s.maps {
		if len(m) > 0 && len(mem) > 0 && &m[0] == &mem[0] {
			unix.Munmap(m)
			s.maps = append(s.maps[:i], s.maps[i+1:]...)
			return
		}
	}
}

// unmapAll unmaps every region the session mapped; idempotent.
func (s *session) unmapAll() {
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	for _, m := range s.maps {
		unix.Munmap(m)
	}
	s.maps = nil
}

// regMR maps the memfd the client sent with the request and registers it.
// The memfd must be sealed against shrinking (F_SEAL_SHRINK): a client
// that truncated a mapped file would otherwise make the daemon's next
// access to it a SIGBUS.
func (s *session) regMR(req *Request, fd int) (*Response, error) {
	if fd < 0 {
		return nil, errors.New("reg_mr: no memfd received with the request (send it as SCM_RIGHTS in the same message)")
	}
	mem, err := mapMemfd(fd, req.Length)
	unix.Close(fd) // the mapping keeps the file
	if err != nil {
		return nil, fmt.Errorf("reg_mr: %w", err)
	}
	s.mapMu.Lock()
	s.maps = append(s.maps, mem)
	s.mapMu.Unlock()
	var info MRInfo
	err = s.do(func() error {
		mr, err := s.pd.RegMR(mem, req.Access)
		if err != nil {
			return err
		}
		h := s.handleID()
		s.mrs[h] = &mrEntry{mr: mr, mem: mem}
		info = MRInfo{Handle: h, Addr: mr.Addr(), Length: uint64(mr.Len()), LKey: mr.LKey(), RKey: mr.RKey()}
		return nil
	})
	if err != nil {
		s.unmap(mem)
		return nil, err
	}
	return &Response{MR: &info}, nil
}

// mapMemfd checks fd (a regular file, sealed against shrinking, at least
// length bytes) and maps its first length bytes shared.
func mapMemfd(fd int, length uint64) ([]byte, error) {
	if length == 0 || length > 1<<40 {
		return nil, fmt.Errorf("length %d out of 1..2^40", length)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errors.New("the descriptor is not a memfd (not a regular file)")
	}
	if uint64(st.Size) < length {
		return nil, fmt.Errorf("the memfd holds %d bytes, fewer than length %d", st.Size, length)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("F_GET_SEALS: %w (create the memfd with MFD_ALLOW_SEALING)", err)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return nil, errors.New("the memfd is not sealed with F_SEAL_SHRINK")
	}
	mem, err := unix.Mmap(fd, 0, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return mem, nil
}

func (s *session) deregMR(req *Request) (*Response, error) {
	var mem []byte
	err := s.do(func() error {
		m, ok := s.mrs[req.MR]
		if !ok {
			return fmt.Errorf("dereg_mr: no region %d", req.MR)
		}
		// The responder keeps slices of a region across packets (a WRITE
		// in progress, READ responses); unmapping under it would be our
		// bug, so a region goes only when no QP of the session is live.
		for _, q := range s.qps {
			if q.qp.State() != nic.IBV_QPS_RESET {
				return fmt.Errorf("dereg_mr: QP %d is in %v: destroy the session's QPs first", q.qp.QPN(), q.qp.State())
			}
		}
		delete(s.mrs, req.MR)
		mem = m.mem
		return m.mr.Dereg()
	})
	if err != nil {
		return nil, err
	}
	s.unmap(mem)
	return &Response{}, nil
}
