package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/frame"
	"github.com/emufabric/emufabric/lab"
	"github.com/emufabric/emufabric/sim"
	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// simCapture (emulab sim --capture DIR) writes every frame the simulator's
// links deliver into one classic pcap file per lab link, named after its
// two ends ("h1-ib0_sw1-p1.pcap"), both directions in one file.
//
// Native InfiniBand links are written the way Mellanox's ibdump writes
// them, as pcap link type 197 (ERF): data packets (LRH through VCRC) as
// ERF type 21 records, 6-byte link (flow-control) packets as type 25. The
// ERF interface number tells the direction: 0 is the link's first
// endpoint sending to the second, 1 the reverse (Wireshark's
// erf.flags.cap). Wireshark 4.0 opens ERF but not link type 247. RoCE
// links are Ethernet (link type 1) without the FCS.
//
// Wireshark 4.0's infiniband_link dissector reads 8 (sometimes 48) bytes
// of LRH-like data before the link fields, so a correct 6-byte link record
// shows as Malformed with no fields. With pad (--capture-pad-links) each
// link packet is written zero-padded to 64 bytes (ERF wlen 64): the real 6
// bytes come first and Wireshark then shows Op, FCTBS, VL, FCCL and LPCRC.
//
// Timestamps are the simulated time at which the frame's head reached the
// receiver, counted from the Unix epoch (a run starts at 1970-01-01).
type simCapture struct {
	dir     string
	writers []*capture.PcapWriter // by lab link index
	files   []*os.File
	ib      bool
	pad     bool
	padBuf  [capture.IBLinkPadSize]byte
	err     error
	packets uint64
}

// startCapture creates dir and one file per link, and taps s.
func startCapture(dir string, pad bool, spec *lab.Spec, s *sim.Sim) (*simCapture, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &simCapture{dir: dir, ib: spec.Fabric == lab.FabricIB, pad: pad}
	link := capture.LinkTypeEthernet
	if c.ib {
		link = capture.LinkTypeERF
	}
	links := s.Links()
	if len(links) != len(spec.Links) {
		return nil, fmt.Errorf("%d simulated links for %d lab links", len(links), len(spec.Links))
	}
	index := make(map[*sim.Link]int, len(links))
	for i, l := range spec.Links {
		f, err := os.Create(filepath.Join(dir, captureName(l)))
		if err != nil {
			c.closeFiles()
			return nil, err
		}
		c.files = append(c.files, f)
		w, err := capture.NewPcapWriter(f, link)
		if err != nil {
			c.closeFiles()
			return nil, err
		}
		c.writers = append(c.writers, w)
		index[links[i]] = i
	}
	s.SetTap(func(l *sim.Link, dir int, f *frame.Frame) {
		c.write(index[l], dir, f)
	})
	return c, nil
}

// captureName is the file of link l: "A-portA_B-portB.pcap".
func captureName(l *lab.Link) string {
	return fmt.Sprintf("%s-%s_%s-%s.pcap", l.A.Node.Name, l.A.Name, l.B.Node.Name, l.B.Name)
}

func (c *simCapture) write(i, dir int, f *frame.Frame) {
	if c.err != nil {
		return
	}
	ts := time.Unix(0, int64(f.HeadAt/clock.Nanosecond)).UTC()
	w := c.writers[i]
	var err error
	switch {
	case !c.ib:
		err = w.WritePacket(ts, f.Data)
	case len(f.Data) == wire.IBLinkSize && c.pad:
		copy(c.padBuf[:], f.Data)
		err = w.WriteERF(ts, capture.ERFTypeInfiniBandLink, uint8(dir), c.padBuf[:])
	case len(f.Data) == wire.IBLinkSize:
		err = w.WriteERF(ts, capture.ERFTypeInfiniBandLink, uint8(dir), f.Data)
	default:
		err = w.WriteERF(ts, capture.ERFTypeInfiniBand, uint8(dir), f.Data)
	}
	if err != nil {
		c.err = fmt.Errorf("%s: %w", c.files[i].Name(), err)
		return
	}
	c.packets++
}

// Close flushes and closes every file and reports the first error.
func (c *simCapture) Close() error {
	err := c.err
	for _, w := range c.writers {
		if e := w.Close(); e != nil && err == nil {
			err = e
		}
	}
	return errors.Join(err, c.closeFiles())
}

func (c *simCapture) closeFiles() error {
	var err error
	for _, f := range c.files {
		if e := f.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}
