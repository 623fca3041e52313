//go:build linux

// Command tapfwd is a control for bench/switch_compare.sh, not part of the
// emulator: the least a Go program can do to join two TAPs, so that the
// script can tell what the Go runtime costs from what emuswitch's
// switching costs, on the machine at hand and in the same run.
//
// It copies every frame from one TAP to the other: no learning, no
// queues, no counters, no vnet header or offloads (the TAPs are plain
// IFF_TAP|IFF_NO_PI, as vde_switch's). It has two shapes, chosen with
// TAPFWD_MODE (the script starts the baseline binary with emuswitch's
// arguments only):
//
//   - poller (the default): one goroutine per direction, parked in the
//     runtime's poller between frames, reading with raw system calls and
//     writing to the other TAP at once; the shape emuswitch's ports have
//     (one goroutine per port direction), without the engine and the
//     hand-off to its loop.
//   - epoll: one goroutine locked to its thread blocks in epoll_wait(2)
//     over both TAPs as a raw system call, holding its P, and reads and
//     writes them itself; vde_switch's shape (poll, read, write in one
//     thread). GOMAXPROCS is 2 so that signals and the runtime keep a P.
//
// It takes emuswitch's command line (--lab, --node and --control are
// accepted and ignored; exactly two --port NAME=tap:IFNAME@NETNS) and
// prints "ready" once both TAPs exist, so that
//
//	sudo TAPFWD_MODE=epoll EMUSWITCH_BASELINE=bin/tapfwd bench/switch_compare.sh --only emuswitch,vde
//
// measures it as the baseline row. SIGTERM or SIGINT ends it; the TAPs go
// with their descriptors.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tapfwd:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	var ports []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--lab", "--node", "--control":
			i++ // emuswitch's; nothing here needs them
		case "--port":
			if i+1 == len(args) {
				return errors.New("--port: missing NAME=tap:IFNAME@NETNS")
			}
			i++
			ports = append(ports, args[i])
		default:
			return fmt.Errorf("unexpected argument %q (tapfwd takes --port NAME=tap:IFNAME@NETNS twice)", a)
		}
	}
	if len(ports) != 2 {
		return fmt.Errorf("%d --port flags: exactly two TAPs are joined", len(ports))
	}
	var fds [2]int
	for i, p := range ports {
		ifname, ns, err := parseTAP(p)
		if err != nil {
			return err
		}
		if fds[i], err = createTAP(ifname, ns); err != nil {
			return fmt.Errorf("--port %s: %w", p, err)
		}
	}
	mode := os.Getenv("TAPFWD_MODE")
	switch mode {
	case "", "poller":
		mode = "poller"
		startPoller(fds)
	case "epoll":
		runtime.GOMAXPROCS(2)
		go epollLoop(fds)
	default:
		return fmt.Errorf("TAPFWD_MODE=%s: poller or epoll", mode)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, unix.SIGTERM, unix.SIGINT)
	fmt.Printf("ready (%s)\n", mode)
	<-sig
	return nil
}

// parseTAP splits NAME=tap:IFNAME@NETNS.
func parseTAP(p string) (ifname, ns string, err error) {
	_, uri, ok := strings.Cut(p, "=")
	rest, isTAP := strings.CutPrefix(uri, "tap:")
	if !ok || !isTAP {
		return "", "", fmt.Errorf("--port %s: want NAME=tap:IFNAME@NETNS", p)
	}
	ifname, ns, ok = strings.Cut(rest, "@")
	if !ok || ifname == "" || ns == "" || len(ifname) >= unix.IFNAMSIZ {
		return "", "", fmt.Errorf("--port %s: want NAME=tap:IFNAME@NETNS, IFNAME 1 to %d bytes", p, unix.IFNAMSIZ-1)
	}
	return ifname, ns, nil
}

// createTAP opens a TAP named ifname in the named namespace, non-blocking.
// The namespace is entered on a locked thread and left again, as
// netlink's own helpers do: /dev/net/tun creates the device in the
// namespace of the thread that opens it.
func createTAP(ifname, nsName string) (int, error) {
	target, err := netns.GetFromName(nsName)
	if err != nil {
		return -1, fmt.Errorf("namespace %s: %w", nsName, err)
	}
	defer target.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return -1, err
	}
	defer orig.Close()
	if err := netns.Set(target); err != nil {
		return -1, fmt.Errorf("enter namespace %s: %w", nsName, err)
	}
	defer netns.Set(orig)
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(ifname)
	if err == nil {
		ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("TAP %s: %w", ifname, err)
	}
	return fd, nil
}

// startPoller starts one goroutine per direction, each parking in the
// runtime's poller between frames (syscall.RawConn). The reads and writes
// themselves are raw system calls, as emuswitch's TAP makes them: the
// runtime's entersyscall would wake its sysmon thread on every frame
// while the process idles between pings.
func startPoller(fds [2]int) {
	var rcs [2]syscall.RawConn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), fmt.Sprintf("tap%d", i))
		rc, err := f.SyscallConn()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tapfwd:", err)
			os.Exit(1)
		}
		rcs[i] = rc
	}
	for i := range rcs {
		src, dst := rcs[i], fds[1-i]
		go func() {
			buf := make([]byte, 65536)
			var rerr unix.Errno
			err := src.Read(func(fd uintptr) bool {
				for {
					n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
					switch e {
					case 0:
						// A full TAP queue drops, as a switch port would.
						unix.RawSyscall(unix.SYS_WRITE, uintptr(dst), uintptr(unsafe.Pointer(&buf[0])), n)
					case unix.EINTR:
					case unix.EAGAIN:
						return false // park until the next frame
					default:
						rerr = e
						return true
					}
				}
			})
			fmt.Fprintln(os.Stderr, "tapfwd: read:", err, rerr)
			os.Exit(1)
		}()
	}
}

// epollLoop waits in epoll_wait(2) without the runtime's system call
// hooks: the thread sleeps in the kernel holding its P, as vde_switch's
// one thread sleeps in poll(2), and wakes straight into the read. The
// timeout bounds how long a stop-the-world of the garbage collector waits
// for this P (the loop allocates nothing, so that is rare).
func epollLoop(fds [2]int) {
	runtime.LockOSThread()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tapfwd: epoll_create1:", err)
		os.Exit(1)
	}
	for i, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			fmt.Fprintln(os.Stderr, "tapfwd: epoll_ctl:", err)
			os.Exit(1)
		}
	}
	var evs [2]unix.EpollEvent
	buf := make([]byte, 65536)
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 10, 0, 0)
		if e != 0 {
			if e == unix.EINTR {
				continue
			}
			fmt.Fprintln(os.Stderr, "tapfwd: epoll_wait:", e)
			os.Exit(1)
		}
		for _, ev := range evs[:n] {
			src, dst := fds[ev.Fd], fds[1-ev.Fd]
			for {
				m, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(src), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
				if e == unix.EINTR {
					continue
				}
				if e != 0 {
					break // EAGAIN: the queue is empty
				}
				unix.RawSyscall(unix.SYS_WRITE, uintptr(dst), uintptr(unsafe.Pointer(&buf[0])), m)
			}
		}
	}
}
