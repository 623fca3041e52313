// Package rt is the real-time driver of the I/O-free engines (switchcore,
// nic): a wall clock with an optional time-dilation factor (Clock), an
// event loop that serializes frame arrivals, timer callbacks and posted
// functions onto one goroutine (Loop), ports that connect a Loop to a link
// transport (Port), the transports a daemon's ports use (Shm: rings in
// shared memory between processes, set up over a unix SOCK_SEQPACKET
// socket; Seqpacket: that socket alone; UDP: between machines; TAP: towards a
// namespace's kernel, with TSO/GSO segmentation and checksum offload
// towards us and segment merging into GSO frames towards the kernel), and
// a pacer that releases frames at a link rate (Pacer).
//
// The engines are never called from two goroutines: everything that
// touches an engine, the Loop's frame pool or a Timer runs on the Loop's
// goroutine. Each Port has one reader and one writer goroutine
// (RoutineRead, RoutineWrite); frames cross between them and the loop by
// channel hand-off, never shared.
//
// Shm moves a frame between processes with a copy into a ring and one out
// of it; a port whose writer has nothing queued writes into the ring from
// the loop itself (Shm.TryWrite), so a frame crossing a switch costs one
// copy in, one copy out and no goroutine hand-off on the way out. A side
// only sleeps (on an eventfd, through the poller) when its ring is empty
// or full, and the other side only notifies a side that said it sleeps.
//
// I/O is batch-shaped as in wireguard-go's tun.Device and conn.Bind: a Read
// or Write moves a slice of frames, even where the backend moves one per
// system call (recvmmsg/sendmmsg for the sockets; the TAP reads one
// kernel frame per call but a TSO frame yields up to 64 segments, and
// TAP.Queue writes a flow's consecutive segments as one GSO frame). A TAP
// port's reader stays in one poller wait for its whole life
// (TAP.ReadStream) and its read(2)/write(2) skip the runtime's system-call
// hooks (rawio_linux.go): a frame that wakes an idle daemon costs one
// read, one read that says EAGAIN and one write.
//
// Timing on a real machine: the loop wakes on an Alarm, a timerfd read
// through the netpoller (a Go runtime timer, which sleeps in milliseconds
// when the process is idle, fired a 20 us timer 1 ms late), and still
// tens of microseconds late. The Clock therefore replays late timers at
// their due times (bounded by MaxLag), and the Pacer books frames in link
// time with a slack (Burst); both keep long-run rates exact at the cost of
// bursts. Timers that fall due while the loop handles an event, or within
// 10 us of its end, run right after it (Clock.settle) instead of through
// the alarm, and within an event Now does not advance: an engine that
// sends a batch of frames arms its port's timer once per frame, and none
// of that costs a system call.
package rt
