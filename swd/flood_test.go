package swd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emufabric/emufabric/rt"
	"github.com/emufabric/emufabric/wire"
)

// startFloodDaemon runs sw1 of testdata/flood.yaml with its three ports
// listening on seqpacket sockets, the test connected to each, and
// noFlood passed as --no-flood.
func startFloodDaemon(t *testing.T, noFlood ...string) (*testDaemon, [3]*rt.Seqpacket) {
	t.Helper()
	dir := t.TempDir()
	o := Options{Lab: "testdata/flood.yaml", Node: "sw1", Control: filepath.Join(dir, "ctl.sock"), NoFlood: noFlood}
	for _, p := range []string{"p1", "p2", "p3"} {
		b, err := ParsePortFlag(p + "=seqpacket-listen:" + filepath.Join(dir, p+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		o.Ports = append(o.Ports, b)
	}
	d, err := New(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d.Start()
	td := &testDaemon{d: d, ctl: o.Control}
	var links [3]*rt.Seqpacket
	t.Cleanup(func() {
		for _, l := range links {
			if l != nil {
				l.Close()
			}
		}
		d.Close()
	})
	for i, b := range o.Ports {
		if links[i], err = rt.DialSeqpacket(b.Path); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "ports up", func() bool {
		var st StatusResponse
		td.call(t, Request{Op: "status"}, &st)
		return len(st.Ports) == 3 && st.Ports[0].Up && st.Ports[1].Up && st.Ports[2].Up
	})
	return td, links
}

// TestNoFloodPort: a --no-flood port (outside the spanning tree) gets no
// flooded copy of a broadcast, and a broadcast arriving on it is dropped
// and counted instead of flooded to the other ports; unicast still
// crosses it.
func TestNoFloodPort(t *testing.T) {
	td, links := startFloodDaemon(t, "p3")
	bcast := func(tag byte) []byte {
		b := udpFrame(10, 0)
		copy(b[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		b[len(b)-1] = tag
		return b
	}

	var st StatusResponse
	td.call(t, Request{Op: "status"}, &st)
	for _, ps := range st.Ports {
		if ps.NoFlood != (ps.Port == "p3") {
			t.Errorf("status of %s: no_flood %v", ps.Port, ps.NoFlood)
		}
	}

	// Broadcast from h1: to h2 only.
	b1 := bcast(1)
	send(t, links[0], b1)
	if got := recv(t, links[1], 1); !bytes.Equal(got[0], b1) {
		t.Fatalf("h2 got %x, want the broadcast", got[0])
	}
	// Counters are taken on the loop goroutine, which counted every
	// copy of b1 when it flooded it.
	if c := td.counters(t, "p1"); c["flood_rx"] != 1 || c["flood_tx"] != 0 {
		t.Errorf("p1 flood_rx %d flood_tx %d, want 1 0", c["flood_rx"], c["flood_tx"])
	}
	if c := td.counters(t, "p2"); c["flood_tx"] != 1 {
		t.Errorf("p2 flood_tx %d, want 1", c["flood_tx"])
	}
	if c := td.counters(t, "p3"); c["flood_tx"] != 0 || c["transport_tx_frames"] > c["link_state_tx"] {
		t.Errorf("p3 (--no-flood) flood_tx %d transport_tx_frames %d (link-state advertisements %d), want 0, only advertisements",
			c["flood_tx"], c["transport_tx_frames"], c["link_state_tx"])
	}

	// Broadcast from the other switch on the blocked port: not flooded.
	send(t, links[2], bcast(2))
	waitFor(t, "p3 flood_blocked_rx", func() bool { return td.counters(t, "p3")["flood_blocked_rx"] == 1 })
	if c := td.counters(t, "p3"); c["flood_rx"] != 0 {
		t.Errorf("p3 flood_rx %d, want 0", c["flood_rx"])
	}
	for _, p := range []string{"p1", "p2"} {
		if c := td.counters(t, p); c["flood_tx"] != map[string]uint64{"p1": 0, "p2": 1}[p] {
			t.Errorf("%s flood_tx %d after a broadcast on the blocked port", p, c["flood_tx"])
		}
	}

	// Unicast from the other switch to h2 still crosses the blocked port.
	u := udpFrame(20, 0)
	send(t, links[2], u)
	if got := recv(t, links[1], 1); !bytes.Equal(got[0], u) {
		t.Fatalf("h2 got %x, want the unicast frame from p3", got[0])
	}
	if c := td.counters(t, "p1"); c["transport_tx_frames"] != 0 {
		t.Errorf("p1 sent %d frames, want none", c["transport_tx_frames"])
	}
}

// TestFloodWithoutNoFlood: without --no-flood every other connected port
// gets a copy (the default, a plain L2 switch).
func TestFloodWithoutNoFlood(t *testing.T) {
	td, links := startFloodDaemon(t)
	// The ports coming up sent link-state advertisements to the other
	// switch (p3): counted from here.
	base := map[string]map[string]uint64{}
	for _, p := range []string{"p1", "p2", "p3"} {
		base[p] = td.counters(t, p)
	}
	b := udpFrame(10, 0)
	copy(b[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	send(t, links[2], b)
	for _, i := range []int{0, 1} {
		if got := recv(t, links[i], 1); !bytes.Equal(got[0], b) {
			t.Errorf("port %d got %x, want the broadcast", i, got[0])
		}
	}
	if c := td.counters(t, "p3"); c["flood_rx"] != 1 || c["flood_blocked_rx"] != 0 {
		t.Errorf("p3 flood_rx %d flood_blocked_rx %d, want 1 0", c["flood_rx"], c["flood_blocked_rx"])
	}
	// The ports' MACs saw the broadcast: the _phy counters (ethtool -S,
	// /metrics) count it, though the daemon flooded it outside the engine.
	n := uint64(len(b))
	for p, want := range map[string][2]uint64{"p3": {1, 0}, "p1": {0, 1}, "p2": {0, 1}} {
		c := td.counters(t, p)
		for k, v := range base[p] {
			c[k] -= v
		}
		if c["rx_packets_phy"] != want[0] || c["rx_bytes_phy"] != want[0]*n || c["tx_packets_phy"] != want[1] || c["tx_bytes_phy"] != want[1]*n {
			t.Errorf("%s rx_packets_phy %d rx_bytes_phy %d tx_packets_phy %d tx_bytes_phy %d; want %d, %d bytes in, %d, %d bytes out",
				p, c["rx_packets_phy"], c["rx_bytes_phy"], c["tx_packets_phy"], c["tx_bytes_phy"], want[0], want[0]*n, want[1], want[1]*n)
		}
	}
}

func TestNoFloodUnknownPort(t *testing.T) {
	dir := t.TempDir()
	o := Options{Lab: "testdata/flood.yaml", Node: "sw1", Control: filepath.Join(dir, "ctl.sock"), NoFlood: []string{"p9"}}
	_, err := New(o, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--no-flood p9") {
		t.Errorf("New with --no-flood p9: %v, want an error naming the flag", err)
	}
}

// lineWaiter is a log writer that closes seen once a line containing want
// was written.
type lineWaiter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// TestNewContextCancelWhileDialling: cancelling the context while a
// seqpacket-dial port retries makes NewContext return at once with the
// context's error, and the listening socket it had created is removed.
func TestNewContextCancelWhileDialling(t *testing.T) {
	dir := t.TempDir()
	o := Options{Lab: "testdata/flood.yaml", Node: "sw1", Control: filepath.Join(dir, "ctl.sock")}
	for _, v := range []string{"p1=seqpacket-listen:" + filepath.Join(dir, "p1.sock"), "p3=seqpacket-dial:" + filepath.Join(dir, "nobody.sock")} {
		b, err := ParsePortFlag(v)
		if err != nil {
			t.Fatal(err)
		}
		o.Ports = append(o.Ports, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := &lineWaiter{want: "port p3: dialling", seen: make(chan struct{})}
	type result struct {
		d   *Daemon
		err error
	}
	res := make(chan result, 1)
	go func() {
		d, err := NewContext(ctx, o, lw)
		res <- result{d, err}
	}()
	select {
	case <-lw.seen:
	case r := <-res:
		t.Fatalf("NewContext returned before dialling: %v", r.err)
	}
	if _, err := os.Stat(o.Ports[0].Path); err != nil {
		t.Fatalf("listening socket while dialling: %v", err)
	}
	cancel()
	select {
	case r := <-res:
		if r.d != nil {
			r.d.Close()
		}
		if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "--port p3=") {
			t.Errorf("NewContext: %v, want context.Canceled naming the port", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NewContext still dialling 10 s after cancel")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

// TestFloodLearns: the daemon floods broadcasts outside the engine, and
// the engine still learns the sender from them: the unicast answer to an
// ARP request from a host the lab file does not know (its own MAC and
// address) reaches it instead of being dropped for want of a route (two
// hand-run switches over a UDP link never resolved ARP before).
func TestFloodLearns(t *testing.T) {
	td, links := startFloodDaemon(t)
	stranger := wire.MAC{0x02, 0xaa, 0, 0, 0, 0x33}
	far := [4]byte{192, 0, 2, 33} // no route for it in the lab
	b := udpFrame(10, 0)
	wire.EncodeEthernet(b, &wire.EthernetFields{Dst: wire.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Src: stranger, EtherType: wire.EtherTypeIPv4})
	send(t, links[2], b) // the stranger is behind p3 (the other switch)
	recv(t, links[0], 1)
	recv(t, links[1], 1)
	reply := udpFrame(20, 0)
	wire.EncodeEthernet(reply, &wire.EthernetFields{Dst: stranger, Src: macH1, EtherType: wire.EtherTypeIPv4})
	wire.IPv4(reply[wire.EthernetSize:]).Encode(&wire.IPv4Fields{TotalLength: uint16(len(reply) - wire.EthernetSize), TTL: 64, Protocol: wire.IPProtoUDP, Src: ipH1, Dst: far})
	send(t, links[0], reply)
	if got := recv(t, links[2], 1); !bytes.Equal(got[0], reply) {
		t.Fatalf("p3 got %x, want the unicast reply", got[0])
	}
	if c := td.counters(t, "p1"); c["drop_no_route"] != 0 {
		t.Errorf("p1 drop_no_route %d", c["drop_no_route"])
	}
}

// TestStatusLinkState: a switch's status says what its link-state routing
// holds and which links its routes avoid (`up` waits on it, `status`
// prints it): sw1:p3 set down is advertised and routed around, and set up
// again, routed around no more.
func TestStatusLinkState(t *testing.T) {
	td, _ := startFloodDaemon(t)
	view := func() *LinkStateStatus {
		var st StatusResponse
		td.call(t, Request{Op: "status"}, &st)
		if st.LinkState == nil {
			t.Fatalf("status of a RoCE switch has no link_state: %+v", st)
		}
		return st.LinkState
	}
	waitFor(t, "nothing routed around with every port up", func() bool { return len(view().RoutedAround) == 0 })
	var st StatusResponse
	td.call(t, Request{Op: "link", Port: "p3", State: "down"}, &st)
	waitFor(t, "sw1:p3-sw2:p1 routed around", func() bool {
		v := view()
		return strings.Join(v.RoutedAround, " ") == "sw1:p3-sw2:p1" && strings.Join(v.Down["sw1"], " ") == "p3"
	})
	td.call(t, Request{Op: "link", Port: "p3", State: "up"}, &st)
	waitFor(t, "nothing routed around after p3 came back", func() bool {
		v := view()
		return len(v.RoutedAround) == 0 && len(v.Down["sw1"]) == 0
	})
}
