package wire

import "golang.org/x/sys/cpu"

// crc16HaveFold: PCLMULQDQ (the moves and XORs around it are SSE2, which
// every amd64 processor has).
var crc16HaveFold = cpu.X86.HasPCLMULQDQ

// crc16Fold folds n bytes at p (n a multiple of 16, at least 64), the
// register XORed into the first two, into a 128-bit remainder (lo, hi)
// congruent to the message modulo P. Implemented in vcrc_fold_amd64.s.
//
//go:noescape
func crc16Fold(reg uint64, p *byte, n int, k *[4][2]uint64) (lo, hi uint64)
