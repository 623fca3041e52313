package wire_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/emufabric/emufabric/wire"
	"github.com/emufabric/emufabric/wire/capture"
)

// testdata/ib_native_erf.pcap and .json are copied verbatim from the
// project's independent frame oracle (golden captures generated with
// scapy/crcmod-based code nobody on this package wrote). The pcap holds four
// native IB data packets (ERF type 21) and four link packets (ERF type 25);
// the JSON gives, per frame, the field values Wireshark must decode, named
// by Wireshark field, plus the CRC bytes on the wire.
//
// Likewise testdata/pfc_pause.pcap/.json: four PFC and two PAUSE frames.

type goldenFrame struct {
	Frame   int            `json:"frame"`
	Desc    string         `json:"desc"`
	Len     int            `json:"frame_len"`
	LNH     int            `json:"lnh"`
	ICRCHex string         `json:"icrc_wire_hex"`
	VCRCHex string         `json:"vcrc_wire_hex"`
	LPCRC   string         `json:"lpcrc_wire_hex"`
	Expect  map[string]any `json:"expect"`
}

type goldenRecord struct {
	capture.Record
	Data []byte // copied
}

func loadGolden(t testing.TB, name string) ([]goldenRecord, []goldenFrame) {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := capture.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	var recs []goldenRecord
	for {
		var rec capture.Record
		err := r.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, goldenRecord{Record: rec, Data: append([]byte(nil), rec.Data...)})
	}
	js, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Frames []goldenFrame `json:"frames"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Frames) != len(recs) {
		t.Fatalf("%s: %d records, %d expectations", name, len(recs), len(doc.Frames))
	}
	return recs, doc.Frames
}

// expectInt returns the expected integer value of a Wireshark field.
func expectInt(t *testing.T, fr goldenFrame, field string) (int, bool) {
	v, ok := fr.Expect[field]
	if !ok {
		return 0, false
	}
	n, ok := v.(float64)
	if !ok {
		t.Fatalf("frame %d: %s is %T", fr.Frame, field, v)
	}
	return int(n), true
}

func checkField(t *testing.T, fr goldenFrame, field string, got int) {
	t.Helper()
	want, ok := expectInt(t, fr, field)
	if !ok {
		t.Errorf("frame %d: expectation %s missing from the golden JSON", fr.Frame, field)
		return
	}
	if got != want {
		t.Errorf("frame %d (%s): %s = %d, golden %d", fr.Frame, fr.Desc, field, got, want)
	}
}

// TestGoldenIB decodes every golden IB record with our LRH, GRH, VCRC and
// IBLink code and compares every field the golden JSON names.
func TestGoldenIB(t *testing.T) {
	recs, frames := loadGolden(t, "ib_native_erf")
	for i, rec := range recs {
		fr := frames[i]
		if len(rec.Data) != fr.Len {
			t.Errorf("frame %d: %d bytes, golden %d", fr.Frame, len(rec.Data), fr.Len)
		}
		switch rec.ERF.Type {
		case capture.ERFTypeInfiniBand:
			pkt := rec.Data
			if err := wire.ValidateIBPacket(pkt, 0); err != nil {
				t.Errorf("frame %d: %v", fr.Frame, err)
			}
			l := wire.LRH(pkt)
			checkField(t, fr, "infiniband.lrh.vl", int(l.VL()))
			checkField(t, fr, "infiniband.lrh.lver", int(l.LVer()))
			checkField(t, fr, "infiniband.lrh.sl", int(l.SL()))
			checkField(t, fr, "infiniband.lrh.lnh", int(l.LNH()))
			checkField(t, fr, "infiniband.lrh.dlid", int(l.DLID()))
			checkField(t, fr, "infiniband.lrh.pktlen", int(l.PktLen()))
			checkField(t, fr, "infiniband.lrh.slid", int(l.SLID()))
			if int(l.LNH()) != fr.LNH {
				t.Errorf("frame %d: LNH %d, golden %d", fr.Frame, l.LNH(), fr.LNH)
			}
			end := int(l.PktLen()) * 4
			// Wireshark displays the CRC bytes as a big-endian number.
			checkField(t, fr, "infiniband.invariant.crc", int(binary.BigEndian.Uint32(pkt[end-4:])))
			checkField(t, fr, "infiniband.variant.crc", int(binary.BigEndian.Uint16(pkt[end:])))
			if got := hexOf(pkt[end:]); got != fr.VCRCHex {
				t.Errorf("frame %d: VCRC wire bytes %s, golden %s", fr.Frame, got, fr.VCRCHex)
			}
			if got := hexOf(pkt[end-4 : end]); got != fr.ICRCHex {
				t.Errorf("frame %d: ICRC at %d is %s, golden %s", fr.Frame, end-4, got, fr.ICRCHex)
			}
			// Our VCRC over LRH..ICRC, stored in our byte order, must equal the wire.
			cp := append([]byte(nil), pkt...)
			cp[end], cp[end+1] = 0, 0
			wire.PutVCRC(cp)
			if hexOf(cp[end:]) != fr.VCRCHex {
				t.Errorf("frame %d: computed VCRC bytes %s, golden %s", fr.Frame, hexOf(cp[end:]), fr.VCRCHex)
			}
			// Re-encode the LRH from its fields: identical bytes.
			var lf wire.LRHFields
			l.Fields(&lf)
			enc := make([]byte, wire.LRHSize)
			wire.LRH(enc).Encode(&lf)
			if hexOf(enc) != hexOf(pkt[:wire.LRHSize]) {
				t.Errorf("frame %d: LRH re-encodes as %x, wire %x", fr.Frame, enc, pkt[:8])
			}
			if l.LNH() == wire.LNHGlobal {
				g := wire.GRH(pkt[wire.LRHSize:end])
				checkField(t, fr, "infiniband.grh.ipver", int(g.IPVer()))
				checkField(t, fr, "infiniband.grh.nxthdr", int(g.NxtHdr()))
				if want := end - wire.LRHSize - wire.GRHSize; int(g.PayLen()) != want {
					t.Errorf("frame %d: PayLen %d, want %d", fr.Frame, g.PayLen(), want)
				}
				// desc: "TClass 0x60, FL 0x54321"
				if g.TClass() != 0x60 || g.FlowLabel() != 0x54321 {
					t.Errorf("frame %d: TClass 0x%x FlowLabel 0x%x, golden 0x60 / 0x54321", fr.Frame, g.TClass(), g.FlowLabel())
				}
				var gf wire.GRHFields
				g.Fields(&gf)
				genc := make([]byte, wire.GRHSize)
				wire.GRH(genc).Encode(&gf)
				if hexOf(genc) != hexOf(g[:wire.GRHSize]) {
					t.Errorf("frame %d: GRH re-encodes as %x, wire %x", fr.Frame, genc, g[:wire.GRHSize])
				}
			}
		case capture.ERFTypeInfiniBandLink:
			k := wire.IBLink(rec.Data)
			if err := k.Validate(0); err != nil {
				t.Errorf("frame %d: %v", fr.Frame, err)
			}
			checkField(t, fr, "infiniband_link.op", int(k.Op()))
			checkField(t, fr, "infiniband_link.fctbs", int(k.FCTBS()))
			checkField(t, fr, "infiniband_link.vl", int(k.VL()))
			checkField(t, fr, "infiniband_link.fccl", int(k.FCCL()))
			checkField(t, fr, "infiniband_link.lpcrc", int(binary.BigEndian.Uint16(rec.Data[4:])))
			var f wire.IBLinkFields
			k.Fields(&f)
			enc := make([]byte, wire.IBLinkSize)
			wire.IBLink(enc).Encode(&f)
			if hexOf(enc) != hexOf(rec.Data) {
				t.Errorf("frame %d: link packet encodes as %x, golden %x", fr.Frame, enc, rec.Data)
			}
			if hexOf(enc[4:]) != fr.LPCRC {
				t.Errorf("frame %d: LPCRC bytes %x, golden %s", fr.Frame, enc[4:], fr.LPCRC)
			}
		default:
			t.Errorf("frame %d: unexpected ERF type %d", fr.Frame, rec.ERF.Type)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
