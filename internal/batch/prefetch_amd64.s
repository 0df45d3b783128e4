#include "textflag.h"

// func Prefetch(addr *uint64)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func PrefetchBits(w []uint64, pos []uint64)
TEXT ·PrefetchBits(SB), NOSPLIT|NOFRAME, $0-48
	MOVQ w_base+0(FP), AX
	MOVQ pos_base+24(FP), BX
	MOVQ pos_len+32(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVQ (BX), DX
	SHRQ $6, DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $8, BX
	DECQ CX
	JNE loop
done:
	RET
