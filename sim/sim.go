package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/switchcore"
)

// Sim is one simulation: clock, RNG, frame pool, nodes, links and flows.
// It is single-goroutine; nothing in it may be shared with another
// goroutine while Run is in progress.
type Sim struct {
	sched
	opt  Options
	rng  *rand.Rand
	pool *frame.Pool

	nodes    map[string]endpoint
	order    []string // node names in insertion order
	hosts    []*Host
	nics     []*nicHost  // NIC hosts (nichost.go)
	rdma     []*rdmaFlow // RDMA flows between NIC hosts (rdma.go)
	switches []*simSwitch
	// rerouted caches the switches' routes per link-state database
	// (switch.go reroute).
	rerouted map[string]map[*simSwitch][]switchcore.Route
	links    []*Link
	flows    []*flow

	started bool
	// dataMoved counts data frames delivered on any link: the deadlock
	// detector watches it.
	dataMoved uint64
	// active counts sources that may still send.
	active int
	// prios are the priorities flows use (bit mask), for series.
	prios uint8

	det      deadlockDetector
	series   *Series
	sampler  *timer
	lastRx   []uint64 // per flow rx bytes at the previous sample
	deadlock *Deadlock
	tap      func(l *Link, dir int, f *frame.Frame)
	sm       *SubnetManager // ManageIB's, nil without one
}

// SetTap calls fn with every frame a link delivers, at its delivery time
// (f.HeadAt; f.TailAt is when its last bit arrives), before the receiver
// sees it: the hook for captures. fn must not keep f or change it.
func (s *Sim) SetTap(fn func(l *Link, dir int, f *frame.Frame)) { s.tap = fn }

// New returns an empty simulation.
func New(opt Options) *Sim {
	if opt.Duration <= 0 {
		opt.Duration = 10 * clock.Millisecond
	}
	if opt.EventBudget == 0 {
		opt.EventBudget = 1 << 40
	}
	if opt.DeadlockWindow <= 0 {
		opt.DeadlockWindow = 100 * clock.Microsecond
	}
	s := &Sim{
		opt:   opt,
		rng:   rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9E3779B97F4A7C15)),
		pool:  frame.NewPool(),
		nodes: make(map[string]endpoint),
	}
	return s
}

// Options returns the run's options.
func (s *Sim) Options() Options { return s.opt }

// Rand is the run's seeded generator. Everything random in a run draws from
// it, in event order, so a seed fixes the run.
func (s *Sim) Rand() *rand.Rand { return s.rng }

// Pool is the run's frame pool.
func (s *Sim) Pool() *frame.Pool { return s.pool }

// Events is the number of events fired so far.
func (s *Sim) Events() uint64 { return s.events }

// RunUntil fires every event up to t (inclusive) and advances the clock
// to t. It is the low-level driver; Run is the scenario runner.
func (s *Sim) RunUntil(t clock.Time) error {
	if err := s.Start(); err != nil {
		return err
	}
	return s.runUntil(t, s.opt.EventBudget)
}

// At arms a one-shot function at absolute time at (test and scenario
// helper; allocates one timer).
func (s *Sim) At(at clock.Time, f func()) {
	s.newTimer(f).Reset(at)
}

func (s *Sim) addNode(name string, e endpoint) error {
	if name == "" {
		return errors.New("sim: node without a name")
	}
	if _, ok := s.nodes[name]; ok {
		return fmt.Errorf("sim: duplicate node %q", name)
	}
	if s.started {
		return fmt.Errorf("sim: node %q added after start", name)
	}
	s.nodes[name] = e
	s.order = append(s.order, name)
	return nil
}

// Connect joins port a.Port of node a.Node with port b.Port of b.Node.
func (s *Sim) Connect(a, b PortRef, cfg LinkConfig) (*Link, error) {
	if s.started {
		return nil, errors.New("sim: Connect after start")
	}
	ea, ok := s.nodes[a.Node]
	if !ok {
		return nil, fmt.Errorf("sim: link endpoint %s: unknown node", a.Node)
	}
	eb, ok := s.nodes[b.Node]
	if !ok {
		return nil, fmt.Errorf("sim: link endpoint %s: unknown node", b.Node)
	}
	if cfg.Rate == 0 || cfg.Delay < 0 || cfg.MTU < 0 || !(cfg.Loss >= 0 && cfg.Loss <= 1) || !(cfg.Corrupt >= 0 && cfg.Corrupt <= 1) {
		return nil, fmt.Errorf("sim: link %s:%d-%s:%d: rate %d, delay %v, MTU %d, loss %v, corrupt %v: need a rate, no negative values, probabilities in [0, 1]",
			a.Node, a.Port, b.Node, b.Port, cfg.Rate, cfg.Delay, cfg.MTU, cfg.Loss, cfg.Corrupt)
	}
	if ea.ib() != eb.ib() {
		return nil, fmt.Errorf("sim: link %s:%d-%s:%d joins an IB and an Ethernet node", a.Node, a.Port, b.Node, b.Port)
	}
	l := &Link{s: s, Cfg: cfg, A: a, B: b, up: true}
	l.dir[0] = linkDir{l: l, to: eb, toPort: b.Port, from: ea}
	l.dir[1] = linkDir{l: l, to: ea, toPort: a.Port, from: eb}
	for i := range l.dir {
		d := &l.dir[i]
		d.timer = s.newTimer(d.arrive)
	}
	if err := s.attach(a, &l.dir[0], l); err != nil {
		return nil, err
	}
	if err := s.attach(b, &l.dir[1], l); err != nil {
		return nil, err
	}
	for _, ev := range cfg.Events {
		up := ev.Up
		t := s.newTimer(func() { l.setUp(up) })
		l.evs = append(l.evs, t)
	}
	s.links = append(s.links, l)
	return l, nil
}

// attach gives node p.Node the transmit side of its port p.Port.
func (s *Sim) attach(p PortRef, tx *linkDir, l *Link) error {
	switch n := s.nodes[p.Node].(type) {
	case *Host:
		if p.Port != 0 {
			return fmt.Errorf("sim: host %s has only port 0", p.Node)
		}
		if n.tx != nil {
			return fmt.Errorf("sim: host %s port 0 already connected", p.Node)
		}
		n.tx, n.link = tx, l
	case *nicHost:
		if p.Port != 0 {
			return fmt.Errorf("sim: nic %s has only port 0", p.Node)
		}
		if n.tx != nil {
			return fmt.Errorf("sim: nic %s port 0 already connected", p.Node)
		}
		n.tx, n.link = tx, l
	case *simSwitch:
		if p.Port < 0 || p.Port >= len(n.ports) {
			return fmt.Errorf("sim: switch %s has no port %d", p.Node, p.Port)
		}
		if n.ports[p.Port].tx != nil {
			return fmt.Errorf("sim: switch %s port %d already connected", p.Node, p.Port)
		}
		n.ports[p.Port].tx, n.ports[p.Port].link = tx, l
	}
	return nil
}

// Links returns the links in creation order.
func (s *Sim) Links() []*Link { return s.links }

// Host returns the named host, or nil.
func (s *Sim) Host(name string) *Host {
	h, _ := s.nodes[name].(*Host)
	return h
}

// Start instantiates the switches (installing routes the configuration
// left open), arms link events, samplers and sources. Run and RunUntil
// call it; calling it twice is harmless.
func (s *Sim) Start() error {
	if s.started {
		return nil
	}
	for _, h := range s.hosts {
		if h.tx == nil {
			return fmt.Errorf("sim: host %s is not connected", h.cfg.Name)
		}
	}
	if err := s.startSwitches(); err != nil {
		return err
	}
	if err := s.startNICs(); err != nil {
		return err
	}
	s.started = true
	for _, l := range s.links {
		for i, ev := range l.Cfg.Events {
			l.evs[i].Reset(ev.At)
		}
	}
	for _, h := range s.hosts {
		h.start()
	}
	for _, f := range s.flows {
		f.start()
	}
	s.startSampling()
	s.det.start(s)
	return nil
}

// Run runs the scenario to its end time, calling progress (if not nil)
// about a hundred times, and returns the results. It never hangs: the run
// stops at Options.Duration or when the event budget is spent (then the
// partial results come with ErrEventBudget).
func (s *Sim) Run(progress func(now, end clock.Time)) (*Results, error) {
	if err := s.Start(); err != nil {
		return nil, err
	}
	end := s.opt.Duration
	step := end / 100
	if step <= 0 {
		step = end
	}
	var err error
	for t := s.now; t < end; {
		next := min(t+step, end)
		if err = s.runUntil(next, s.opt.EventBudget); err != nil {
			break
		}
		t = next
		if progress != nil {
			progress(t, end)
		}
	}
	r := s.results()
	if err != nil {
		r.Truncated = true
	}
	return r, err
}
