package rt

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TAPConfig describes a TAP device to create.
type TAPConfig struct {
	// Name is the interface name (at most 15 bytes).
	Name string
	// NetNS is the namespace the device lives in. netns.None() (or the
	// zero value) means the caller's current namespace.
	NetNS netns.NsHandle
	// MTU is the interface's and the link's L3 MTU; TSO/GSO frames are
	// segmented to it. 0 keeps the kernel's default (1500).
	MTU int
	// NoOffload disables TSO/USO and checksum offload: the kernel then
	// hands over finished, MTU-sized frames (slower, for comparison).
	NoOffload bool
	// Up brings the interface up after creating it.
	Up bool
	// NoCoalesce makes Queue write every frame on its own instead of
	// merging segment trains into GSO frames (for comparison).
	NoCoalesce bool
}

// TAPCounters count what the TAP's reader did with the kernel's frames.
type TAPCounters struct {
	GSOFrames   atomic.Uint64 // TSO/GSO frames received from the kernel
	Segments    atomic.Uint64 // segments cut from them
	CsumPartial atomic.Uint64 // frames whose checksum was completed
	Malformed   atomic.Uint64 // dropped: headers inconsistent with the vnet header
	Unsupported atomic.Uint64 // dropped: a gso_type we do not segment
	TooLarge    atomic.Uint64 // dropped: a frame or segment larger than the buffer

	// Towards the kernel (Write, Queue and Flush). TxFrames counts
	// frames as they were handed over: a merged train counts each of its
	// segments.
	TxFrames, TxBytes atomic.Uint64
	TxErrors          atomic.Uint64 // frames lost to a failed write(2)
	TxGSOWrites       atomic.Uint64 // merged trains written (one write(2) each)
	TxGSOSegments     atomic.Uint64 // segments written inside merged trains
}

// TAP is a link to a namespace's kernel through a TAP device opened with
// IFF_TAP|IFF_NO_PI|IFF_VNET_HDR. The device is not persistent: it
// disappears with the last file descriptor, so a killed daemon leaves no
// TAP behind. The process keeps the descriptor; the device lives in the
// namespace it was created in.
//
// Read returns link-MTU frames: it completes partial checksums and
// segments TSO/GSO frames (TCPv4, TCPv6, UDP_L4) with correct IP and
// TCP/UDP checksums. Write sends each frame with a zeroed vnet header (no
// offload requested: our frames carry their checksums); Queue and Flush
// merge consecutive segments of a flow into one GSO frame per write(2),
// the receive offload a NIC does (gro_linux.go).
type TAP struct {
	f      *os.File
	rc     syscall.RawConn
	name   string
	mtu    int
	closed atomic.Bool // os.File's poller reports its own "closing" error; this names it ErrClosed

	cmu        sync.Mutex // serializes SetCarrier
	carrierOff bool       // the carrier was last set off (a TAP starts with it on)

	rmu    sync.Mutex
	stage  []byte // vnet header + one frame of up to 64 KiB
	seg    segmenter
	rwait  bool               // readFn: block in the poller for the first frame
	rn     int                // readFn result
	rerrno error              // readFn result
	readFn func(uintptr) bool // t.readOnce, bound once: a closure per call would allocate

	wmu        sync.Mutex
	wstage     []byte // vnet header + one frame, for writes without headroom
	wmsg       []byte
	werrno     error
	writeFn    func(uintptr) bool
	train      coalescer // Queue's segment train (gro_linux.go)
	noCoalesce bool

	Counters TAPCounters
}

var _ Link = (*TAP)(nil)

// tapBatch is how many frames one Read returns at most: the segments of a
// 64 KiB TSO frame at a 1500-byte MTU (45) fit one batch.
const tapBatch = 64

// tapStageSize holds the largest frame the kernel hands a TAP with TSO:
// 64 KiB of IP packet plus link headers.
const tapStageSize = VnetHdrLen + 65536 + 64

// CreateTAP creates a TAP device as configured and opens it. Following
// vishvananda/netlink's Tuntap.AddQueues (and water after its issue 22),
// /dev/net/tun is opened blocking, configured with TUNSETIFF, and only
// then set non-blocking and wrapped in an os.File, so the runtime poller
// manages it and Close unblocks a pending Read.
func CreateTAP(cfg TAPConfig) (*TAP, error) {
	if len(cfg.Name) == 0 || len(cfg.Name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("rt: TAP name %q: 1 to %d bytes", cfg.Name, unix.IFNAMSIZ-1)
	}
	fd := -1
	var name string
	err := inNetns(cfg.NetNS, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("rt: open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(cfg.Name)
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			return tunsetiffError(cfg.Name, err)
		}
		name = ifr.Name()
		return nil
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, err
	}
	if err := configureTAPfd(fd, !cfg.NoOffload); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("rt: set nonblock: %w", err)
	}
	f := os.NewFile(uintptr(fd), "/dev/net/tun:"+name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	t := &TAP{
		f: f, rc: rc, name: name, mtu: cfg.MTU,
		stage:  make([]byte, tapStageSize),
		wstage: make([]byte, VnetHdrLen+65536),
		train:  newCoalescer(), noCoalesce: cfg.NoCoalesce,
	}
	t.readFn, t.writeFn = t.readOnce, t.writeOnce
	if err := t.configureLink(cfg); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// tunsetiffError says what a refused TUNSETIFF means for a name the user
// chose: the kernel (drivers/net/tun.c, tun_set_iff) answers EBUSY when a
// TAP of that name is already held open by another process (a daemon still
// running), EINVAL when an interface of that name exists and is not a TAP,
// and EPERM when a persistent TAP of that name belongs to another user.
func tunsetiffError(name string, err error) error {
	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("rt: TAP %s: an interface of that name exists and another process holds it open (a daemon still running?): %w", name, err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("rt: TAP %s: an interface of that name exists and is not a TAP: %w", name, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("rt: TAP %s: not permitted (creating a TAP needs CAP_NET_ADMIN; a persistent TAP of that name may belong to another user): %w", name, err)
	}
	return fmt.Errorf("rt: TUNSETIFF %s: %w", name, err)
}

// configureTAPfd sets the vnet header size and the offloads the kernel may
// use towards us.
func configureTAPfd(fd int, offload bool) error {
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, VnetHdrLen); err != nil {
		return fmt.Errorf("rt: TUNSETVNETHDRSZ: %w", err)
	}
	if !offload {
		return nil
	}
	flags := unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6 | unix.TUN_F_TSO_ECN
	// UDP segmentation offload towards userspace exists since Linux 6.2;
	// older kernels reject the flags with EINVAL, then we go without.
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, flags|unix.TUN_F_USO4|unix.TUN_F_USO6); err != nil {
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, flags); err != nil {
			return fmt.Errorf("rt: TUNSETOFFLOAD: %w", err)
		}
	}
	return nil
}

// configureLink sets MTU and state through a netlink handle bound to the
// device's namespace (no thread switch).
func (t *TAP) configureLink(cfg TAPConfig) error {
	if cfg.MTU == 0 && !cfg.Up {
		return nil
	}
	var h *netlink.Handle
	var err error
	if nsGiven(cfg.NetNS) {
		h, err = netlink.NewHandleAt(cfg.NetNS)
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return fmt.Errorf("rt: netlink handle: %w", err)
	}
	defer h.Close()
	l, err := h.LinkByName(t.name)
	if err != nil {
		return fmt.Errorf("rt: TAP %s: %w", t.name, err)
	}
	if cfg.MTU > 0 {
		if err := h.LinkSetMTU(l, cfg.MTU); err != nil {
			return fmt.Errorf("rt: TAP %s mtu %d: %w", t.name, cfg.MTU, err)
		}
	}
	if cfg.Up {
		if err := h.LinkSetUp(l); err != nil {
			return fmt.Errorf("rt: TAP %s up: %w", t.name, err)
		}
	}
	return nil
}

// Name is the interface name the kernel gave the device.
func (t *TAP) Name() string { return t.name }

// tunSetCarrier is TUNSETCARRIER, _IOW('T', 226, int) (Linux 5.0); not in
// golang.org/x/sys/unix.
const tunSetCarrier = 0x400454e2

// SetCarrier turns the interface's carrier on or off, as a NIC's PHY
// reports its link: with it off the host's kernel shows NO-CARRIER (`ip
// link`), takes the interface's routes out of use and sends nothing on it.
// A TAP starts with the carrier on; setting what it is already is no
// system call. Any goroutine.
func (t *TAP) SetCarrier(on bool) error {
	t.cmu.Lock()
	defer t.cmu.Unlock()
	if t.carrierOff == !on {
		return nil
	}
	v := int32(0)
	if on {
		v = 1
	}
	var errno unix.Errno
	err := t.rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, tunSetCarrier, uintptr(unsafe.Pointer(&v)))
	})
	if err != nil {
		return t.closedErr(err)
	}
	if errno != 0 {
		return os.NewSyscallError("ioctl TUNSETCARRIER", errno)
	}
	t.carrierOff = !on
	return nil
}

// MTU is the L3 MTU frames are segmented to (0: gso_size as given).
func (t *TAP) MTU() int { return t.mtu }

// BatchSize implements Link.
func (t *TAP) BatchSize() int { return tapBatch }

// Read implements Link. It blocks for the first frame only; it then adds
// whatever the kernel has queued (and the remaining segments of a TSO
// frame, which carry over to the next Read if bufs is full).
func (t *TAP) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	k := 0
	n := min(len(bufs), len(sizes))
	for {
		if k = t.drainSegments(bufs, sizes, offset, k, n); k == n {
			return k, nil
		}
		got, err := t.readFrame(k == 0)
		if err != nil {
			if k > 0 {
				// Report the frames we have; an error other than EAGAIN
				// recurs on the next Read.
				return k, nil
			}
			return 0, err
		}
		k = t.accept(got, bufs, sizes, offset, k)
	}
}

// ReadStream implements streamReader: it reads like Read, but stays in
// one blocking call for the reader's whole life and hands each batch to
// deliver, which returns the buffers for the next one (false: stop). It
// exists for latency: Read must return when the kernel's queue is empty,
// and the runtime poller re-arms on the next call by forgetting what it
// knew, so every wake-up cost a read(2) that returned EAGAIN twice. Here
// the poller parks right after the first EAGAIN.
func (t *TAP) ReadStream(bufs [][]byte, sizes []int, offset int, deliver func(n int) ([][]byte, []int, bool)) error {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	k := 0
	var rerr error
	fn := func(fd uintptr) bool {
		for {
			n := min(len(bufs), len(sizes))
			if k = t.drainSegments(bufs, sizes, offset, k, n); k == n {
				var ok bool
				if bufs, sizes, ok = deliver(k); !ok {
					return true
				}
				k = 0
				continue
			}
			got, errno := rawRead(fd, t.stage)
			switch errno {
			case nil:
				k = t.accept(got, bufs, sizes, offset, k)
			case unix.EINTR:
			case unix.EAGAIN:
				if k > 0 {
					var ok bool
					if bufs, sizes, ok = deliver(k); !ok {
						return true
					}
					k = 0
				}
				return false // the poller waits for the next frame
			default:
				rerr = os.NewSyscallError("read", errno)
				return true
			}
		}
	}
	if err := t.rc.Read(fn); err != nil {
		return t.closedErr(err)
	}
	return rerr
}

// drainSegments moves the segments the segmenter still holds into bufs
// from index k on, up to n, and returns the new k.
func (t *TAP) drainSegments(bufs [][]byte, sizes []int, offset, k, n int) int {
	for k < n && t.seg.pending() {
		size, err := t.seg.emit(bufs[k][offset:])
		if err != nil {
			t.Counters.TooLarge.Add(1)
			continue
		}
		t.Counters.Segments.Add(1)
		sizes[k] = size
		k++
	}
	return k
}

// accept takes the vnet header and frame of got bytes read into t.stage:
// a TSO/GSO frame goes to the segmenter, any other frame (its checksum
// completed if the kernel left that to us) into bufs[k]. It returns the
// new k; a frame it cannot take is dropped and counted.
func (t *TAP) accept(got int, bufs [][]byte, sizes []int, offset, k int) int {
	if got < VnetHdrLen {
		t.Counters.Malformed.Add(1)
		return k
	}
	h := VnetHdr(t.stage[:VnetHdrLen])
	pkt := t.stage[VnetHdrLen:got]
	if h.GSOKind() != unix.VIRTIO_NET_HDR_GSO_NONE {
		if err := t.seg.start(h, pkt, t.mtu); err != nil {
			t.countDrop(err)
			return k
		}
		t.Counters.GSOFrames.Add(1)
		return k
	}
	if h.NeedsCsum() {
		if err := completeChecksum(h, pkt); err != nil {
			t.countDrop(err)
			return k
		}
		t.Counters.CsumPartial.Add(1)
	}
	if len(pkt) > len(bufs[k])-offset {
		t.Counters.TooLarge.Add(1)
		return k
	}
	sizes[k] = copy(bufs[k][offset:], pkt)
	return k + 1
}

func (t *TAP) countDrop(err error) {
	if errors.Is(err, errVnetUnsupported) {
		t.Counters.Unsupported.Add(1)
	} else {
		t.Counters.Malformed.Add(1)
	}
}

// readFrame reads one vnet header + frame into t.stage. With wait it
// blocks in the poller until a frame arrives; without, it returns EAGAIN
// if none is queued.
func (t *TAP) readFrame(wait bool) (int, error) {
	t.rwait = wait
	err := t.rc.Read(t.readFn)
	if err != nil {
		return 0, t.closedErr(err)
	}
	if t.rerrno != nil {
		if t.rerrno == unix.EAGAIN {
			return 0, unix.EAGAIN
		}
		return 0, os.NewSyscallError("read", t.rerrno)
	}
	return t.rn, nil
}

// readOnce is one read(2) (again at once after EINTR: the poller is
// edge-triggered, and a frame already queued signals nothing more); false
// asks the poller to wait.
func (t *TAP) readOnce(fd uintptr) bool {
	t.rn, t.rerrno = rawRead(fd, t.stage)
	for t.rerrno == unix.EINTR {
		t.rn, t.rerrno = rawRead(fd, t.stage)
	}
	return !(t.rwait && t.rerrno == unix.EAGAIN)
}

// Write implements Link. With offset >= VnetHdrLen the zeroed vnet header
// is written into the headroom in front of each frame (no copy);
// otherwise the frame is copied behind a header. A train pending from
// Queue goes first.
func (t *TAP) Write(bufs [][]byte, offset int) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.train.pending() {
		if err := t.flushTrain(); err != nil {
			return 0, err
		}
	}
	for i, b := range bufs {
		if err := t.writeOne(b, offset); err != nil {
			return i, err
		}
	}
	return len(bufs), nil
}

func (t *TAP) writeFrame(msg []byte) error {
	t.wmsg = msg
	err := t.rc.Write(t.writeFn)
	t.wmsg = nil
	if err != nil {
		return t.closedErr(err)
	}
	if t.werrno != nil {
		return os.NewSyscallError("write", t.werrno)
	}
	return nil
}

// writeOnce is one write(2); false asks the poller to wait.
func (t *TAP) writeOnce(fd uintptr) bool {
	_, t.werrno = rawWrite(fd, t.wmsg)
	for t.werrno == unix.EINTR { // as readOnce
		_, t.werrno = rawWrite(fd, t.wmsg)
	}
	return t.werrno != unix.EAGAIN
}

// Queue hands the TAP one frame, b[offset:], from the one goroutine that
// writes (an engine's loop). Consecutive TCP or UDP segments of a flow are
// merged into one GSO frame (see gro_linux.go) that Flush, or the first
// frame that does not continue it, writes; anything else is written at
// once, in order behind a pending train. With offset >= VnetHdrLen a frame
// written on its own gets its vnet header in the headroom (no copy);
// merged segments are copied. The caller keeps b. The error is that of a
// write(2) this call made; the frames it lost are counted (TxErrors).
//
// The caller must Flush when it has handed over what it has for now (the
// end of an event of its loop): a train is never held longer.
func (t *TAP) Queue(b []byte, offset int) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	frame := b[offset:]
	if t.noCoalesce {
		return t.writeOne(b, offset)
	}
	s, ok := parseGROSeg(frame)
	var err error
	if t.train.pending() {
		if ok && t.train.add(frame, s) {
			if t.train.closed {
				return t.flushTrain()
			}
			return nil
		}
		err = t.flushTrain()
	}
	if !ok {
		return errors.Join(err, t.writeOne(b, offset))
	}
	t.train.start(frame, s)
	if t.train.closed {
		err = errors.Join(err, t.flushTrain())
	}
	return err
}

// Flush writes the pending train, if any.
func (t *TAP) Flush() error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if !t.train.pending() {
		return nil
	}
	return t.flushTrain()
}

// flushTrain writes the pending train; wmu held.
func (t *TAP) flushTrain() error {
	segs := uint64(t.train.segs)
	// Bytes as the segments had them: each carries the headers.
	bytes := uint64(t.train.frameLen()) + (segs-1)*uint64(t.train.first.pay)
	msg := t.train.finish()
	if err := t.writeFrame(msg); err != nil {
		t.Counters.TxErrors.Add(segs)
		return err
	}
	t.Counters.TxFrames.Add(segs)
	t.Counters.TxBytes.Add(bytes)
	if segs > 1 {
		t.Counters.TxGSOWrites.Add(1)
		t.Counters.TxGSOSegments.Add(segs)
	}
	return nil
}

// writeOne writes b[offset:] on its own with a zeroed vnet header; wmu
// held.
func (t *TAP) writeOne(b []byte, offset int) error {
	var msg []byte
	if offset >= VnetHdrLen {
		msg = b[offset-VnetHdrLen:]
		clear(msg[:VnetHdrLen])
	} else {
		if len(b)-offset > len(t.wstage)-VnetHdrLen {
			t.Counters.TxErrors.Add(1)
			return ErrFrameTooLarge
		}
		clear(t.wstage[:VnetHdrLen])
		n := copy(t.wstage[VnetHdrLen:], b[offset:])
		msg = t.wstage[:VnetHdrLen+n]
	}
	if err := t.writeFrame(msg); err != nil {
		t.Counters.TxErrors.Add(1)
		return err
	}
	t.Counters.TxFrames.Add(1)
	t.Counters.TxBytes.Add(uint64(len(msg) - VnetHdrLen))
	return nil
}

// Close implements Link. The device disappears with the descriptor.
func (t *TAP) Close() error {
	t.closed.Store(true)
	return t.f.Close()
}

func (t *TAP) closedErr(err error) error {
	if t.closed.Load() {
		return errors.Join(ErrClosed, err)
	}
	return closedErr(err)
}
