package lab

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// nsOnThread runs fn on an OS thread switched into ns and switches the
// thread back afterwards (the LockOSThread / Get / Set / restore dance of
// netns's README). Only what cannot take a namespace handle needs it:
// creating a namespace (unshare acts on the calling thread) and starting a
// process in one (the child inherits the forking thread's namespace).
// Everything else uses netlink handles bound with NewHandleAt.
//
// It runs on a fresh goroutine; if the thread cannot be restored it stays
// locked, and the runtime destroys it when the goroutine exits instead of
// reusing a thread in the wrong namespace. A closed handle (netns.None())
// runs fn on the locked thread without switching; fn may then switch the
// thread itself (unshare) and nsOnThread restores it.
func nsOnThread(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		if ns.IsOpen() {
			if err := netns.Set(ns); err != nil {
				runtime.UnlockOSThread()
				errc <- fmt.Errorf("enter netns: %w", err)
				return
			}
		}
		ferr := fn()
		if !ns.IsOpen() && sameNetns(orig) {
			// Nothing switched the thread: there is nothing to restore,
			// and setns(2) would need CAP_SYS_ADMIN even to stay put (a
			// process started in the caller's own namespace, as a user).
			runtime.UnlockOSThread()
			errc <- ferr
			return
		}
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("restore netns: %w (after %v)", err, ferr)
			return // thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// sameNetns reports whether the calling thread is still in orig's
// namespace.
func sameNetns(orig netns.NsHandle) bool {
	cur, err := netns.Get()
	if err != nil {
		return false
	}
	defer cur.Close()
	return cur.Equal(orig)
}
