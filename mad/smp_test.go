package mad_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/emufabric/emufabric/mad"
	"github.com/emufabric/emufabric/wire"
)

// unhex decodes hex with spaces and newlines, padding with zeros to n bytes.
func unhex(t *testing.T, s string, n int) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

// The bytes below are written from the IBA 14.2.1.2 layout by hand, not
// produced by the encoder: a directed-route SubnGet(NodeInfo) two hops out
// (exit port 1 of the SM's CA, then port 5), hop pointer 1 as sent.
func TestSMPGoldenDirected(t *testing.T) {
	want := unhex(t, `
		01 81 01 01  00 00 01 02  01 02 03 04 05 06 07 08  00 11 00 00  00 00 00 00
		00 00 00 00 00 00 00 00  ff ff ff ff`, mad.Size)
	want[128+1], want[128+2] = 1, 5 // InitialPath[1], [2]
	var f mad.SMPFields
	f.Method, f.TransactionID, f.AttributeID = mad.MethodGet, 0x0102030405060708, mad.AttrNodeInfo
	if !mad.DRPath(&f, []uint8{1, 5}) {
		t.Fatal("DRPath refused a 2-hop path")
	}
	got := make(mad.SMP, mad.Size)
	for i := range got {
		got[i] = 0xEE // every byte must be written
	}
	got.Encode(&f)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", []byte(got), want)
	}
	if err := got.Validate(0); err != nil {
		t.Fatal(err)
	}
	if !got.Directed() || got.Direction() || got.HopPointer() != 1 || got.HopCount() != 2 ||
		got.DrSLID() != mad.PermissiveLID || got.DrDLID() != mad.PermissiveLID || got.MKey() != 0 ||
		got.MAD().TransactionID() != 0x0102030405060708 || got.MAD().AttributeID() != mad.AttrNodeInfo {
		t.Fatalf("accessors disagree: %+v", got.MAD().Fields())
	}
	// The D bit is the top bit of the status field (IBA 14.2.1.2; Linux
	// IB_SMP_DIRECTION = 0x8000): setting it leaves the 15-bit status.
	got.SetStatus(mad.StatusInvalidField)
	got.SetDirection(true)
	if got[4] != 0x80 || got[5] != 0x1C || got.Status() != mad.StatusInvalidField || !got.Direction() {
		t.Fatalf("status bytes %x %x, Status 0x%x, D %v", got[4], got[5], got.Status(), got.Direction())
	}
}

// LID-routed SubnSet(PortInfo) for port 3 with M_Key: the directed-route
// bytes are reserved and must stay zero whatever the fields say.
func TestSMPGoldenLIDRouted(t *testing.T) {
	want := unhex(t, `
		01 01 01 02  00 00 00 00  00 00 00 00 00 00 00 2a  00 15 00 00  00 00 00 03
		11 22 33 44 55 66 77 88`, mad.Size)
	want[64+16], want[64+17] = 0x00, 0x07 // PortInfo.LID at data offset 16
	var f mad.SMPFields
	f.MgmtClass, f.Method, f.TransactionID, f.AttributeID, f.AttrModifier = mad.ClassSubnLID, mad.MethodSet, 42, mad.AttrPortInfo, 3
	f.MKey = 0x1122334455667788
	f.HopCount, f.HopPointer, f.DrSLID, f.Direction = 9, 9, 0xFFFF, true // ignored for LID routed
	f.InitialPath[3] = 9
	mad.PortInfo(f.Data[:]).Encode(&mad.PortInfoFields{LID: 7})
	got := make(mad.SMP, mad.Size)
	got.Encode(&f)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", []byte(got), want)
	}
	var back mad.SMPFields
	got.Fields(&back)
	if back.MgmtClass != mad.ClassSubnLID || back.MKey != f.MKey || back.AttrModifier != 3 || back.HopCount != 0 || back.Data != f.Data {
		t.Fatalf("fields %+v", back)
	}
}

func TestSMPRoundTrip(t *testing.T) {
	var f mad.SMPFields
	f.Method, f.Status, f.TransactionID, f.AttributeID, f.AttrModifier = mad.MethodGetResp, 0x001C, 0xDEADBEEFCAFEF00D, mad.AttrLinearFwdTable, 0x123
	f.MKey, f.Direction = 0xFFEEDDCCBBAA9988, true
	mad.DRPath(&f, []uint8{1, 2, 3, 4, 5, 6, 7})
	f.Direction = true
	f.HopPointer = 4
	for i := range f.Data {
		f.Data[i] = byte(i * 7)
	}
	for i := 1; i <= 7; i++ {
		f.ReturnPath[i] = byte(10 + i)
	}
	b := make(mad.SMP, mad.Size)
	b.Encode(&f)
	var g mad.SMPFields
	b.Fields(&g)
	if g != f {
		t.Fatalf("round trip:\n got %+v\nwant %+v", g, f)
	}
}

func TestSMPValidate(t *testing.T) {
	good := func() mad.SMP {
		var f mad.SMPFields
		f.Method, f.AttributeID = mad.MethodGet, mad.AttrNodeInfo
		mad.DRPath(&f, []uint8{1, 2})
		b := make(mad.SMP, mad.Size)
		b.Encode(&f)
		return b
	}
	tests := []struct {
		name   string
		mod    func(b mad.SMP) mad.SMP
		field  string
		reason wire.Reason
	}{
		{"short", func(b mad.SMP) mad.SMP { return b[:255] }, "", wire.ReasonTruncated},
		{"long", func(b mad.SMP) mad.SMP { return append(b, 0) }, "", wire.ReasonInconsistent},
		{"base version", func(b mad.SMP) mad.SMP { b[0] = 2; return b }, "BaseVersion", wire.ReasonUnsupported},
		{"class", func(b mad.SMP) mad.SMP { b[1] = 0x04; return b }, "MgmtClass", wire.ReasonInvalid},
		{"class version", func(b mad.SMP) mad.SMP { b[2] = 2; return b }, "ClassVersion", wire.ReasonUnsupported},
		{"hop count", func(b mad.SMP) mad.SMP { b[7] = 64; return b }, "HopCount", wire.ReasonInvalid},
		{"hop pointer", func(b mad.SMP) mad.SMP { b[6] = 4; return b }, "HopPointer", wire.ReasonInconsistent},
	}
	if err := good().Validate(0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.mod(good()).Validate(28)
			we, ok := err.(*wire.Error)
			if !ok || we.Header != "SMP" || we.Field != tc.field || we.Reason != tc.reason {
				t.Fatalf("got %v, want SMP.%s %v", err, tc.field, tc.reason)
			}
		})
	}
}

func TestNodeInfoGolden(t *testing.T) {
	want := unhex(t, `
		01 01 02 24  00 02 c9 03 00 aa bb cc  00 02 c9 03 00 aa bb c0  00 02 c9 03 00 aa bb c0
		00 01 c7 38  00 00 00 a1  11 00 02 c9`, mad.NodeInfoSize)
	f := mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeTypeSwitch, NumPorts: 36,
		SystemImageGUID: 0x0002c90300aabbcc, NodeGUID: 0x0002c90300aabbc0, PortGUID: 0x0002c90300aabbc0,
		PartitionCap: 1, DeviceID: 0xc738, Revision: 0xa1, LocalPortNum: 17, VendorID: 0x0002c9}
	got := make(mad.NodeInfo, mad.NodeInfoSize)
	got.Encode(&f)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", []byte(got), want)
	}
	if got.Fields() != f {
		t.Fatalf("round trip %+v", got.Fields())
	}
	if err := got.Validate(0); err != nil {
		t.Fatal(err)
	}
	got[2] = 4
	if err := got.Validate(64); err == nil || err.(*wire.Error).Field != "NodeType" {
		t.Fatalf("node type 4: %v", err)
	}
	got[2], got[3] = 1, 0
	if err := got.Validate(64); err == nil || err.(*wire.Error).Field != "NumPorts" {
		t.Fatalf("0 ports: %v", err)
	}
	if err := got[:39].Validate(64); err == nil || err.(*wire.Error).Reason != wire.ReasonTruncated {
		t.Fatalf("39 bytes: %v", err)
	}
}

// PortInfo offsets from IBA 14.2.5.6 (and Wireshark's dissector, which the
// tshark test checks independently).
func TestPortInfoLayout(t *testing.T) {
	f := mad.PortInfoFields{MKey: 1, GIDPrefix: 0xfe80000000000000, LID: 0x1234, MasterSMLID: 0x0001,
		CapabilityMask: mad.CapIsSM, LocalPortNum: 3, LinkWidthEnabled: 3, LinkWidthSupported: 3, LinkWidthActive: 2,
		LinkSpeedSupported: 7, PortState: mad.PortStateArmed, PhysState: mad.PhysStateLinkUp, LinkDownDefault: 2, LMC: 2,
		LinkSpeedActive: 4, LinkSpeedEnabled: 7, NeighborMTU: mad.MTU4096, MasterSMSL: 1, VLCap: 4,
		VLHighLimit: 9, VLArbHighCap: 8, VLArbLowCap: 8, MTUCap: mad.MTU4096, OperationalVLs: 4, SubnetTimeOut: 18}
	b := make(mad.PortInfo, mad.PortInfoSize)
	b.Encode(&f)
	checks := []struct {
		off  int
		want byte
	}{
		{7, 1}, {8, 0xfe}, {16, 0x12}, {17, 0x34}, {19, 1}, {23, 2}, {28, 3}, {29, 3}, {30, 3}, {31, 2},
		{32, 0x73}, {33, 0x52}, {34, 2}, {35, 0x47}, {36, 0x51}, {37, 0x40}, {38, 9}, {39, 8}, {40, 8},
		{41, 5}, {43, 0x40}, {51, 18},
	}
	for _, c := range checks {
		if b[c.off] != c.want {
			t.Errorf("byte %d = 0x%02x, want 0x%02x", c.off, b[c.off], c.want)
		}
	}
	if b.Fields() != f {
		t.Fatalf("round trip\n got %+v\nwant %+v", b.Fields(), f)
	}
	if err := b.Validate(0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		off   int
		v     byte
		field string
	}{{32, 0x75, "PortState"}, {33, 0x82, "PortPhysicalState"}, {36, 0x60, "NeighborMTU"}, {41, 6, "MTUCap"}} {
		c := append(mad.PortInfo(nil), b...)
		c[bad.off] = bad.v
		if err := c.Validate(64); err == nil || err.(*wire.Error).Field != bad.field {
			t.Errorf("byte %d = 0x%02x: %v, want PortInfo.%s", bad.off, bad.v, err, bad.field)
		}
	}
	if mad.MTUBytes(mad.MTU2048) != 2048 || mad.MTUCode(4200) != mad.MTU4096 || mad.MTUCode(255) != 0 || mad.MTUBytes(6) != 0 {
		t.Fatal("MTU code conversion")
	}
}

func TestSwitchInfoLayout(t *testing.T) {
	f := mad.SwitchInfoFields{LinearFDBCap: 49152, RandomFDBCap: 0, MulticastFDBCap: 4096, LinearFDBTop: 0x20,
		DefaultPort: 0, LifeTimeValue: 18, PortStateChange: true, LIDsPerPort: 1, PartitionEnforcementCap: 8, EnhancedPort0: true}
	b := make(mad.SwitchInfo, mad.SwitchInfoSize)
	b.Encode(&f)
	want := unhex(t, `c0 00 00 00 10 00 00 20  00 00 00 94  00 01 00 08  08 00 00 00`, mad.SwitchInfoSize)
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x want %x", []byte(b), want)
	}
	if b.Fields() != f {
		t.Fatalf("round trip %+v", b.Fields())
	}
	b[6], b[7] = 0xc0, 0x00 // top == capacity
	if err := b.Validate(0); err == nil || err.(*wire.Error).Field != "LinearFDBTop" {
		t.Fatalf("top at capacity: %v", err)
	}
	var nd [mad.NodeDescriptionSize]byte
	mad.NodeDescription(nd[:]).Encode("leaf 1 (emulated)")
	if s := mad.NodeDescription(nd[:]).String(); s != "leaf 1 (emulated)" || nd[17] != 0 {
		t.Fatalf("node description %q", s)
	}
	mad.NodeDescription(nd[:]).Encode(strings.Repeat("x", 80))
	if s := mad.NodeDescription(nd[:]).String(); len(s) != 64 {
		t.Fatalf("long description kept %d bytes", len(s))
	}
}

func TestLinkRates(t *testing.T) {
	tests := []struct {
		bps               uint64
		width, speed, ext uint8
		lanes             int
		lane              float64
	}{
		{400e9, mad.Width4X, mad.SpeedQDR, mad.SpeedExtHDR, 4, 53.125},
		{100e9, mad.Width4X, mad.SpeedQDR, mad.SpeedExtEDR, 4, 25.78125},
		{56e9, mad.Width4X, mad.SpeedQDR, mad.SpeedExtFDR, 4, 14.0625},
		{40e9, mad.Width4X, mad.SpeedQDR, 0, 4, 10},
		{25e9, mad.Width4X, mad.SpeedDDR, 0, 4, 5},
		{10e9, mad.Width4X, mad.SpeedSDR, 0, 4, 2.5},
		{1e9, mad.Width1X, mad.SpeedSDR, 0, 1, 2.5},
	}
	for _, tc := range tests {
		w, s, e := mad.LinkFor(tc.bps)
		if w != tc.width || s != tc.speed || e != tc.ext || mad.Lanes(w) != tc.lanes || mad.LaneGbps(s, e) != tc.lane {
			t.Errorf("%d b/s: width %d speed %d ext %d", tc.bps, w, s, e)
		}
	}
	a := mad.NewAgent(mad.AgentConfig{NodeType: mad.NodeTypeCA, NumPorts: 1, NodeGUID: 1,
		PortLink: func(int) (uint8, uint8, uint8) { return mad.LinkFor(100e9) }})
	a.SetLinkUp(1, true)
	s := getSMP(mad.AttrPortInfo, 1)
	a.Handle(1, s, false)
	pi := mad.PortInfo(s.Data())
	if pi.LinkWidthActive() != mad.Width4X || pi.LinkSpeedExtActive() != mad.SpeedExtEDR || pi.LinkSpeedExtSupported() != 3 ||
		pi.LinkWidthSupported() != 3 || pi.LinkSpeedSupported() != 7 || pi.LinkSpeedExtEnabled() != 3 {
		t.Fatalf("PortInfo of a 100G port: %+v", pi.Fields())
	}
}

// PortCounters puts every field at IBA 16.1.3.5's offset, saturating at
// its width, and reads them back.
func TestPortCountersLayout(t *testing.T) {
	f := mad.PortCountersFields{PortSelect: 3, SymbolErrors: 1 << 20, LinkErrorRecovery: 2, LinkDowned: 4,
		RcvErrors: 5, RcvSwitchRelayErrors: 6, XmitDiscards: 7, ExcessiveBufferOverrun: 99, VL15Dropped: 8,
		XmitData: 9, RcvData: 10, XmitPkts: 11, RcvPkts: 12, XmitWait: 13}
	b := make(mad.PortCounters, mad.PortCountersSize)
	b.Encode(&f)
	for _, c := range []struct {
		off  int
		want byte
	}{{1, 3}, {4, 0xff}, {5, 0xff}, {6, 2}, {7, 4}, {9, 5}, {13, 6}, {15, 7}, {19, 0x0f}, {23, 8}, {27, 9}, {31, 10}, {35, 11}, {39, 12}, {43, 13}} {
		if b[c.off] != c.want {
			t.Errorf("byte %d = 0x%02x, want 0x%02x", c.off, b[c.off], c.want)
		}
	}
	want := f
	want.SymbolErrors, want.ExcessiveBufferOverrun = 0xffff, 15 // saturated
	if got := b.Fields(); got != want {
		t.Errorf("round trip\n got %+v\nwant %+v", got, want)
	}
}
