package zoo

import (
	"fmt"
	"io"
	"time"

	"github.com/emufabric/emufabric/wire/capture"
)

// Epoch is the timestamp of the first frame of a zoo capture; frame i is
// stamped Epoch + i µs, so files are byte-identical from run to run.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Timestamp returns the capture time of the i-th frame (from 0).
func Timestamp(i int) time.Time { return Epoch.Add(time.Duration(i) * time.Microsecond) }

// erfType is the ERF record type of an IB entry.
func erfType(l Link) (uint8, bool) {
	switch l {
	case LinkIB:
		return capture.ERFTypeInfiniBand, true
	case LinkIBFlowControl:
		return capture.ERFTypeInfiniBandLink, true
	}
	return 0, false
}

// WritePcap writes Ethernet entries to a classic pcap file (link type 1).
func WritePcap(w io.Writer, entries []Entry) error {
	pw, err := capture.NewPcapWriter(w, capture.LinkTypeEthernet)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if e.Link != LinkEthernet {
			return fmt.Errorf("zoo: %q is an %s packet; a pcap file of link type Ethernet cannot hold it", e.Name, e.Link)
		}
		if err := pw.WritePacket(Timestamp(i), e.Data); err != nil {
			return err
		}
	}
	return pw.Close()
}

// WriteERF writes IB entries to a classic pcap file of link type 197 (ERF):
// data packets as ERF type 21 records, link packets as type 25, the way
// ibdump stores them and Wireshark 4.0 reads them.
func WriteERF(w io.Writer, entries []Entry) error {
	pw, err := capture.NewPcapWriter(w, capture.LinkTypeERF)
	if err != nil {
		return err
	}
	for i, e := range entries {
		t, ok := erfType(e.Link)
		if !ok {
			return fmt.Errorf("zoo: %q is an %s frame; an ERF file holds native IB packets only", e.Name, e.Link)
		}
		if err := pw.WriteERF(Timestamp(i), t, 0, e.Data); err != nil {
			return err
		}
	}
	return pw.Close()
}

// WritePcapNG writes entries to a pcapng file, each with a comment naming
// it. Ethernet entries go to an interface of link type Ethernet, IB entries
// to one of link type ERF; an interface is only declared if an entry needs it.
func WritePcapNG(w io.Writer, entries []Entry) error {
	nw, err := capture.NewNgWriter(w, "emufabric frame zoo")
	if err != nil {
		return err
	}
	eth, erf := -1, -1
	for i, e := range entries {
		if t, ok := erfType(e.Link); ok {
			if erf < 0 {
				if erf, err = nw.AddInterface(capture.Interface{LinkType: capture.LinkTypeERF, Name: "ib0",
					Description: "native InfiniBand link (ERF records)"}); err != nil {
					return err
				}
			}
			err = nw.WriteERF(erf, Timestamp(i), t, 0, e.Data, e.Name)
		} else {
			if eth < 0 {
				if eth, err = nw.AddInterface(capture.Interface{LinkType: capture.LinkTypeEthernet, Name: "eth0",
					Description: "RoCEv2 Ethernet link"}); err != nil {
					return err
				}
			}
			err = nw.WritePacket(eth, Timestamp(i), e.Data, e.Name)
		}
		if err != nil {
			return err
		}
	}
	return nw.Close()
}
