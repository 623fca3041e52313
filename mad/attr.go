package mad

// Subnet management attribute IDs (IBA Table 145).
const (
	AttrNotice          = 0x0002
	AttrNodeDescription = 0x0010
	AttrNodeInfo        = 0x0011
	AttrSwitchInfo      = 0x0012
	AttrPortInfo        = 0x0015
	AttrLinearFwdTable  = 0x0019
)

// AttrName is the IBA name of a subnet management attribute.
func AttrName(id uint16) string {
	switch id {
	case AttrNotice:
		return "Notice"
	case AttrNodeDescription:
		return "NodeDescription"
	case AttrNodeInfo:
		return "NodeInfo"
	case AttrSwitchInfo:
		return "SwitchInfo"
	case AttrPortInfo:
		return "PortInfo"
	case AttrLinearFwdTable:
		return "LinearForwardingTable"
	}
	return "Attribute(" + hex8(uint8(id>>8)) + hex8(uint8(id))[2:] + ")"
}
