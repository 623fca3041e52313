package nicd

import (
	"errors"
	"fmt"
	"time"

	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/nic"
)

// perfquery: the emunic sends a PerfMgt Get(PortCounters) from its QP1 to
// the QP1 of the port with the given LID, over the fabric, and answers
// with what that port's agent reported (nic/gsi.go), as infiniband-diags'
// perfquery does from a host.

// perfQueryTimeout bounds the wait for the answer: one GMP each way
// through a few daemons.
const perfQueryTimeout = 2 * time.Second

type gmpResult struct {
	pc     mad.PortCountersFields
	status uint16
}

// initGSI routes GMP answers to the perfquery waiting for them. Before Run.
func (d *Daemon) initGSI() {
	if d.cfg.NIC.Fabric != nic.FabricIB {
		return
	}
	d.gmpWait = map[uint64]chan gmpResult{}
	d.nic.SetGMPDeliver(func(m mad.MAD, _ uint16) {
		ch := d.gmpWait[m.TransactionID()]
		if ch == nil || m.MgmtClass() != mad.ClassPerfMgt {
			return // late, or not ours
		}
		delete(d.gmpWait, m.TransactionID())
		ch <- gmpResult{pc: mad.PortCounters(m[mad.PerfDataOffset:]).Fields(), status: m.Status()}
	})
}

func (d *Daemon) opPerfQuery(req *Request) (*Response, error) {
	if d.gmpWait == nil {
		return nil, errors.New("perfquery: not an InfiniBand HCA")
	}
	if req.LID == 0 || req.LID >= 0xC000 {
		return nil, fmt.Errorf("perfquery: lid %d is not a unicast LID", req.LID)
	}
	ch := make(chan gmpResult, 1)
	var tid uint64
	err := d.Do(func() {
		d.gmpTID++
		tid = d.gmpTID
		d.gmpWait[tid] = ch
		m := make(mad.MAD, mad.Size)
		m.Encode(&mad.Fields{BaseVersion: 1, MgmtClass: mad.ClassPerfMgt, ClassVersion: mad.PerfMgtClassVersion,
			Method: mad.MethodGet, TransactionID: tid, AttributeID: mad.AttrPortCounters})
		m[mad.PerfDataOffset+1] = 1 // PortSelect: the HCA's one port
		d.nic.SendGMP(req.LID, 0, m)
	})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.status != 0 {
			return nil, fmt.Errorf("perfquery: lid %d answered with MAD status %#04x", req.LID, r.status)
		}
		return &Response{PortCounters: &r.pc}, nil
	case <-time.After(perfQueryTimeout):
		d.Do(func() { delete(d.gmpWait, tid) })
		return nil, fmt.Errorf("perfquery: no answer from lid %d within %v (no such LID, or its port is not Active)", req.LID, perfQueryTimeout)
	}
}
