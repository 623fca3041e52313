package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Defaults of UpOptions.
const (
	// DefaultReadyTimeout bounds how long the daemons may take to print
	// "ready" and the hosts' interfaces to come up.
	DefaultReadyTimeout = 15 * time.Second
	// DefaultGrace is how long a daemon has between SIGTERM and SIGKILL.
	DefaultGrace = 2 * time.Second
)

// UpOptions configure Up.
type UpOptions struct {
	// StateRoot holds the lab's state directory ("" is DefaultStateRoot).
	StateRoot string
	// BinDir is where emuswitch and emunic are ("": next to the running
	// executable, then PATH, see FindBinary; under Start, built first,
	// see Start).
	BinDir string
	// Hosts says what stands behind a NIC node ("" is HostsAuto; under
	// Start, HostsNIC).
	Hosts HostMode
	// ReadyTimeout bounds the wait for the daemons and interfaces (0 is
	// DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Grace is the SIGTERM-to-SIGKILL time of a teardown after a failure
	// (0 is DefaultGrace).
	Grace time.Duration
	// Progress receives one line per step (nil: silent).
	Progress io.Writer
	// Metrics, ADDR:PORT, gives every daemon a Prometheus endpoint in the
	// caller's network namespace: the first daemon on PORT, the next on
	// PORT+1, and so on in the lab file's node order ("" none).
	Metrics string
	// Schedules runs the links' schedules (the lab file's `schedule:`) in
	// real time, counted from the moment the lab is up. Off, they are the
	// simulator's only: a schedule written for a simulated run of
	// milliseconds would otherwise cut a link of the real lab right away.
	Schedules bool
	// ExitWithPid, when > 0, makes every daemon exit, as on SIGTERM, when
	// process ExitWithPid exits (their hidden --exit-with-pid flag). Start
	// passes its own pid, so a test process that dies without running its
	// cleanups takes the lab's daemons with it; emulab up, whose lab
	// outlives it, passes none.
	ExitWithPid int

	// test is the test Start brings the lab up for, when its progress
	// goes to the test's log (Progress nil): each line is logged by a
	// helper, so the test names the step of Up that reports it, and
	// errors name Start's options instead of emulab's flags.
	test TB
}

// Lab is a lab that Up built. It holds the lab's state lock until Release
// or Down.
type Lab struct {
	Spec  *Spec
	State *State
	Info  *LabInfo
	procs map[string]*Proc // by node name
	grace time.Duration

	// downOnce makes Down idempotent: a test may take its lab down
	// itself, and Start's cleanup then calls Down again.
	downOnce sync.Once
	downErr  error
	// down is set once Down began: Namespace refuses its nodes then,
	// rather than let Exec trip over a namespace file that is gone.
	down atomic.Bool
}

// Up builds spec as a namespace lab: a namespace per node, a daemon per
// switch (and per NIC with HostsNIC), links over sockets in the state
// directory, the hosts' addresses, MTUs, neighbours and routes. It
// returns when every daemon printed "ready" and every host interface is
// up. A lab that is already up is refused; names are checked before
// anything is created; on any failure everything created is torn down
// and the error says what failed. Cancelling ctx aborts (and tears down).
func Up(ctx context.Context, spec *Spec, opt UpOptions) (l *Lab, err error) {
	start := time.Now()
	if opt.ReadyTimeout <= 0 {
		opt.ReadyTimeout = DefaultReadyTimeout
	}
	if opt.Grace <= 0 {
		opt.Grace = DefaultGrace
	}
	if opt.StateRoot == "" {
		opt.StateRoot = DefaultStateRoot
	}
	// The daemons get socket paths under the state root and run in other
	// working directories: a relative --state-dir is made absolute here.
	if root, err := filepath.Abs(opt.StateRoot); err == nil {
		opt.StateRoot = root
	} else {
		return nil, fmt.Errorf("state directory %s: %w", opt.StateRoot, err)
	}
	if opt.Hosts == "" {
		opt.Hosts = HostsAuto
	}
	if _, err := ParseHostMode(string(opt.Hosts)); err != nil {
		return nil, err
	}
	say := func(format string, args ...any) {
		if opt.test != nil {
			opt.test.Helper()
			opt.test.Logf("up %s: "+format, append([]any{spec.Name}, args...)...)
			return
		}
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "up %s: "+format+"\n", append([]any{spec.Name}, args...)...)
		}
	}
	stateFlag := "--state-dir"
	if opt.test != nil {
		stateFlag = "UpOptions.StateRoot (unset, Start keeps labs under TMPDIR: a shorter TMPDIR)"
	}
	if err := checkName(spec.Name); err != nil {
		return nil, &FieldError{File: spec.File, Field: "name", Msg: err.Error()}
	}
	labFile, err := filepath.Abs(spec.File)
	if err != nil {
		return nil, err
	}
	if err := isReadable(labFile); err != nil {
		return nil, fmt.Errorf("lab file: %w (the daemons read it)", err)
	}

	dir := filepath.Join(opt.StateRoot, spec.Name)
	if rec, err := readRecord(opt.StateRoot, spec.Name); err == nil && !rec.empty() {
		return nil, fmt.Errorf("lab %s is already up (state %s): `%s` first", spec.Name, dir, downCommand(opt.StateRoot, spec.Name))
	}

	// 1. Binaries and the plan: nothing is touched yet. Under `go run`
	// nothing is beside emulab: from a checkout, build the daemons (always
	// afresh, so they match the emulab that runs them).
	if opt.BinDir == "" {
		if _, err := FindBinary(SwitchBinary, ""); errors.Is(err, ErrBinaryNotFound) {
			if _, rerr := ModuleRoot(); rerr == nil {
				dir, berr := BuildFromSource(say)
				if berr != nil {
					return nil, berr
				}
				opt.BinDir = dir
			}
		}
	}
	bins := map[string]string{}
	mode := opt.Hosts
	if len(spec.Switches()) > 0 {
		p, err := FindBinary(SwitchBinary, opt.BinDir)
		if err != nil {
			return nil, err
		}
		bins[SwitchBinary] = p
	}
	if mode == HostsNIC || mode == HostsAuto {
		p, err := FindBinary(NICBinary, opt.BinDir)
		switch {
		case err == nil:
			bins[NICBinary] = p
			mode = HostsNIC
		case mode == HostsNIC:
			return nil, err
		default:
			say("%s not found: hosts are plain TAP ports of their switch (--hosts tap)", NICBinary)
			mode = HostsTAP
		}
	}
	var sockets []string
	plan, err := makePlan(spec, mode, labFile, func(name string) (string, error) {
		sockets = append(sockets, name)
		if err := nsCheckFileName(name); err != nil {
			return "", fmt.Errorf("socket: %w", err)
		}
		p := filepath.Join(dir, "sock", name+".sock")
		if len(p) >= len(unix.RawSockaddrUnix{}.Path) {
			return "", fmt.Errorf("socket path %s is longer than %d bytes: use a shorter %s", p, len(unix.RawSockaddrUnix{}.Path)-1, stateFlag)
		}
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	if opt.ExitWithPid > 0 {
		for _, pn := range plan.daemons() {
			pn.daemon.args = append(pn.daemon.args, "--exit-with-pid", strconv.Itoa(opt.ExitWithPid))
		}
	}
	if opt.Metrics != "" {
		if err := plan.metrics(opt.Metrics, fmt.Sprintf("/proc/%d/ns/net", os.Getpid())); err != nil {
			return nil, err
		}
	}
	for _, pn := range plan.nodes {
		if NamespaceExists(pn.namespace) {
			return nil, namespaceTaken(opt.StateRoot, spec.Name, pn.node.Name, pn.namespace)
		}
	}

	// 2. The state directory, locked.
	s, err := OpenState(opt.StateRoot, spec.Name)
	if err != nil {
		if errors.Is(err, ErrLabLocked) {
			return nil, fmt.Errorf("lab %s: another emulab is bringing it up or down: %w", spec.Name, err)
		}
		return nil, err
	}
	if !s.recordEmpty() {
		s.Close()
		return nil, fmt.Errorf("lab %s is already up (state %s): `%s` first", spec.Name, dir, downCommand(opt.StateRoot, spec.Name))
	}
	l = &Lab{Spec: spec, State: s, procs: map[string]*Proc{}, grace: opt.Grace}
	defer func() {
		if err == nil {
			return
		}
		// The caller has the whole error; a log tail after its first
		// line would be printed twice.
		first, _, _ := strings.Cut(err.Error(), "\n")
		say("failed: %s", first)
		say("tearing down what was created")
		if terr := s.Teardown(opt.Grace); terr != nil {
			err = errors.Join(err, fmt.Errorf("teardown after the failure: %w (run `emulab down %s`)", terr, spec.Name))
		}
		s.Close()
		l = nil
	}()
	say("%d nodes, %d links, hosts %s, state %s", len(spec.Nodes), len(spec.Links), mode, s.Dir)
	// Sockets are recorded before the daemons create them.
	for _, name := range sockets {
		if _, err := s.SocketPath(name); err != nil {
			return l, err
		}
	}

	// 3. Namespaces, recorded before they are created.
	for _, pn := range plan.nodes {
		if err := ctx.Err(); err != nil {
			return l, err
		}
		if err := s.RecordNamespace(pn.namespace); err != nil {
			return l, err
		}
		ns, err := CreateNamespace(pn.namespace)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				// Someone else's: never tear it down.
				s.forgetNamespace(pn.namespace)
			}
			return l, err
		}
		err = ns.MarkOwner(s.Dir)
		if err == nil && pn.iface != nil {
			err = hostIPv4Only(ns)
		}
		ns.Close()
		if err != nil {
			return l, fmt.Errorf("node %s: %w", pn.node.Name, err)
		}
	}
	say("created %d namespaces (%s-*)", len(plan.nodes), NamespacePrefix+spec.Name)

	// 4. Daemons: switches first (they listen), then NICs (they dial).
	env := daemonEnv(len(plan.daemons()))
	for _, pn := range plan.daemons() {
		d := pn.daemon
		p, err := s.Start(ProcSpec{Name: d.name, Namespace: pn.namespace, Path: bins[d.binary], Args: d.args, Env: env})
		if err != nil {
			return l, fmt.Errorf("node %s: %w", pn.node.Name, err)
		}
		l.procs[pn.node.Name] = p
		say("started %s for %s (pid %d)", d.binary, pn.node.Name, p.Pid)
	}

	// 5. Ready.
	deadline := time.Now().Add(opt.ReadyTimeout)
	if err := l.waitReady(ctx, plan, deadline, opt.ReadyTimeout, say); err != nil {
		return l, err
	}

	// 6. Host interfaces.
	for _, pn := range plan.nodes {
		if pn.iface == nil {
			continue
		}
		if err := configureIface(ctx, pn, deadline); err != nil {
			return l, err
		}
		say("%s %s %s mtu %d up", pn.node.Name, pn.iface.name, pn.iface.addr, pn.iface.mtu)
	}

	// 6b. InfiniBand with a subnet manager: the ports Active.
	l.waitIBActive(ctx, plan, deadline, say)

	// 6c. RoCE switches linked to one another: their routes converged.
	if err := l.waitRoutes(ctx, plan, deadline, say); err != nil {
		return l, err
	}

	// 6d. Link schedules, counted from now: the lab is up.
	if opt.Schedules {
		if err := l.armSchedules(plan, say); err != nil {
			return l, err
		}
	}

	// 7. What was built.
	l.Info = l.info(plan, labFile, time.Since(start))
	b, err := json.MarshalIndent(l.Info, "", "  ")
	if err != nil {
		return l, err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, upInfoFile), b, 0o600); err != nil {
		return l, fmt.Errorf("state: %w", err)
	}
	say("up in %.2fs", l.Info.Took.Seconds())
	return l, nil
}

func isReadable(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	return f.Close()
}

// diskFull says, for a daemon whose ready line never came, that the
// filesystem of its log has no space left: the daemon may well be ready
// and unable to say so (its log write failed), and "not ready" alone
// sends a user looking at the daemon.
func diskFull(logPath string) string {
	var st unix.Statfs_t
	if unix.Statfs(filepath.Dir(logPath), &st) != nil || st.Bavail > 0 {
		return ""
	}
	return fmt.Sprintf(": the filesystem of %s is full, so its ready line may not have been written", filepath.Dir(logPath))
}

// died names a daemon of plan, ready or not, that has exited.
func (l *Lab) died(plan *upPlan) error {
	for _, pn := range plan.daemons() {
		p := l.procs[pn.node.Name]
		select {
		case <-p.Done():
			logPath, _ := l.State.LogPath(pn.daemon.name)
			when := "before it was ready"
			if ready, _ := logSaysReady(logPath); ready {
				when = "after it was ready, while the lab came up"
			}
			return fmt.Errorf("node %s: %s exited %s (%v); log %s:\n%s",
				pn.node.Name, pn.daemon.binary, when, p.Wait(), logPath, logTail(logPath, 10))
		default:
		}
	}
	return nil
}

// waitReady waits until every daemon printed "ready" on its log, or one
// exited, or the deadline passed.
func (l *Lab) waitReady(ctx context.Context, plan *upPlan, deadline time.Time, timeout time.Duration, say func(string, ...any)) error {
	all := plan.daemons()
	pending := slices.Clone(all)
	say("waiting for %d daemon(s) to print ready", len(pending))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// A daemon, ready or not, that has exited: the lab cannot come up,
	// and the ones still waiting may be waiting for it.
	died := func() error { return l.died(plan) }
	for len(pending) > 0 {
		if err := died(); err != nil {
			return err
		}
		rest := pending[:0]
		for _, pn := range pending {
			logPath, _ := l.State.LogPath(pn.daemon.name)
			ready, err := logSaysReady(logPath)
			if err != nil {
				return fmt.Errorf("node %s: %s log %s: %w", pn.node.Name, pn.daemon.binary, logPath, err)
			}
			if ready {
				continue
			}
			rest = append(rest, pn)
		}
		pending = rest
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			pn := pending[0]
			logPath, _ := l.State.LogPath(pn.daemon.name)
			var names []string
			for _, q := range pending {
				names = append(names, q.node.Name)
			}
			return fmt.Errorf("node %s: %s not ready after %v (still waiting for %s)%s; log %s:\n%s",
				pn.node.Name, pn.daemon.binary, timeout,
				strings.Join(names, ", "), diskFull(logPath), logPath, logTail(logPath, 10))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	if err := died(); err != nil {
		return err
	}
	say("all daemons ready")
	return nil
}

// configureIface gives a host's interface its MAC, MTU, address,
// neighbours and routes, brings it up and waits until it has a carrier
// (the daemon holding the TAP is attached).
func configureIface(ctx context.Context, pn *planNode, deadline time.Time) error {
	f := pn.iface
	ns, err := OpenNamespace(pn.namespace)
	if err != nil {
		return fmt.Errorf("node %s: %w", pn.node.Name, err)
	}
	defer ns.Close()
	nl := ns.Netlink()
	// The owner created the TAP before it printed ready; wait anyway, a
	// daemon may announce readiness before the kernel publishes the link.
	var link netlink.Link
	for {
		link, err = nl.LinkByName(f.name)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: interface %s did not appear in %s (%s creates it): %w", pn.node.Name, f.name, pn.namespace, f.owner, err)
		}
		if err := SleepContext(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	mac := net.HardwareAddr(f.mac[:])
	if link.Attrs().HardwareAddr.String() != mac.String() {
		if err := nl.LinkSetHardwareAddr(link, mac); err != nil {
			return fmt.Errorf("node %s: %s mac %s: %w", pn.node.Name, f.name, mac, err)
		}
	}
	if link.Attrs().MTU != f.mtu {
		if err := ns.SetMTU(f.name, f.mtu); err != nil {
			return fmt.Errorf("node %s: %w", pn.node.Name, err)
		}
	}
	if err := ns.AddAddr(f.name, f.addr); err != nil {
		return fmt.Errorf("node %s: %w", pn.node.Name, err)
	}
	if err := ns.LinkUp(f.name); err != nil {
		return fmt.Errorf("node %s: %w", pn.node.Name, err)
	}
	idx := link.Attrs().Index
	for _, n := range f.neigh {
		ne := &netlink.Neigh{LinkIndex: idx, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
			IP: net.IP(n.ip.AsSlice()), HardwareAddr: net.HardwareAddr(n.mac[:])}
		if err := nl.NeighSet(ne); err != nil {
			return fmt.Errorf("node %s: neighbour %s (%s) lladdr %s: %w", pn.node.Name, n.ip, n.node, ne.HardwareAddr, err)
		}
	}
	for _, r := range f.routes {
		if err := ns.AddRoute(r, netip.Addr{}, f.name); err != nil {
			return fmt.Errorf("node %s: %w", pn.node.Name, err)
		}
	}
	for {
		l, err := nl.LinkByIndex(idx)
		if err != nil {
			return fmt.Errorf("node %s: %s: %w", pn.node.Name, f.name, err)
		}
		a := l.Attrs()
		if a.Flags&net.FlagUp != 0 && a.RawFlags&unix.IFF_LOWER_UP != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: %s in %s is not up (flags %v, oper state %v): is %s holding its TAP?", pn.node.Name, f.name, pn.namespace, a.Flags, a.OperState, f.owner)
		}
		if err := SleepContext(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// hostIPv4Only turns IPv6 off for the interfaces a host namespace will
// get (net.ipv6.conf.default.disable_ipv6, set before the daemons create
// them). A lab's hosts have the IPv4 addresses of the lab file; with IPv6
// on, every interface would announce itself as it comes up (router
// solicitations, duplicate address detection, MLD reports), multicasts
// the switches flood through the fabric and the captures show. A kernel
// without IPv6 has nothing to turn off.
func hostIPv4Only(ns *Namespace) error {
	return nsOnThread(ns.Handle, func() error {
		// /proc/sys/net belongs to the namespace of the thread that opens it.
		err := os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1\n"), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: net.ipv6.conf.default.disable_ipv6: %w", ns.Name, err)
		}
		return nil
	})
}

// SleepContext waits d, or less when ctx is done (its error then).
func SleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// info is the LabInfo of a built lab.
func (l *Lab) info(plan *upPlan, labFile string, took time.Duration) *LabInfo {
	li := &LabInfo{Lab: l.Spec.Name, File: labFile, Fabric: l.Spec.Fabric, Hosts: plan.mode, StateDir: l.State.Dir, Took: took}
	if l.Spec.TimeDilation > 1 {
		li.TimeDilation = l.Spec.TimeDilation
	}
	for _, pn := range plan.nodes {
		ni := NodeInfo{Name: pn.node.Name, Kind: pn.node.Kind, Namespace: pn.namespace}
		if d := pn.daemon; d != nil {
			ni.Daemon, ni.Binary, ni.Control, ni.Metrics = d.name, d.binary, d.control, d.metrics
			ni.Log, _ = l.State.LogPath(d.name)
			if p := l.procs[pn.node.Name]; p != nil {
				ni.Pid = p.Pid
			}
		}
		for _, pp := range pn.ports {
			ni.Ports = append(ni.Ports, PortInfo{Name: pp.name, Peer: pp.peer, Transport: pp.uri, NoFlood: pp.noFlood})
		}
		if f := pn.iface; f != nil {
			fi := &IfaceInfo{Name: f.name, Addr: f.addr.String(), MAC: net.HardwareAddr(f.mac[:]).String(),
				MTU: f.mtu, Neighbours: len(f.neigh), Owner: f.owner}
			for _, r := range f.routes {
				fi.Routes = append(fi.Routes, r.String())
			}
			ni.Iface = fi
		}
		li.Nodes = append(li.Nodes, ni)
	}
	return li
}

// Release gives up the lab's state lock and stops supervising its
// daemons, which keep running (`emulab up` exits while the lab stays up).
func (l *Lab) Release() error {
	return l.State.Close()
}

// Down tears the lab down (daemons, namespaces, sockets, state). Every
// daemon is marked as stopping first, so their exits are expected (Health
// reports none of them). Only the first call does anything; later calls
// return its result.
func (l *Lab) Down() error {
	l.downOnce.Do(func() {
		l.down.Store(true)
		for _, p := range l.procs {
			p.stopping.Store(true)
		}
		l.downErr = l.State.Teardown(l.grace)
		if cerr := l.State.Close(); l.downErr == nil {
			l.downErr = cerr
		}
	})
	return l.downErr
}

// Proc is the daemon of node, nil if the node has none (a TAP host).
func (l *Lab) Proc(node string) *Proc { return l.procs[node] }

// Health reports the lab's daemons that exited without being stopped
// (Proc.Stop, Down): a crash, a kill -9 from outside. The error names
// each, with its exit status and the end of its log; nil when every
// daemon runs.
func (l *Lab) Health() error {
	var dead []string
	for _, n := range l.Spec.Nodes {
		p := l.procs[n.Name]
		if p == nil || p.stopping.Load() {
			continue
		}
		select {
		case <-p.Done():
			logPath, _ := l.State.LogPath(p.Name)
			dead = append(dead, fmt.Sprintf("%s of node %s exited during the test (%v); its log ends:\n%s", p.Name, n.Name, p.err, logTail(logPath, 10)))
		default:
		}
	}
	if len(dead) == 0 {
		return nil
	}
	return errors.New(strings.Join(dead, "\n"))
}

// Namespace is the namespace of node; an error once the lab is down.
func (l *Lab) Namespace(node string) (string, error) {
	if l.Spec.Node(node) == nil {
		return "", fmt.Errorf("lab %s has no node %q", l.Spec.Name, node)
	}
	if l.down.Load() {
		return "", fmt.Errorf("lab %s is down (Lab.Down): node %s has no namespace any more", l.Spec.Name, node)
	}
	return NamespaceName(l.Spec.Name, node)
}

// Down tears down the lab called name under root ("" is
// DefaultStateRoot), whatever state it is in: Teardown.
func Down(root, name string, grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return Teardown(root, name, grace)
}

// forgetNamespace drops a namespace record (one that turned out to be
// somebody else's, so Teardown must not delete it).
func (s *State) forgetNamespace(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range s.rec.Namespaces {
		if n == name {
			s.rec.Namespaces = append(s.rec.Namespaces[:i], s.rec.Namespaces[i+1:]...)
			_ = s.save()
			return
		}
	}
}

// recordEmpty reports whether the state records nothing.
func (s *State) recordEmpty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.empty()
}

func (r *nsRecord) empty() bool {
	return len(r.Namespaces) == 0 && len(r.Procs) == 0 && len(r.Sockets) == 0
}

// readRecord reads a lab's state.json without taking the lock (for
// status, and to tell "already up" from "being brought up").
func readRecord(root, name string) (*nsRecord, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("lab name: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(root, name, "state.json"))
	if err != nil {
		return nil, err
	}
	var r nsRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (%w: `%s` removes what the lab left behind)", filepath.Join(root, name, "state.json"), err, ErrStateCorrupt, downCommand(root, name))
	}
	return &r, nil
}

// DownCommand is the emulab command that takes lab name down under the
// state root, for hints (downCommand).
func DownCommand(root, name string) string { return downCommand(root, name) }

// downCommand is the emulab command that takes lab name down, for hints:
// with the state directory when it is not the default.
func downCommand(root, name string) string { return labCommand(root, "down", name) }

// namespaceTaken explains why node's namespace ns of lab name exists
// already. Lab and node names join with '-', so a lab under this state
// directory may own it under another split (lab w2-x's h1 and lab w2's
// x-h1 are both emu-w2-x-h1): its record says so. Otherwise the mark up
// leaves on the namespace's lo (MarkOwner) names the state directory of
// the lab that made it, wherever that is (another --state-dir, a test's),
// and `emulab down` there is the way to remove it: deleting the namespace
// by hand would cut a running lab out from under its daemons. Only a
// namespace nobody marked gets the `ip netns delete` advice.
func namespaceTaken(root, name, node, ns string) error {
	labs, _ := Labs(root)
	for _, other := range labs {
		rec, err := readRecord(root, other)
		if err != nil || !slices.Contains(rec.Namespaces, ns) {
			continue
		}
		if other == name {
			break // the lab itself, half torn down
		}
		return fmt.Errorf("namespace %s of node %s is lab %s's, which is up: lab and node names join with '-' to the same name; rename one, or take lab %s down first (`%s`)",
			ns, node, other, other, downCommand(root, other))
	}
	if owner := namespaceOwner(ns); owner != "" {
		ownerRoot, ownerLab := filepath.Dir(owner), filepath.Base(owner)
		state := "which is up or was not taken down"
		if _, err := os.Stat(filepath.Join(owner, "state.json")); err != nil {
			state = "which was not taken down (its state directory is gone; down finds the namespaces by their mark)"
		}
		return fmt.Errorf("namespace %s of node %s exists already: it belongs to lab %s under state directory %s, %s: `%s` removes that lab (its daemons run in the namespace: do not delete it by hand)",
			ns, node, ownerLab, ownerRoot, state, downCommand(ownerRoot, ownerLab))
	}
	return fmt.Errorf("namespace %s of node %s exists already and no lab marked it as its own (made by hand, or by an emulab older than the marks): if nothing runs in it (`ip netns pids %s`), `ip netns delete %s` removes it; or rename lab %s",
		ns, node, ns, ns, name)
}
