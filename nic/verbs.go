package nic

import "fmt"

// The verbs vocabulary. Identifiers keep the libibverbs spelling
// (infiniband/verbs.h) and values, because that is what RDMA programmers
// read in their code, in perftest output and in the IBA tables: a work
// completion that says IBV_WC_RETRY_EXC_ERR means the same thing here as on
// a ConnectX card.

// AccessFlags are the access rights of a memory region or of a QP's
// responder (enum ibv_access_flags).
type AccessFlags uint32

const (
	IBV_ACCESS_LOCAL_WRITE   AccessFlags = 1
	IBV_ACCESS_REMOTE_WRITE  AccessFlags = 1 << 1
	IBV_ACCESS_REMOTE_READ   AccessFlags = 1 << 2
	IBV_ACCESS_REMOTE_ATOMIC AccessFlags = 1 << 3

	accessKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
)

// QPType is the transport service of a QP (enum ibv_qp_type).
type QPType uint8

const (
	IBV_QPT_RC QPType = 2
	IBV_QPT_UC QPType = 3
	IBV_QPT_UD QPType = 4
)

func (t QPType) String() string {
	switch t {
	case IBV_QPT_RC:
		return "IBV_QPT_RC"
	case IBV_QPT_UC:
		return "IBV_QPT_UC"
	case IBV_QPT_UD:
		return "IBV_QPT_UD"
	}
	return fmt.Sprintf("qp_type(%d)", uint8(t))
}

// QPState is the IBA QP state (IBA 10.3.1, enum ibv_qp_state).
type QPState uint8

const (
	IBV_QPS_RESET QPState = iota
	IBV_QPS_INIT
	IBV_QPS_RTR
	IBV_QPS_RTS
	IBV_QPS_SQD
	IBV_QPS_SQE
	IBV_QPS_ERR
	numQPStates
)

var qpStateNames = [numQPStates]string{"IBV_QPS_RESET", "IBV_QPS_INIT", "IBV_QPS_RTR", "IBV_QPS_RTS", "IBV_QPS_SQD", "IBV_QPS_SQE", "IBV_QPS_ERR"}

func (s QPState) String() string {
	if s < numQPStates {
		return qpStateNames[s]
	}
	return fmt.Sprintf("qp_state(%d)", uint8(s))
}

// MTU is a path MTU code (enum ibv_mtu): IBV_MTU_256 .. IBV_MTU_4096.
type MTU uint8

const (
	IBV_MTU_256  MTU = 1
	IBV_MTU_512  MTU = 2
	IBV_MTU_1024 MTU = 3
	IBV_MTU_2048 MTU = 4
	IBV_MTU_4096 MTU = 5
)

// Bytes is the payload size of the MTU code, 0 for an invalid code.
func (m MTU) Bytes() int {
	if m < IBV_MTU_256 || m > IBV_MTU_4096 {
		return 0
	}
	return 128 << m
}

// MTUFor returns the code of an MTU in bytes (256..4096, a power of two).
func MTUFor(bytes int) (MTU, bool) {
	for m := IBV_MTU_256; m <= IBV_MTU_4096; m++ {
		if m.Bytes() == bytes {
			return m, true
		}
	}
	return 0, false
}

// WROpcode is the operation of a send work request (enum ibv_wr_opcode).
type WROpcode uint8

const (
	IBV_WR_RDMA_WRITE           WROpcode = 0
	IBV_WR_RDMA_WRITE_WITH_IMM  WROpcode = 1
	IBV_WR_SEND                 WROpcode = 2
	IBV_WR_SEND_WITH_IMM        WROpcode = 3
	IBV_WR_RDMA_READ            WROpcode = 4
	IBV_WR_ATOMIC_CMP_AND_SWP   WROpcode = 5
	IBV_WR_ATOMIC_FETCH_AND_ADD WROpcode = 6
	IBV_WR_SEND_WITH_INV        WROpcode = 9
)

var wrOpcodeNames = map[WROpcode]string{
	IBV_WR_RDMA_WRITE: "IBV_WR_RDMA_WRITE", IBV_WR_RDMA_WRITE_WITH_IMM: "IBV_WR_RDMA_WRITE_WITH_IMM",
	IBV_WR_SEND: "IBV_WR_SEND", IBV_WR_SEND_WITH_IMM: "IBV_WR_SEND_WITH_IMM", IBV_WR_RDMA_READ: "IBV_WR_RDMA_READ",
	IBV_WR_ATOMIC_CMP_AND_SWP: "IBV_WR_ATOMIC_CMP_AND_SWP", IBV_WR_ATOMIC_FETCH_AND_ADD: "IBV_WR_ATOMIC_FETCH_AND_ADD",
	IBV_WR_SEND_WITH_INV: "IBV_WR_SEND_WITH_INV",
}

func (o WROpcode) String() string {
	if s, ok := wrOpcodeNames[o]; ok {
		return s
	}
	return fmt.Sprintf("wr_opcode(%d)", uint8(o))
}

func (o WROpcode) valid() bool { _, ok := wrOpcodeNames[o]; return ok }
func (o WROpcode) isSend() bool {
	return o == IBV_WR_SEND || o == IBV_WR_SEND_WITH_IMM || o == IBV_WR_SEND_WITH_INV
}
func (o WROpcode) isWrite() bool { return o == IBV_WR_RDMA_WRITE || o == IBV_WR_RDMA_WRITE_WITH_IMM }
func (o WROpcode) isAtomic() bool {
	return o == IBV_WR_ATOMIC_CMP_AND_SWP || o == IBV_WR_ATOMIC_FETCH_AND_ADD
}

// readOrAtomic: the WQE completes only when its response data arrives.
func (o WROpcode) readOrAtomic() bool { return o == IBV_WR_RDMA_READ || o.isAtomic() }

// SendFlags modify a send work request (enum ibv_send_flags).
type SendFlags uint32

const (
	IBV_SEND_FENCE     SendFlags = 1
	IBV_SEND_SIGNALED  SendFlags = 1 << 1
	IBV_SEND_SOLICITED SendFlags = 1 << 2
	IBV_SEND_INLINE    SendFlags = 1 << 3
)

// WCStatus is the status of a work completion (enum ibv_wc_status).
type WCStatus uint8

const (
	IBV_WC_SUCCESS            WCStatus = 0
	IBV_WC_LOC_LEN_ERR        WCStatus = 1
	IBV_WC_LOC_QP_OP_ERR      WCStatus = 2
	IBV_WC_LOC_EEC_OP_ERR     WCStatus = 3
	IBV_WC_LOC_PROT_ERR       WCStatus = 4
	IBV_WC_WR_FLUSH_ERR       WCStatus = 5
	IBV_WC_MW_BIND_ERR        WCStatus = 6
	IBV_WC_BAD_RESP_ERR       WCStatus = 7
	IBV_WC_LOC_ACCESS_ERR     WCStatus = 8
	IBV_WC_REM_INV_REQ_ERR    WCStatus = 9
	IBV_WC_REM_ACCESS_ERR     WCStatus = 10
	IBV_WC_REM_OP_ERR         WCStatus = 11
	IBV_WC_RETRY_EXC_ERR      WCStatus = 12
	IBV_WC_RNR_RETRY_EXC_ERR  WCStatus = 13
	IBV_WC_LOC_RDD_VIOL_ERR   WCStatus = 14
	IBV_WC_REM_INV_RD_REQ_ERR WCStatus = 15
	IBV_WC_REM_ABORT_ERR      WCStatus = 16
	IBV_WC_INV_EECN_ERR       WCStatus = 17
	IBV_WC_INV_EEC_STATE_ERR  WCStatus = 18
	IBV_WC_FATAL_ERR          WCStatus = 19
	IBV_WC_RESP_TIMEOUT_ERR   WCStatus = 20
	IBV_WC_GENERAL_ERR        WCStatus = 21
	numWCStatus               WCStatus = 22
)

var wcStatusNames = [numWCStatus]string{
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
}

func (s WCStatus) String() string {
	if s < numWCStatus {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("wc_status(%d)", uint8(s))
}

// WCOpcode is the operation a work completion reports (enum ibv_wc_opcode).
type WCOpcode uint8

const (
	IBV_WC_SEND               WCOpcode = 0
	IBV_WC_RDMA_WRITE         WCOpcode = 1
	IBV_WC_RDMA_READ          WCOpcode = 2
	IBV_WC_COMP_SWAP          WCOpcode = 3
	IBV_WC_FETCH_ADD          WCOpcode = 4
	IBV_WC_RECV               WCOpcode = 128
	IBV_WC_RECV_RDMA_WITH_IMM WCOpcode = 129
)

func (o WCOpcode) String() string {
	switch o {
	case IBV_WC_SEND:
		return "IBV_WC_SEND"
	case IBV_WC_RDMA_WRITE:
		return "IBV_WC_RDMA_WRITE"
	case IBV_WC_RDMA_READ:
		return "IBV_WC_RDMA_READ"
	case IBV_WC_COMP_SWAP:
		return "IBV_WC_COMP_SWAP"
	case IBV_WC_FETCH_ADD:
		return "IBV_WC_FETCH_ADD"
	case IBV_WC_RECV:
		return "IBV_WC_RECV"
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return "IBV_WC_RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("wc_opcode(%d)", uint8(o))
}

// wcOpcodeOf is the completion opcode of a send work request.
func wcOpcodeOf(o WROpcode) WCOpcode {
	switch o {
	case IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD
	}
	return IBV_WC_SEND
}

// WCFlags qualify a work completion (enum ibv_wc_flags).
type WCFlags uint32

const (
	IBV_WC_GRH      WCFlags = 1
	IBV_WC_WITH_IMM WCFlags = 1 << 1
	IBV_WC_WITH_INV WCFlags = 1 << 3
)

// QPAttrMask selects the QPAttr fields ModifyQP applies (enum
// ibv_qp_attr_mask).
type QPAttrMask uint32

const (
	IBV_QP_STATE               QPAttrMask = 1 << 0
	IBV_QP_CUR_STATE           QPAttrMask = 1 << 1
	IBV_QP_EN_SQD_ASYNC_NOTIFY QPAttrMask = 1 << 2
	IBV_QP_ACCESS_FLAGS        QPAttrMask = 1 << 3
	IBV_QP_PKEY_INDEX          QPAttrMask = 1 << 4
	IBV_QP_PORT                QPAttrMask = 1 << 5
	IBV_QP_QKEY                QPAttrMask = 1 << 6
	IBV_QP_AV                  QPAttrMask = 1 << 7
	IBV_QP_PATH_MTU            QPAttrMask = 1 << 8
	IBV_QP_TIMEOUT             QPAttrMask = 1 << 9
	IBV_QP_RETRY_CNT           QPAttrMask = 1 << 10
	IBV_QP_RNR_RETRY           QPAttrMask = 1 << 11
	IBV_QP_RQ_PSN              QPAttrMask = 1 << 12
	IBV_QP_MAX_QP_RD_ATOMIC    QPAttrMask = 1 << 13
	IBV_QP_ALT_PATH            QPAttrMask = 1 << 14
	IBV_QP_MIN_RNR_TIMER       QPAttrMask = 1 << 15
	IBV_QP_SQ_PSN              QPAttrMask = 1 << 16
	IBV_QP_MAX_DEST_RD_ATOMIC  QPAttrMask = 1 << 17
	IBV_QP_PATH_MIG_STATE      QPAttrMask = 1 << 18
	IBV_QP_CAP                 QPAttrMask = 1 << 19
	IBV_QP_DEST_QPN            QPAttrMask = 1 << 20
	numQPAttrBits                         = 21
)

var qpAttrNames = [numQPAttrBits]string{
	"IBV_QP_STATE", "IBV_QP_CUR_STATE", "IBV_QP_EN_SQD_ASYNC_NOTIFY", "IBV_QP_ACCESS_FLAGS",
	"IBV_QP_PKEY_INDEX", "IBV_QP_PORT", "IBV_QP_QKEY", "IBV_QP_AV", "IBV_QP_PATH_MTU",
	"IBV_QP_TIMEOUT", "IBV_QP_RETRY_CNT", "IBV_QP_RNR_RETRY", "IBV_QP_RQ_PSN",
	"IBV_QP_MAX_QP_RD_ATOMIC", "IBV_QP_ALT_PATH", "IBV_QP_MIN_RNR_TIMER", "IBV_QP_SQ_PSN",
	"IBV_QP_MAX_DEST_RD_ATOMIC", "IBV_QP_PATH_MIG_STATE", "IBV_QP_CAP", "IBV_QP_DEST_QPN",
}

// String lists the set bits, "IBV_QP_STATE|IBV_QP_AV".
func (m QPAttrMask) String() string {
	s := ""
	for i := range numQPAttrBits {
		if m&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += qpAttrNames[i]
		}
	}
	if rest := m &^ (1<<numQPAttrBits - 1); rest != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("0x%x", uint32(rest))
	}
	if s == "" {
		return "0"
	}
	return s
}
