package rt

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/emufabric/emufabric/frame"
)

// Shm is a link whose frames travel through two rings in shared memory,
// one per direction, set up over a connected Seqpacket. Between two
// processes on one machine it moves a frame with one copy into the ring and
// one out of it, and no system call while both sides are busy, where a
// socket costs a copy into and out of the kernel and a system call per
// batch (the cost that bounded `perf write_bw` between emunics). The
// design is virtio's and vhost-user's: single-producer single-consumer
// rings, and a notification (an eventfd) only toward a side that said it is
// going to sleep.
//
// The socket stays open for the life of the link: it carries the setup
// (the memfd, sealed at its size, and the eventfds, SCM_RIGHTS) and its
// acknowledgement and, by its end, tells each side that the other one is
// gone, also after kill -9, which a ring cannot.
//
// Like a Seqpacket, nothing is lost: a full ring makes the writer wait.
type Shm struct {
	sp     *Seqpacket
	mem    []byte
	tx, rx ring
	closed atomic.Bool // Close was called
	gone   atomic.Bool // the peer closed its end (or died)
	// peerDown is the state the peer last announced (SetState); onPeer,
	// if set, hears each announcement.
	peerDown atomic.Bool
	onPeer   atomic.Pointer[func(PeerState)]
	watchWG  sync.WaitGroup

	rmu, wmu sync.Mutex
	once     sync.Once

	// Corrupt counts ring contents a correct peer never writes (a record
	// length out of range, a position off a record boundary, more published
	// than the ring holds); each ends the link with an error.
	Corrupt atomic.Uint64

	// rxSleeps and txFull count this side's waits (see Waiter).
	rxSleeps, txFull atomic.Uint64

	// pub is the send ring's published head, for TxBacklog (published
	// is the writer's, under wmu, which a full ring's Write holds while it
	// sleeps); mmu keeps Close from unmapping the ring under TxBacklog.
	pub atomic.Uint32
	mmu sync.Mutex
}

var _ Waiter = (*Shm)(nil)

// Waits implements Waiter.
func (s *Shm) Waits() (rxSleeps, txFull uint64) { return s.rxSleeps.Load(), s.txFull.Load() }

var _ Link = (*Shm)(nil)

const (
	// shmRingBytes is one direction's ring: frames are packed in it as
	// records (shmHdr bytes of length, then the frame, rounded up to a
	// cache line), so it holds about a thousand 4 KiB frames or tens of
	// thousands of small ones. Its depth is what absorbs a busy process's
	// late wake-ups: with 256 frames (1 MiB) the switch's transmitter
	// stalled on the ring toward a descheduled emunic 319 times in a
	// write_bw run and write_bw averaged 5.6 Gb/s; with 4 MiB, 8 stalls and
	// 8-10 Gb/s. Only pages the frames touch become resident.
	shmRingBytes = 4 << 20
	shmHdr       = 8
	shmAlign     = 64
	// shmWrap in a record's length says the rest of the ring up to its end
	// is unused: the next record starts at the ring's beginning.
	shmWrap = 0xffffffff
	// shmCtl is a ring's control block: four words, each on its own cache
	// line so the producer's and consumer's stores do not share one.
	shmCtl      = 4 * 64
	shmRingSize = shmCtl + shmRingBytes
	shmMagic    = "emufabric-shm-v2"
	// After the setup, the socket carries only the two ends' link state
	// (SetState), as a PHY's carrier tells the far end that this one was
	// set down; any other message ends the link.
	shmStateDown = "emufabric-link-down"
	shmStateUp   = "emufabric-link-up"
	// shmSetupTimeout bounds the wait for the creator's setup message and
	// for the joiner's acknowledgement.
	shmSetupTimeout = 10 * time.Second
)

// ring is one direction's view of a ring. The control words are shared
// with the peer process: head (bytes ever published) is written by the
// producer only, tail (bytes ever consumed) by the consumer only; both wrap
// at 2^32, which shmRingBytes divides. The sleeping words are set by the
// side going to sleep and cleared by whoever wakes it.
type ring struct {
	head, tail   *uint32
	consSleeping *uint32
	prodSleeping *uint32
	data         []byte
	// The ring's two eventfds: "frames ready" (the producer notifies, the
	// consumer waits) and "room" (the other way round). The one this side
	// waits on is an *os.File read through the runtime's poller; the one it
	// notifies is a raw descriptor, kept out of the poller (it would wake
	// this side's poller at every notification) and never passed through
	// os.File.Fd, which would switch the shared open file to blocking mode.
	waitEv   *os.File
	waitRC   syscall.RawConn // waitEv's, for raw reads (rawio_linux.go)
	notifyFd int
	buf8     [8]byte
	// pos is this side's own position (head of the ring it produces on,
	// tail of the one it consumes), kept here and only stored to the
	// shared word: the peer can write anything into shared memory, so
	// offsets are never computed from a word it could have changed except
	// its own, which drain checks.
	pos uint32
	// published is the head last stored to the shared word (producer
	// side).
	published uint32
}

func (r *ring) init(mem []byte, waitEv *os.File, notifyFd int) {
	r.head = (*uint32)(unsafe.Pointer(&mem[0]))
	r.tail = (*uint32)(unsafe.Pointer(&mem[64]))
	r.consSleeping = (*uint32)(unsafe.Pointer(&mem[128]))
	r.prodSleeping = (*uint32)(unsafe.Pointer(&mem[192]))
	r.data = mem[shmCtl:shmRingSize:shmRingSize]
	r.waitEv, r.notifyFd = waitEv, notifyFd
	// An *os.File made from a descriptor always has a RawConn.
	r.waitRC, _ = waitEv.SyscallConn()
}

func recordSize(n int) uint32 {
	return uint32(shmHdr+n+shmAlign-1) &^ (shmAlign - 1)
}

// put writes frame b at byte position head if the ring has room behind
// tail, and returns the new head; ok is false when it does not fit yet. A
// record that would cross the ring's end is preceded by a wrap record.
func (r *ring) put(head, tail uint32, b []byte) (uint32, bool) {
	need := recordSize(len(b))
	off := head % shmRingBytes
	skip := uint32(0)
	if off+need > shmRingBytes {
		skip = shmRingBytes - off
	}
	if shmRingBytes-(head-tail) < skip+need {
		return head, false
	}
	if skip > 0 {
		binary.LittleEndian.PutUint32(r.data[off:], shmWrap)
		head += skip
		off = 0
	}
	binary.LittleEndian.PutUint32(r.data[off:], uint32(len(b)))
	copy(r.data[off+shmHdr:off+need], b)
	return head + need, true
}

// notify adds one to an eventfd. Its only failure, EAGAIN at a counter of
// 2^64-2, cannot happen to a counter its reader drains. Raw, as every
// system call a frame's way through the daemons makes (rawio_linux.go):
// through unix.Write, each notification of a sleeping peer also woke this
// process's sysmon thread, and a ping in a lab of three daemons paid six
// such wake-ups and their context switches.
func notify(fd int) {
	var one = [8]byte{1}
	rawWrite(uintptr(fd), one[:])
}

// wait blocks on this side's eventfd of the ring through the runtime's
// poller and drains it.
func (r *ring) wait() error {
	var rerr error
	err := r.waitRC.Read(func(fd uintptr) bool {
		for {
			switch _, e := rawRead(fd, r.buf8[:]); e {
			case nil:
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // the poller waits for a notification
			default:
				rerr = os.NewSyscallError("read", e)
				return true
			}
		}
	})
	if err != nil {
		return err
	}
	return rerr
}

// wake adds one to this side's own eventfd of the ring (the watcher wakes
// a sleeper that must see the peer gone).
func (r *ring) wake() {
	var one = [8]byte{1}
	r.waitRC.Write(func(fd uintptr) bool {
		rawWrite(fd, one[:])
		return true
	})
}

// ShmCreate makes the rings of a new link and hands them to the peer over
// sp, which must be connected to a process calling ShmJoin. The Shm owns
// sp from then on, also on error (it is closed).
func ShmCreate(sp *Seqpacket) (*Shm, error) {
	s, err := shmCreate(sp)
	if err != nil {
		sp.Close()
		return nil, fmt.Errorf("shared-memory link: %w", err)
	}
	return s, nil
}

func shmCreate(sp *Seqpacket) (*Shm, error) {
	mfd, err := unix.MemfdCreate("emufabric-link", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	defer unix.Close(mfd)
	if err := unix.Ftruncate(mfd, 2*shmRingSize); err != nil {
		return nil, os.NewSyscallError("ftruncate", err)
	}
	// Sealed at its size: a peer that truncated the memory would make our
	// next access to the rings a SIGBUS, which no recover catches.
	if _, err := unix.FcntlInt(uintptr(mfd), unix.F_ADD_SEALS, shmSeals); err != nil {
		return nil, os.NewSyscallError("fcntl F_ADD_SEALS", err)
	}
	var efds [4]int
	for i := range efds {
		if efds[i], err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
			for _, fd := range efds[:i] {
				unix.Close(fd)
			}
			return nil, os.NewSyscallError("eventfd", err)
		}
	}
	// The message goes before the mapping so that a failed send leaves
	// nothing mapped; the fds are dup'ed into the peer by the kernel.
	rights := unix.UnixRights(mfd, efds[0], efds[1], efds[2], efds[3])
	err = sendSetup(sp, rights)
	if err == nil {
		// The joiner answers once it has mapped the rings: a peer that
		// is not one (a plain seqpacket URI at the other end) is found
		// out here, not by traffic lost in rings nobody reads.
		err = waitAck(sp)
	}
	if err == nil {
		var s *Shm
		// Ring 0 carries creator -> joiner frames.
		if s, err = newShm(sp, mfd, efds, 0); err == nil {
			return s, nil
		}
	}
	for _, fd := range efds {
		unix.Close(fd)
	}
	return nil, err
}

// shmSeals fix the ring memory's size for its life.
const shmSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// waitAck reads the joiner's answer to the setup.
func waitAck(sp *Seqpacket) error {
	if err := sp.conn.SetReadDeadline(time.Now().Add(shmSetupTimeout)); err != nil {
		return err
	}
	b := make([]byte, 64)
	n, err := sp.conn.Read(b)
	sp.conn.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		return fmt.Errorf("waiting for the peer to take the rings: %w", err)
	case string(b[:n]) != shmMagic:
		return fmt.Errorf("the peer answered the ring setup with a %d-byte message, not the setup's acknowledgement (is its end of the link a plain seqpacket URI?)", n)
	}
	return nil
}

func sendSetup(sp *Seqpacket, rights []byte) error {
	var sendErr error
	err := sp.rc.Write(func(fd uintptr) bool {
		sendErr = unix.Sendmsg(int(fd), []byte(shmMagic), rights, nil, unix.MSG_DONTWAIT)
		return sendErr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	if sendErr != nil {
		return os.NewSyscallError("sendmsg", sendErr)
	}
	return nil
}

// ShmJoin takes the rings ShmCreate sent over sp. The Shm owns sp from then
// on, also on error (it is closed).
func ShmJoin(sp *Seqpacket) (*Shm, error) {
	s, err := shmJoin(sp)
	if err != nil {
		sp.Close()
		return nil, fmt.Errorf("shared-memory link: %w", err)
	}
	return s, nil
}

func shmJoin(sp *Seqpacket) (*Shm, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(5*4))
	if err := sp.conn.SetReadDeadline(time.Now().Add(shmSetupTimeout)); err != nil {
		return nil, err
	}
	n, oobn, _, _, err := sp.conn.ReadMsgUnix(buf, oob)
	sp.conn.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, fmt.Errorf("waiting for the peer's rings: %w", err)
	}
	fds, ferr := parseRights(oob[:oobn])
	if string(buf[:n]) != shmMagic || ferr != nil || len(fds) != 5 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if n == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("the peer's first message is not a ring setup (%d bytes, %d descriptors)", n, len(fds))
	}
	defer unix.Close(fds[0])
	for _, fd := range fds[1:] {
		// The flags of the open file description travel with it: the
		// eventfds are already non-blocking and close-on-exec is per fd.
		unix.CloseOnExec(fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil || st.Size != 2*shmRingSize {
		for _, fd := range fds[1:] {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the peer's ring memory is %d bytes, want %d (another emufabric version?)", st.Size, 2*shmRingSize)
	}
	if seals, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GET_SEALS, 0); err != nil || seals&shmSeals != shmSeals {
		for _, fd := range fds[1:] {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the peer's ring memory is not sealed at its size (seals %#x)", seals)
	}
	s, err := newShm(sp, fds[0], [4]int(fds[1:5]), 1)
	if err != nil {
		for _, fd := range fds[1:] {
			unix.Close(fd)
		}
		return nil, err
	}
	if _, err := sp.conn.Write([]byte(shmMagic)); err != nil {
		s.Close()
		return nil, fmt.Errorf("acknowledging the peer's rings: %w", err)
	}
	return s, nil
}

// ShmOver makes a freshly connected Seqpacket a Shm link: the side that
// accepted the connection creates the rings, the side that dialled joins
// them (the shm-listen / shm-dial port URIs). The setup waits for the peer
// at most shmSetupTimeout, or until stop is closed (a daemon closing):
// the socket is then closed under it.
func ShmOver(sp *Seqpacket, accepted bool, stop <-chan struct{}) (*Shm, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
			sp.Close()
		case <-done:
		}
	}()
	if accepted {
		return ShmCreate(sp)
	}
	return ShmJoin(sp)
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

// newShm maps the rings and starts the watcher. side 0 produces on ring 0,
// side 1 on ring 1; efds are ring 0's data and room, then ring 1's. On
// success the Shm owns efds.
func newShm(sp *Seqpacket, mfd int, efds [4]int, side int) (*Shm, error) {
	mem, err := unix.Mmap(mfd, 0, 2*shmRingSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	// efds: ring 0's data and room, ring 1's data and room. A producer
	// waits for room and notifies data; a consumer the other way round.
	wait := func(fd int) *os.File { return os.NewFile(uintptr(fd), "eventfd") } // non-blocking: Read parks in the poller
	s := &Shm{sp: sp, mem: mem}
	r0, r1 := mem[:shmRingSize:shmRingSize], mem[shmRingSize:]
	if side == 0 {
		s.tx.init(r0, wait(efds[1]), efds[0])
		s.rx.init(r1, wait(efds[2]), efds[3])
	} else {
		s.rx.init(r0, wait(efds[0]), efds[1])
		s.tx.init(r1, wait(efds[3]), efds[2])
	}
	s.watchWG.Add(1)
	go s.watch()
	return s, nil
}

// watch waits for the socket's end: the peer closed its link or died.
// Nothing is sent on the socket after the setup and its acknowledgement: a
// message is a peer that does not use the rings, and ends the link too.
func (s *Shm) watch() {
	defer s.watchWG.Done()
	var b [64]byte
	for {
		n, err := s.sp.conn.Read(b[:])
		if msg := string(b[:n]); err == nil && (msg == shmStateDown || msg == shmStateUp) {
			up := msg == shmStateUp
			s.peerDown.Store(!up)
			if fn := s.onPeer.Load(); fn != nil {
				(*fn)(PeerState{Up: up})
			}
			continue
		}
		break
	}
	s.gone.Store(true)
	// Wake this side's sleepers; they see gone and return.
	s.rx.wake()
	s.tx.wake()
}

// BatchSize implements Link.
func (s *Shm) BatchSize() int { return DefaultBatchSize }

// Read implements Link: it copies up to len(bufs) frames out of the
// receive ring, waiting for the first. The peer's end gives io.EOF once the
// ring is drained.
func (s *Shm) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	r := &s.rx
	for {
		if s.closed.Load() {
			return 0, ErrClosed
		}
		tail := r.pos
		head := atomic.LoadUint32(r.head)
		if head != tail {
			return s.drain(bufs, sizes, offset, head, tail)
		}
		if s.gone.Load() {
			// Look again: the peer may have published its last frames
			// between the load of head and its end.
			if atomic.LoadUint32(r.head) != tail {
				continue
			}
			return 0, io.EOF
		}
		// Say we sleep, then look again: a producer that published before
		// seeing the flag is caught by the second look (both are
		// sequentially consistent atomics: Dekker's handshake).
		atomic.StoreUint32(r.consSleeping, 1)
		if atomic.LoadUint32(r.head) != tail || s.gone.Load() || s.closed.Load() {
			atomic.StoreUint32(r.consSleeping, 0)
			continue
		}
		s.rxSleeps.Add(1)
		if err := r.wait(); err != nil {
			return 0, ErrClosed
		}
		atomic.StoreUint32(r.consSleeping, 0)
	}
}

func (s *Shm) drain(bufs [][]byte, sizes []int, offset int, head, tail uint32) (int, error) {
	r := &s.rx
	if (head|tail)%shmAlign != 0 {
		// Records start on cache lines: only a broken peer (or one that
		// wrote our tail) publishes anything else.
		s.Corrupt.Add(1)
		return 0, fmt.Errorf("shared-memory link: ring positions %d and %d are not record boundaries", tail, head)
	}
	var errOut error
	n := 0
	for tail != head && n < len(bufs) {
		avail := head - tail
		off := tail % shmRingBytes
		l := binary.LittleEndian.Uint32(r.data[off:])
		if l == shmWrap {
			if skip := shmRingBytes - off; skip <= avail {
				tail += skip
				continue
			}
		}
		need := recordSize(int(l))
		if l == 0 || l > frame.MaxFrame || avail > shmRingBytes || need > avail || off+need > shmRingBytes {
			// Only a broken peer writes this; the records after it
			// cannot be found, so the link ends.
			s.Corrupt.Add(1)
			r.pos = tail
			atomic.StoreUint32(r.tail, tail)
			return n, fmt.Errorf("shared-memory link: bad record at byte %d of the ring (length %d, %d bytes published)", off, l, avail)
		}
		if int(l) > len(bufs[n])-offset {
			errOut = ErrFrameTooLarge
		} else {
			sizes[n] = copy(bufs[n][offset:], r.data[off+shmHdr:off+shmHdr+l])
			n++
		}
		tail += need
	}
	r.pos = tail
	atomic.StoreUint32(r.tail, tail)
	if atomic.LoadUint32(r.prodSleeping) != 0 && atomic.CompareAndSwapUint32(r.prodSleeping, 1, 0) {
		notify(r.notifyFd)
	}
	return n, errOut
}

// Write implements Link: it copies every frame into the send ring, waiting
// for room when the ring is full (as a full socket buffer blocks).
func (s *Shm) Write(bufs [][]byte, offset int) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	r := &s.tx
	sent := 0
	for sent < len(bufs) {
		if s.closed.Load() {
			return sent, ErrClosed
		}
		if s.gone.Load() {
			return sent, os.NewSyscallError("shared-memory write", syscall.EPIPE)
		}
		if n := len(bufs[sent]) - offset; n > frame.MaxFrame || n == 0 {
			return sent, fmt.Errorf("shared-memory link: frame of %d bytes, want 1 to %d", n, frame.MaxFrame)
		}
		head := r.pos
		tail := atomic.LoadUint32(r.tail)
		start := head
		for sent < len(bufs) && len(bufs[sent])-offset <= frame.MaxFrame && len(bufs[sent]) > offset {
			var ok bool
			if head, ok = r.put(head, tail, bufs[sent][offset:]); !ok {
				break
			}
			sent++
		}
		if head == start {
			// Not even one frame fits: sleep until the consumer frees
			// room (the same handshake as Read's, mirrored).
			atomic.StoreUint32(r.prodSleeping, 1)
			if atomic.LoadUint32(r.tail) != tail || s.gone.Load() || s.closed.Load() {
				atomic.StoreUint32(r.prodSleeping, 0)
				continue
			}
			s.txFull.Add(1)
			if err := r.wait(); err != nil {
				return sent, ErrClosed
			}
			atomic.StoreUint32(r.prodSleeping, 0)
			continue
		}
		r.pos = head
		s.publish()
	}
	return sent, nil
}

// TryWrite copies one frame into the send ring if it has room and no Write
// is in progress, and reports whether it did; it never waits. A port sends
// with it straight from its loop when its writer has nothing queued (rt's
// directWriter): one copy and no hand-off to the writer goroutine.
func (s *Shm) TryWrite(b []byte) bool {
	if !s.wmu.TryLock() {
		return false
	}
	defer s.wmu.Unlock()
	if s.closed.Load() || s.gone.Load() || len(b) > frame.MaxFrame || len(b) == 0 {
		return false // the writer's path reports it
	}
	r := &s.tx
	head, ok := r.put(r.pos, atomic.LoadUint32(r.tail), b)
	if !ok {
		return false
	}
	r.pos = head
	s.publish()
	return true
}

// publish makes the send ring's records up to pos visible and wakes the
// consumer if it sleeps. Holding wmu. The store is a full fence (an XCHG
// on amd64), which the handshake with consSleeping needs.
func (s *Shm) publish() {
	r := &s.tx
	if r.pos == r.published {
		return
	}
	r.published = r.pos
	s.pub.Store(r.pos)
	atomic.StoreUint32(r.head, r.pos)
	if atomic.LoadUint32(r.consSleeping) != 0 && atomic.CompareAndSwapUint32(r.consSleeping, 1, 0) {
		notify(r.notifyFd)
	}
}

// TxBacklog implements Backlogger: the bytes of frames this side has
// published on its send ring that the peer has not read yet. Any
// goroutine. The peer's tail is shared memory it may have scribbled on: the
// answer is clamped to the ring.
func (s *Shm) TxBacklog() int {
	s.mmu.Lock()
	defer s.mmu.Unlock()
	if s.mem == nil {
		return 0
	}
	n := s.pub.Load() - atomic.LoadUint32(s.tx.tail)
	return int(min(n, shmRingBytes))
}

var _ Backlogger = (*Shm)(nil)

// Close implements Link: it ends the socket (the peer's Read then gives
// io.EOF), unblocks this side's Read and Write and unmaps the rings once
// they have returned.
//
// The order matters: the watcher, woken by the socket's close, notifies
// this side's eventfds (a Read or Write parked on them, or about to park,
// wakes and sees closed); only when both have returned are the eventfds
// closed and the memory unmapped, so no notify reaches a closed (possibly
// reused) descriptor and no copy touches unmapped memory.
func (s *Shm) Close() error {
	var err error
	s.once.Do(func() {
		s.closed.Store(true)
		err = s.sp.Close()
		s.watchWG.Wait()
		s.rmu.Lock()
		s.wmu.Lock()
		s.rx.waitEv.Close()
		s.tx.waitEv.Close()
		unix.Close(s.rx.notifyFd)
		unix.Close(s.tx.notifyFd)
		s.mmu.Lock()
		unix.Munmap(s.mem)
		s.mem = nil
		s.mmu.Unlock()
		s.wmu.Unlock()
		s.rmu.Unlock()
	})
	return err
}

// SetState tells the peer that this end of the link was set up or down
// (a link op), as the far end of a cable sees the carrier go. The rings
// keep carrying whatever is written: each end decides what a peer that is
// down means for its frames.
func (s *Shm) SetState(up bool) error {
	msg := shmStateUp
	if !up {
		msg = shmStateDown
	}
	_, err := s.sp.conn.Write([]byte(msg))
	return err
}

// PeerUp reports the state the peer last announced: up until it says
// otherwise.
func (s *Shm) PeerUp() bool { return !s.peerDown.Load() }

// PeerState implements StateLink: a ring link's peer is never silent (its
// death closes the socket, which ends the link).
func (s *Shm) PeerState() PeerState { return PeerState{Up: s.PeerUp()} }

// OnPeerState sets fn to hear every state the peer announces from now on,
// on the goroutine that watches the link (fn must not block). An
// announcement before it was set is in PeerState.
func (s *Shm) OnPeerState(fn func(PeerState)) { s.onPeer.Store(&fn) }
