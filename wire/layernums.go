package wire

// gopacket layer-type numbers for every layer this project registers. Numbers
// 1000-1999 are gopacket's fast path for applications (gopacket layertype.go).
// They are declared here, in one place, so wire (which cannot import bth) can
// name the BTH as the next layer after an LRH or GRH while bth registers the
// decoder behind that number.
const (
	LayerNumMACControl   = 1100 // 802.3x PAUSE / 802.1Qbb PFC (wire)
	LayerNumLRH          = 1101 // IB Local Route Header (wire)
	LayerNumGRH          = 1102 // IB Global Route Header (wire)
	LayerNumIBLink       = 1103 // IB link (flow-control) packet (wire)
	LayerNumBTH          = 1110 // Base Transport Header (bth)
	LayerNumRETH         = 1111 // bth
	LayerNumAETH         = 1112 // bth
	LayerNumAtomicETH    = 1113 // bth
	LayerNumAtomicAckETH = 1114 // bth
	LayerNumImmDt        = 1115 // bth
	LayerNumIETH         = 1116 // bth
	LayerNumDETH         = 1117 // bth
	LayerNumCNP          = 1118 // bth: CNP reserved body
	LayerNumIBPayload    = 1119 // bth: transport payload + pad, ICRC as a trailer field (the LRH layer holds the VCRC)
)
