package rt

import (
	"fmt"
	"net"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNetns runs fn on an OS thread switched into ns and restores the
// thread's namespace afterwards. Only operations whose namespace is fixed
// at the system call (opening /dev/net/tun: the TAP is created in the
// namespace of the thread that opened the file) need this; everything else
// uses a netlink handle bound to the namespace. The switch happens on a
// fresh goroutine locked to its thread; if restoring fails, the thread is
// left locked so the runtime discards it with the goroutine instead of
// reusing a thread in the wrong namespace.
func inNetns(ns netns.NsHandle, fn func() error) error {
	if !nsGiven(ns) {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("rt: current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("rt: enter netns: %w", err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			// Keep the thread locked: it dies with this goroutine.
			errc <- fmt.Errorf("rt: restore netns: %w (after %v)", err, ferr)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// nsGiven reports whether ns names a namespace: netns.None() (-1) and the
// zero value both mean "the current one".
func nsGiven(ns netns.NsHandle) bool { return ns > 0 }

// ListenTCP listens on addr in the network namespace at nsPath (a
// /proc/PID/ns/net or /run/netns/NAME file; "" is the caller's). A
// listening socket stays in the namespace it was made in, so a daemon
// that runs in a lab's namespace can still serve a port of the host's
// (its Prometheus endpoint).
func ListenTCP(nsPath, addr string) (net.Listener, error) {
	if nsPath == "" {
		return net.Listen("tcp", addr)
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("rt: netns %s: %w", nsPath, err)
	}
	defer ns.Close()
	var ln net.Listener
	err = inNetns(ns, func() error {
		var lerr error
		ln, lerr = net.Listen("tcp", addr)
		return lerr
	})
	if err != nil && ln != nil {
		// Listening worked but the thread could not go back: the
		// caller fails, and the listener must not outlive it.
		ln.Close()
		ln = nil
	}
	return ln, err
}
