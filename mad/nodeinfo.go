package mad

import (
	"encoding/binary"

	"github.com/emufabric/emufabric/wire"
)

// NodeInfo is a view of the NodeInfo attribute (IBA 14.2.5.3), 40 bytes
// at the start of the SMP data:
//
//	 0 BaseVersion(8)  1 ClassVersion(8)  2 NodeType(8)  3 NumPorts(8)
//	 4 SystemImageGUID(64)
//	12 NodeGUID(64)
//	20 PortGUID(64)
//	28 PartitionCap(16)  30 DeviceID(16)
//	32 Revision(32)
//	36 LocalPortNum(8)  37 VendorID(24)
//
// LocalPortNum is the port the SMP arrived on, which is how a subnet
// manager learns the port numbers of a link.
type NodeInfo []byte

// NodeInfoSize is the size of the NodeInfo attribute.
const NodeInfoSize = 40

// Node types (IBA Table 147).
const (
	NodeTypeCA     = 1
	NodeTypeSwitch = 2
	NodeTypeRouter = 3
)

func (b NodeInfo) BaseVersion() uint8      { return b[0] }
func (b NodeInfo) ClassVersion() uint8     { return b[1] }
func (b NodeInfo) NodeType() uint8         { return b[2] }
func (b NodeInfo) NumPorts() uint8         { return b[3] }
func (b NodeInfo) SystemImageGUID() uint64 { return binary.BigEndian.Uint64(b[4:]) }
func (b NodeInfo) NodeGUID() uint64        { return binary.BigEndian.Uint64(b[12:]) }
func (b NodeInfo) PortGUID() uint64        { return binary.BigEndian.Uint64(b[20:]) }
func (b NodeInfo) PartitionCap() uint16    { return binary.BigEndian.Uint16(b[28:]) }
func (b NodeInfo) DeviceID() uint16        { return binary.BigEndian.Uint16(b[30:]) }
func (b NodeInfo) Revision() uint32        { return binary.BigEndian.Uint32(b[32:]) }
func (b NodeInfo) LocalPortNum() uint8     { return b[36] }
func (b NodeInfo) VendorID() uint32        { return uint32(b[37])<<16 | uint32(b[38])<<8 | uint32(b[39]) }

// NodeInfoFields is NodeInfo in struct form.
type NodeInfoFields struct {
	BaseVersion, ClassVersion uint8
	NodeType, NumPorts        uint8
	SystemImageGUID           uint64
	NodeGUID, PortGUID        uint64
	PartitionCap, DeviceID    uint16
	Revision                  uint32
	LocalPortNum              uint8
	VendorID                  uint32 // 24 bits
}

// Encode writes the 40 bytes.
func (b NodeInfo) Encode(f *NodeInfoFields) {
	_ = b[NodeInfoSize-1]
	b[0], b[1], b[2], b[3] = f.BaseVersion, f.ClassVersion, f.NodeType, f.NumPorts
	binary.BigEndian.PutUint64(b[4:], f.SystemImageGUID)
	binary.BigEndian.PutUint64(b[12:], f.NodeGUID)
	binary.BigEndian.PutUint64(b[20:], f.PortGUID)
	binary.BigEndian.PutUint16(b[28:], f.PartitionCap)
	binary.BigEndian.PutUint16(b[30:], f.DeviceID)
	binary.BigEndian.PutUint32(b[32:], f.Revision)
	b[36] = f.LocalPortNum
	b[37], b[38], b[39] = byte(f.VendorID>>16), byte(f.VendorID>>8), byte(f.VendorID)
}

// Fields returns the attribute in struct form.
func (b NodeInfo) Fields() NodeInfoFields {
	return NodeInfoFields{
		BaseVersion: b.BaseVersion(), ClassVersion: b.ClassVersion(), NodeType: b.NodeType(), NumPorts: b.NumPorts(),
		SystemImageGUID: b.SystemImageGUID(), NodeGUID: b.NodeGUID(), PortGUID: b.PortGUID(),
		PartitionCap: b.PartitionCap(), DeviceID: b.DeviceID(), Revision: b.Revision(),
		LocalPortNum: b.LocalPortNum(), VendorID: b.VendorID(),
	}
}

// Validate checks the length, a defined node type and at least one port.
func (b NodeInfo) Validate(offset int) error {
	if len(b) < NodeInfoSize {
		return wire.Truncated("NodeInfo", "", offset, NodeInfoSize, len(b))
	}
	if t := b.NodeType(); t < NodeTypeCA || t > NodeTypeRouter {
		return wire.Errorf("NodeInfo", "NodeType", offset+2, wire.ReasonInvalid, "node type %d, defined are 1 (CA), 2 (switch), 3 (router)", t)
	}
	if b.NumPorts() == 0 {
		return wire.Errorf("NodeInfo", "NumPorts", offset+3, wire.ReasonInvalid, "a node has at least one port")
	}
	return nil
}

// NodeDescription is a view of the NodeDescription attribute (IBA
// 14.2.5.2): 64 bytes of UTF-8 text, NUL-padded.
type NodeDescription []byte

// NodeDescriptionSize is the size of the attribute.
const NodeDescriptionSize = 64

// String returns the text up to the first NUL. It allocates; it is for
// the subnet manager's slow path, not the forwarding path.
func (b NodeDescription) String() string {
	n := 0
	for n < len(b) && n < NodeDescriptionSize && b[n] != 0 {
		n++
	}
	return string(b[:n])
}

// Encode writes s, cut to 64 bytes, NUL-padded.
func (b NodeDescription) Encode(s string) {
	_ = b[NodeDescriptionSize-1]
	n := copy(b[:NodeDescriptionSize], s)
	clear(b[n:NodeDescriptionSize])
}

// Validate checks the length.
func (b NodeDescription) Validate(offset int) error {
	if len(b) < NodeDescriptionSize {
		return wire.Truncated("NodeDescription", "NodeString", offset, NodeDescriptionSize, len(b))
	}
	return nil
}
