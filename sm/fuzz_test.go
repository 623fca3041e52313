package sm_test

import (
	"encoding/binary"
	"testing"

	"github.com/emufabric/emufabric/clock"
	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/sm"
)

// FuzzReceive hands the SM an arbitrary response in the middle of a sweep
// (its transaction ID forced onto an outstanding one when tid says so):
// no panic, and the sweep still finishes.
func FuzzReceive(f *testing.F) {
	ni := getResp(mad.AttrNodeInfo)
	mad.NodeInfo(ni.Data()).Encode(&mad.NodeInfoFields{NodeType: mad.NodeTypeSwitch, NumPorts: 200, NodeGUID: 0x999, LocalPortNum: 7})
	f.Add([]byte(ni), uint8(1))
	f.Add([]byte(getResp(mad.AttrPortInfo)), uint8(2))
	f.Add([]byte(getResp(mad.AttrSwitchInfo)), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, tid uint8) {
		if len(b) != mad.Size {
			return
		}
		h := twoTier(t, sm.Config{Timeout: 5 * clock.Microsecond, Retries: 1})
		h.m.Start(0)
		buf := make(mad.SMP, mad.Size)
		h.m.Poll(0, buf) // TID 1 outstanding: NodeInfo of the SM node
		if tid != 0 {
			binary.BigEndian.PutUint64(b[8:], uint64(tid%3))
		}
		h.m.Receive(0, b)
		h.settle()
		if st := h.m.Stats(); st.HeavySweeps != 1 {
			t.Fatalf("sweep did not finish: %+v", st)
		}
	})
}

func getResp(attr uint16) mad.SMP {
	var f mad.SMPFields
	f.Method, f.AttributeID, f.TransactionID = mad.MethodGetResp, attr, 1
	mad.DRPath(&f, nil)
	f.Direction = true
	s := make(mad.SMP, mad.Size)
	s.Encode(&f)
	return s
}
