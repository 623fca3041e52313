package nic

import (
	"net/netip"
	"testing"

	"github.com/emufabric/emufabric/clock"
)

// The IBA Modify QP transition table: which (state, mask) pairs ModifyQP
// accepts, per transport. Each row starts from a fresh QP driven to From
// by valid transitions.
func TestQPStateTransitions(t *testing.T) {
	const (
		rcInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS
		udInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY
		rcRTR  = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
		ucRTR  = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
		rcRTS  = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
		sqPSN  = IBV_QP_STATE | IBV_QP_SQ_PSN
	)
	type row struct {
		name   string
		typ    QPType
		from   QPState
		to     QPState
		mask   QPAttrMask
		mutate func(a *QPAttr)
		ok     bool
	}
	rows := []row{
		{"rc reset->init", IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, rcInit, nil, true},
		{"rc reset->init missing access", IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, rcInit &^ IBV_QP_ACCESS_FLAGS, nil, false},
		{"rc reset->init with qkey", IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, rcInit | IBV_QP_QKEY, nil, false},
		{"rc reset->rtr", IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTR, rcRTR, nil, false},
		{"rc reset->rts", IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTS, rcRTS, nil, false},
		{"rc init->init", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, nil, true},
		{"rc init->rtr", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rcRTR, nil, true},
		{"rc init->rtr missing min_rnr_timer", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rcRTR &^ IBV_QP_MIN_RNR_TIMER, nil, false},
		{"rc init->rtr bad mtu", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rcRTR, func(a *QPAttr) { a.PathMTU = 6 }, false},
		{"rc init->rtr mtu 256", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rcRTR, func(a *QPAttr) { a.PathMTU = IBV_MTU_256 }, true},
		{"rc init->rtr no gid", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rcRTR, func(a *QPAttr) { a.AHAttr.DGID = netip.Addr{} }, false},
		{"rc init->rtr alt path", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rcRTR | IBV_QP_ALT_PATH, nil, false},
		{"rc init->rts", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTS, rcRTS, nil, false},
		{"rc rtr->rts", IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, rcRTS, nil, true},
		{"rc rtr->rts missing timeout", IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, rcRTS &^ IBV_QP_TIMEOUT, nil, false},
		{"rc rtr->rts retry 8", IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, rcRTS, func(a *QPAttr) { a.RetryCnt = 8 }, false},
		{"rc rtr->rts timeout 32", IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, rcRTS, func(a *QPAttr) { a.Timeout = 32 }, false},
		{"rc rtr->rts psn 25 bits", IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, rcRTS, func(a *QPAttr) { a.SQPSN = 1 << 24 }, false},
		{"rc rts->rts min_rnr_timer", IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER, nil, true},
		{"rc rts->rts path_mtu", IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_PATH_MTU, nil, false},
		{"rc rts->sqd", IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_STATE, nil, true},
		{"rc sqd->rts", IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RTS, IBV_QP_STATE, nil, true},
		{"rc sqd->sqd timeout", IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_STATE | IBV_QP_TIMEOUT, nil, true},
		{"rc rts->rtr", IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTR, IBV_QP_STATE, nil, false},
		{"rc rts->err", IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_STATE, nil, true},
		{"rc err->reset", IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_RESET, IBV_QP_STATE, nil, true},
		{"rc err->rts", IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_RTS, IBV_QP_STATE, nil, false},
		{"rc init->sqe", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_SQE, IBV_QP_STATE, nil, false},
		{"rc init->reset", IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RESET, IBV_QP_STATE, nil, true},
		{"uc reset->init", IBV_QPT_UC, IBV_QPS_RESET, IBV_QPS_INIT, rcInit, nil, true},
		{"uc init->rtr", IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, ucRTR, nil, true},
		{"uc init->rtr with rd_atomic", IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, ucRTR | IBV_QP_MAX_DEST_RD_ATOMIC, nil, false},
		{"uc rtr->rts", IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS, sqPSN, nil, true},
		{"uc rtr->rts with timeout", IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS, sqPSN | IBV_QP_TIMEOUT, nil, false},
		{"ud reset->init", IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, udInit, nil, true},
		{"ud reset->init with access", IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, udInit | IBV_QP_ACCESS_FLAGS, nil, false},
		{"ud init->rtr", IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE, nil, true},
		{"ud init->rtr with av", IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE | IBV_QP_AV, nil, false},
		{"ud rtr->rts", IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, sqPSN, nil, true},
		{"ud rts->rts qkey", IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_QKEY, nil, true},
		{"ud sqe->rts", IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE, nil, true},
	}
	p := newPair(t, pairOpts{})
	peer := p.b.GID()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			o := qpOpts{typ: r.typ}
			o.fill()
			e := newTestEndpoint(t, p.a, &o)
			q := e.qp
			good := func() *QPAttr {
				return &QPAttr{PortNum: 1, QPAccessFlags: IBV_ACCESS_REMOTE_WRITE, QKey: 7, PathMTU: IBV_MTU_1024,
					DestQPNum: 9, RQPSN: 1, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MinRNRTimer: 12,
					MaxRdAtomic: 1, MaxDestRdAtomic: 1, AHAttr: AHAttr{DGID: peer}}
			}
			path := map[QPType][]QPAttrMask{
				IBV_QPT_RC: {rcInit, rcRTR, rcRTS},
				IBV_QPT_UC: {rcInit, ucRTR, sqPSN},
				IBV_QPT_UD: {udInit, IBV_QP_STATE, sqPSN},
			}[r.typ]
			steps := []QPState{IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}
			for i, st := range steps {
				if q.State() == r.from {
					break
				}
				a := good()
				a.QPState = st
				if err := q.ModifyQP(a, path[i]); err != nil {
					t.Fatalf("setup %v: %v", st, err)
				}
			}
			switch r.from {
			case IBV_QPS_SQD:
				if err := q.ModifyQP(&QPAttr{QPState: IBV_QPS_SQD}, IBV_QP_STATE); err != nil {
					t.Fatal(err)
				}
			case IBV_QPS_ERR:
				if err := q.ModifyQP(&QPAttr{QPState: IBV_QPS_ERR}, IBV_QP_STATE); err != nil {
					t.Fatal(err)
				}
			case IBV_QPS_SQE:
				q.toSQE()
			}
			if q.State() != r.from {
				t.Fatalf("setup reached %v, want %v", q.State(), r.from)
			}
			a := good()
			a.QPState = r.to
			if r.mutate != nil {
				r.mutate(a)
			}
			err := q.ModifyQP(a, r.mask)
			if (err == nil) != r.ok {
				t.Fatalf("ModifyQP %v -> %v %v: err %v, want ok=%v", r.from, r.to, r.mask, err, r.ok)
			}
			want := r.from
			if r.ok {
				want = r.to
			}
			if q.State() != want {
				t.Errorf("state %v, want %v", q.State(), want)
			}
			if r.ok && r.to == IBV_QPS_RTS && r.typ == IBV_QPT_RC && r.from == IBV_QPS_RTR {
				got := q.QueryQP()
				if got.Timeout != 14 || got.RetryCnt != 7 || got.SQPSN != 1 || q.timeout != 4096*(1<<14)*1000 {
					t.Errorf("attributes not applied: %+v, timeout %v", got, q.timeout)
				}
			}
		})
	}
}

func TestMTUCodes(t *testing.T) {
	for _, c := range []struct {
		m MTU
		b int
	}{{IBV_MTU_256, 256}, {IBV_MTU_512, 512}, {IBV_MTU_1024, 1024}, {IBV_MTU_2048, 2048}, {IBV_MTU_4096, 4096}, {0, 0}, {6, 0}} {
		if got := c.m.Bytes(); got != c.b {
			t.Errorf("MTU %d: %d bytes, want %d", c.m, got, c.b)
		}
		if c.b != 0 {
			if m, ok := MTUFor(c.b); !ok || m != c.m {
				t.Errorf("MTUFor(%d) = %d, %v", c.b, m, ok)
			}
		}
	}
}

// TestGiveUpTime: a requester gives up after its ACK timeout times the
// first try and every retry; never without a timeout.
func TestGiveUpTime(t *testing.T) {
	q := &QP{timeout: 4096 * clock.Nanosecond << 14}
	q.attr.RetryCnt = 7
	if got, want := q.GiveUpTime(), 8*(4096*clock.Nanosecond<<14); got != want {
		t.Errorf("GiveUpTime %v, want %v", got, want)
	}
	if (&QP{}).GiveUpTime() != 0 {
		t.Error("a QP without a timeout gives up")
	}
}
