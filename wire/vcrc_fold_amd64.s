#include "textflag.h"

// One fold of accumulator ACC by the key pair in K (low qword: the key for
// ACC's low half; high qword: for its high half), using T as scratch:
// ACC = lo(ACC)*K.lo XOR hi(ACC)*K.hi. See vcrc_fold.go for the arithmetic.
#define FOLD(ACC, K, T) \
	MOVO      ACC, T; \
	PCLMULQDQ $0x00, K, ACC; \
	PCLMULQDQ $0x11, K, T; \
	PXOR      T, ACC

// func crc16Fold(reg uint64, p *byte, n int, k *[4][2]uint64) (lo, hi uint64)
TEXT ·crc16Fold(SB), NOSPLIT, $0-48
	MOVQ reg+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ k+24(FP), DX

	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVQ  AX, X4
	PXOR  X4, X0
	ADDQ  $64, SI
	SUBQ  $64, CX
	MOVOU 0(DX), X5 // 512-bit distance

loop4:
	CMPQ CX, $64
	JB   combine
	FOLD(X0, X5, X8)
	FOLD(X1, X5, X9)
	FOLD(X2, X5, X10)
	FOLD(X3, X5, X11)
	MOVOU 0(SI), X12
	MOVOU 16(SI), X13
	MOVOU 32(SI), X14
	MOVOU 48(SI), X15
	PXOR  X12, X0
	PXOR  X13, X1
	PXOR  X14, X2
	PXOR  X15, X3
	ADDQ  $64, SI
	SUBQ  $64, CX
	JMP   loop4

combine:
	MOVOU 16(DX), X5 // 384
	FOLD(X0, X5, X8)
	PXOR  X0, X3
	MOVOU 32(DX), X5 // 256
	FOLD(X1, X5, X9)
	PXOR  X1, X3
	MOVOU 48(DX), X5 // 128
	FOLD(X2, X5, X10)
	PXOR  X2, X3

loop1:
	CMPQ  CX, $16
	JB    done
	FOLD(X3, X5, X8)
	MOVOU 0(SI), X12
	PXOR  X12, X3
	ADDQ  $16, SI
	SUBQ  $16, CX
	JMP   loop1

done:
	MOVQ   X3, AX
	PSRLDQ $8, X3
	MOVQ   X3, BX
	MOVQ   AX, lo+32(FP)
	MOVQ   BX, hi+40(FP)
	RET
