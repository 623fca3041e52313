package wire

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// gopacket adapter for IEEE 802.3x PAUSE and 802.1Qbb PFC frames. The
// decoding rules live in DecodeMACControl (pfc.go); this layer only adapts.
var LayerTypeMACControl = gopacket.RegisterLayerType(LayerNumMACControl, gopacket.LayerTypeMetadata{
	Name: "MACControl", Decoder: gopacket.DecodeFunc(decodeMACControlLayer)})

// macControlBodySize is the MAC Control part of the 60-byte frame: opcode,
// parameters and zero padding after the 14-byte Ethernet header.
const macControlBodySize = MACControlFrameSize - EthernetSize

func init() {
	// gopacket's Ethernet (and Dot1Q) layers pick the next decoder from
	// layers.EthernetTypeMetadata, indexed by EtherType, and their
	// NextLayerType reads its LayerType; gopacket has no entry for 0x8808.
	// Do not override one someone else installed first.
	if layers.EthernetTypeMetadata[EtherTypeMACControl].DecodeWith == nil {
		layers.EthernetTypeMetadata[EtherTypeMACControl] = layers.EnumMetadata{
			DecodeWith: gopacket.DecodeFunc(decodeMACControlLayer),
			Name:       "MACControl",
			LayerType:  LayerTypeMACControl,
		}
	}
}

// MACControlLayer is the gopacket layer for the body of a PAUSE or PFC frame
// (everything after the Ethernet header). Contents is the 46-byte body
// (opcode, parameters, padding) or less if the frame is short; the fields
// are those of MACControl, PAUSE reported as Enable 0xFF with all eight
// times equal to its pause_time.
//
// gopacket hands the layer only the bytes after the Ethernet header, while
// DecodeMACControl reads a whole frame; the layer rebuilds a frame in its
// own scratch array (no allocation). Whether the frame was VLAN-tagged is
// therefore not visible here: a tagged MAC Control frame shows up with a
// Dot1Q layer before this one.
type MACControlLayer struct {
	layers.BaseLayer
	MACControl

	scratch [MACControlFrameSize]byte
}

var (
	_ gopacket.DecodingLayer     = (*MACControlLayer)(nil)
	_ gopacket.SerializableLayer = (*MACControlLayer)(nil)
)

// LayerType returns LayerTypeMACControl.
func (m *MACControlLayer) LayerType() gopacket.LayerType { return LayerTypeMACControl }

// CanDecode returns LayerTypeMACControl.
func (m *MACControlLayer) CanDecode() gopacket.LayerClass { return LayerTypeMACControl }

// NextLayerType is nothing: padding belongs to the MAC Control body.
func (m *MACControlLayer) NextLayerType() gopacket.LayerType {
	if len(m.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes the MAC Control body that follows the Ethernet
// header. Error offsets count from the Ethernet destination address, as if
// the frame were untagged.
func (m *MACControlLayer) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	n := min(len(data), macControlBodySize)
	f := m.scratch[:EthernetSize+n]
	copy(f[0:6], MACControlDst[:])
	clear(f[6:12])
	f[12], f[13] = EtherTypeMACControl>>8, EtherTypeMACControl&0xFF
	copy(f[EthernetSize:], data[:n])
	if err := DecodeMACControl(f, &m.MACControl); err != nil {
		setTruncated(err, df)
		return err
	}
	m.Contents = data[:n]
	m.Payload = data[n:]
	return nil
}

// SerializeTo prepends the 46-byte body of a PFC (Opcode MACControlOpPFC)
// or PAUSE (MACControlOpPause, pause_time = Time[0]) frame, padding
// included; the Ethernet layer in front of it must carry DstMAC
// MACControlDst and EtherType 0x8808.
func (m *MACControlLayer) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	switch m.Opcode {
	case MACControlOpPFC:
		EncodePFC(m.scratch[:], MAC{}, m.Enable, &m.Time)
	case MACControlOpPause:
		EncodePause(m.scratch[:], MAC{}, m.Time[0])
	default:
		return Errorf("MACControl", "Opcode", EthernetSize, ReasonUnsupported, "opcode 0x%04x", m.Opcode)
	}
	body, err := b.PrependBytes(macControlBodySize)
	if err != nil {
		return err
	}
	copy(body, m.scratch[EthernetSize:])
	return nil
}

func decodeMACControlLayer(data []byte, p gopacket.PacketBuilder) error {
	m := &MACControlLayer{}
	if err := m.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(m)
	if len(m.Payload) > 0 {
		return p.NextDecoder(gopacket.LayerTypePayload)
	}
	return nil
}
