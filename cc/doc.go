// Package cc holds congestion control as pure state machines: no clock of
// its own, no timers, no I/O. A NIC feeds an algorithm events with explicit
// times (a CNP arrived, bytes were sent) and asks it two things: the rate it
// may send at now, and when it next needs to be woken (NextDeadline); at or
// after that time the NIC calls Advance. The same code therefore runs in the
// deterministic simulator and in the real-time daemon, and tests drive it
// with nothing but numbers.
//
// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
// SIGCOMM 2015) is the first algorithm: the reaction point (RP, sender) in
// RP, the notification point (NP, receiver) in NP. Knobs carry the names of
// NVIDIA's mlx5 congestion parameters (drivers/infiniband/hw/mlx5/cong.c),
// with two profiles: NVIDIAProfile (firmware defaults) and PaperProfile (the
// paper's constants). InfiniBand congestion control (IBA Annex A10) is
// the second: IBCCRP, the source channel adapter's CCTI / CCT reaction to
// BECNs, with OpenSM's knob names (IBCC, ibcc_config.go). Other algorithms
// (HPCC, TIMELY, Swift) implement Algorithm and consume the Feedback
// fields they need.
package cc
