package rt

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// read(2) and write(2) on a non-blocking descriptor, without the runtime's
// system call hooks (syscall.Syscall's entersyscall/exitsyscall). Such a
// call never blocks, so the scheduler needs no hand-off; and
// entersyscall wakes the runtime's sysmon thread whenever it sleeps
// because every P was idle, which for a daemon that wakes up for one frame
// (a ping) is a futex wake-up of a second thread per frame, on a CPU the
// ping's own processes need. gVisor's rawfile.NonBlockingWrite uses
// RawSyscall for the same reason.

// rawRead is read(2) on a non-blocking fd.
func rawRead(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawWrite is write(2) on a non-blocking fd.
func rawWrite(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
