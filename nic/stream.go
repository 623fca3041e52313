package nic

import (
	"errors"
	"fmt"

	"github.com/emufabric/emufabric/clock"
)

// Stream is a perftest-like traffic source on a connection: it posts
// messages of one operation and size back to back, keeping Depth in
// flight (ib_write_bw's tx-depth), from Start until Count messages or
// Stop, and records what a report needs: bytes, first post, last
// completion, flow completion times, failures. For SEND it keeps the
// receiver's queue stocked with receive WQEs. It runs on the NIC's clock,
// driven by completions, and allocates nothing per message beyond the
// recorded completion times.
type Stream struct {
	cfg      StreamConfig
	src, dst *Endpoint
	clk      clock.Clock
	start    clock.Timer
	wr       SendWR
	sge      [1]SGE
	rwr      RecvWR
	rsge     [1]SGE
	posted   []clock.Time // post times of messages in flight, FIFO
	wc       [16]WC
	stopped  bool
	stats    StreamStats
}

// StreamConfig describes a Stream.
type StreamConfig struct {
	Op    WROpcode // IBV_WR_RDMA_WRITE, _WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_SEND, _WITH_IMM
	Size  int      // message bytes (at most the endpoints' region size)
	Count int      // messages; 0: until Stop
	Depth int      // messages in flight; default 16
	Start clock.Time
	Stop  clock.Time // no message is posted after it; 0: never
}

// StreamStats is what a Stream did.
type StreamStats struct {
	Posted, Completed int
	Bytes             uint64 // completed message bytes
	FirstPost         clock.Time
	LastCompletion    clock.Time
	FCT               []clock.Time // per completed message: post to completion
	Failed            int
	FirstError        WCStatus
	// PostError is the post that stopped the stream early, refused by its
	// send queue (nil if none was).
	PostError error
	Done      bool // Count messages completed, or stopped and drained, or failed
}

// Throughput is the completed bytes per second between the first post and
// the last completion.
func (s *StreamStats) Throughput() float64 {
	d := s.LastCompletion - s.FirstPost
	if d <= 0 {
		return 0
	}
	return float64(s.Bytes) * 8 / d.Seconds()
}

// NewStream sets a stream up from src to dst (a Connect pair). It takes
// over both endpoints' completion notifications.
func NewStream(src, dst *Endpoint, cfg StreamConfig) (*Stream, error) {
	switch cfg.Op {
	case IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM:
	default:
		return nil, fmt.Errorf("stream: unsupported operation %v", cfg.Op)
	}
	if cfg.Size < 0 || cfg.Size > src.MR.Len() || cfg.Size > dst.MR.Len() {
		return nil, fmt.Errorf("stream: size %d outside 0..%d", cfg.Size, min(src.MR.Len(), dst.MR.Len()))
	}
	if src.QP.Type() == IBV_QPT_UD && (cfg.Op != IBV_WR_SEND && cfg.Op != IBV_WR_SEND_WITH_IMM) {
		return nil, errors.New("stream: UD carries SEND only")
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 16
	}
	cfg.Depth = min(cfg.Depth, src.QP.cap.MaxSendWR)
	s := &Stream{cfg: cfg, src: src, dst: dst, clk: src.NIC.clk, posted: make([]clock.Time, 0, cfg.Depth)}
	s.sge[0] = SGE{Addr: src.MR.Addr(), Length: uint32(cfg.Size), LKey: src.MR.LKey()}
	s.wr = SendWR{Opcode: cfg.Op, SendFlags: IBV_SEND_SIGNALED, SGList: s.sge[:]}
	s.wr.RDMA.RemoteAddr, s.wr.RDMA.RKey = dst.MR.Addr(), dst.MR.RKey()
	s.wr.UD.AH, s.wr.UD.RemoteQPN, s.wr.UD.RemoteQKey = src.AH, src.PeerQPN, dst.QKey
	src.SendCQ.SetNotify(s.onSendCompletion)
	if cfg.Op == IBV_WR_SEND || cfg.Op == IBV_WR_SEND_WITH_IMM || cfg.Op == IBV_WR_RDMA_WRITE_WITH_IMM {
		dst.RecvCQ.SetNotify(s.onRecvCompletion)
		for range dst.QP.cap.MaxRecvWR {
			if err := s.postRecv(); err != nil {
				return nil, err
			}
		}
	}
	s.start = s.clk.NewTimer(s.fill)
	s.start.Reset(cfg.Start)
	return s, nil
}

// Stats returns the stream's figures so far.
func (s *Stream) Stats() *StreamStats { return &s.stats }

func (s *Stream) postRecv() error {
	d := s.dst
	n := uint32(s.cfg.Size)
	if d.QP.Type() == IBV_QPT_UD {
		n += 40 // the GRH area
	}
	s.rsge[0] = SGE{Addr: d.MR.Addr(), Length: min(n, uint32(d.MR.Len())), LKey: d.MR.LKey()}
	s.rwr.SGList = s.rsge[:]
	return d.QP.PostRecv(&s.rwr)
}

// fill posts messages until Depth are in flight.
func (s *Stream) fill() {
	now := s.clk.Now()
	for !s.stopped && len(s.posted) < s.cfg.Depth {
		if s.cfg.Count > 0 && s.stats.Posted >= s.cfg.Count || s.cfg.Stop > 0 && now > s.cfg.Stop {
			s.stopped = true
			break
		}
		s.wr.WRID = uint64(s.stats.Posted)
		if err := s.src.QP.PostSend(&s.wr); err != nil {
			s.stats.PostError = fmt.Errorf("message %d not posted: %w", s.stats.Posted, err)
			s.stopped = true
			break
		}
		if s.stats.Posted == 0 {
			s.stats.FirstPost = now
		}
		s.stats.Posted++
		s.posted = append(s.posted, now)
	}
	if s.stopped && len(s.posted) == 0 {
		s.stats.Done = true
	}
}

func (s *Stream) onSendCompletion(cq *CQ) {
	now := s.clk.Now()
	for k := cq.PollCQ(s.wc[:]); k > 0; k = cq.PollCQ(s.wc[:]) {
		for _, wc := range s.wc[:k] {
			if len(s.posted) == 0 {
				continue
			}
			at := s.posted[0]
			s.posted = s.posted[:copy(s.posted, s.posted[1:])]
			if wc.Status != IBV_WC_SUCCESS {
				if s.stats.Failed == 0 {
					s.stats.FirstError = wc.Status
				}
				s.stats.Failed++
				s.stopped = true
				continue
			}
			s.stats.Completed++
			s.stats.Bytes += uint64(s.cfg.Size)
			s.stats.LastCompletion = now
			s.stats.FCT = append(s.stats.FCT, now-at)
		}
	}
	s.fill()
}

func (s *Stream) onRecvCompletion(cq *CQ) {
	for k := cq.PollCQ(s.wc[:]); k > 0; k = cq.PollCQ(s.wc[:]) {
		for _, wc := range s.wc[:k] {
			if wc.Status == IBV_WC_SUCCESS {
				_ = s.postRecv()
			}
		}
	}
}
