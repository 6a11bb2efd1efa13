#include "textflag.h"

// AHEAD is how far ahead of the row being read each kernel asks for the
// cache lines (PREFETCHT0), in bytes: the lists an IVF search probes lie
// apart in the file, and a list of a few hundred rows ends before the
// processor's own prefetching has run far ahead. Exact scans gain too.
// 2 and 8 KiB measured the same as 4 (docs/performance.md).
#define AHEAD 4096

// ARGS loads the arguments of a kernel (q, dim, rows, n, out) into SI, DX,
// DI, CX and R8, dim rounded down to a multiple of 32 into BX, and tests n.
#define ARGS \
	MOVQ q+0(FP), SI; \
	MOVQ dim+8(FP), DX; \
	MOVQ rows+16(FP), DI; \
	MOVQ n+24(FP), CX; \
	MOVQ out+32(FP), R8; \
	MOVQ DX, BX; \
	ANDQ $-32, BX; \
	TESTQ CX, CX

// ZERO4 clears the four float32 sums Y0-Y3 and the component index AX, and
// tests whether a row has a full block of 32 components (BX).
#define ZERO4 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	XORQ AX, AX; \
	TESTQ BX, BX

// FMA4 adds the products of 32 query components from AX on (SI) with
// the row's, converted into Y4-Y7, to the sums Y0-Y3.
#define FMA4 \
	VFMADD231PS (SI)(AX*4), Y4, Y0; \
	VFMADD231PS 32(SI)(AX*4), Y5, Y1; \
	VFMADD231PS 64(SI)(AX*4), Y6, Y2; \
	VFMADD231PS 96(SI)(AX*4), Y7, Y3

// SUM4 adds the four float32 sums Y0-Y3 into one score and stores it at
// (R8), moving R8 to the next.
#define SUM4 \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VHADDPS X0, X0, X0; \
	VHADDPS X0, X0, X0; \
	VMOVSS X0, (R8); \
	ADDQ $4, R8

// func dotsI8AVX2(q *int16, dim int, rows *int8, n int, out *float32)
//
// out[i] = q · row i as an exact integer sum (converted to float32), for n
// rows of dim int8 components (dim a multiple of 16) and a query rounded
// to int16: the bytes are widened to int16 and multiplied in pairs into
// int32 lanes (VPMADDWD), two shuffles per 32 bytes where converting to
// float32 takes four. The caller keeps the sum within int32.
TEXT ·dotsI8AVX2(SB), NOSPLIT, $0-40
	ARGS
	JZ   i8done

i8row:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	XORQ AX, AX
	TESTQ BX, BX
	JZ   i8tail

i8loop:
	PREFETCHT0 AHEAD(DI)(AX*1)
	VPMOVSXBW (DI)(AX*1), Y4
	VPMOVSXBW 16(DI)(AX*1), Y5
	VPMADDWD (SI)(AX*2), Y4, Y4
	VPMADDWD 32(SI)(AX*2), Y5, Y5
	VPADDD Y4, Y0, Y0
	VPADDD Y5, Y1, Y1
	ADDQ $32, AX
	CMPQ AX, BX
	JB   i8loop

i8tail:
	CMPQ AX, DX
	JAE  i8reduce
	VPMOVSXBW (DI)(AX*1), Y4
	VPMADDWD (SI)(AX*2), Y4, Y4
	VPADDD Y4, Y0, Y0
	ADDQ $16, AX
	JMP  i8tail

i8reduce:
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPHADDD X0, X0, X0
	VPHADDD X0, X0, X0
	VCVTDQ2PS X0, X0
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ DX, DI
	DECQ CX
	JNZ  i8row

i8done:
	VZEROUPPER
	RET

// func dotsF16AVX2(q *float32, dim int, rows *uint16, n int, out *float32)
//
// The same for half-precision components, converted by F16C.
TEXT ·dotsF16AVX2(SB), NOSPLIT, $0-40
	ARGS
	JZ   f16done

f16row:
	ZERO4
	JZ   f16tail

f16loop:
	PREFETCHT0 AHEAD(DI)(AX*2)
	VCVTPH2PS (DI)(AX*2), Y4
	VCVTPH2PS 16(DI)(AX*2), Y5
	VCVTPH2PS 32(DI)(AX*2), Y6
	VCVTPH2PS 48(DI)(AX*2), Y7
	FMA4
	ADDQ $32, AX
	CMPQ AX, BX
	JB   f16loop

f16tail:
	CMPQ AX, DX
	JAE  f16reduce
	VCVTPH2PS (DI)(AX*2), Y4
	VFMADD231PS (SI)(AX*4), Y4, Y0
	ADDQ $8, AX
	JMP  f16tail

f16reduce:
	SUM4
	LEAQ (DI)(DX*2), DI
	DECQ CX
	JNZ  f16row

f16done:
	VZEROUPPER
	RET

// func dotsF32AVX2(q *float32, dim int, rows *float32, n int, out *float32)
//
// The same for float32 components.
TEXT ·dotsF32AVX2(SB), NOSPLIT, $0-40
	ARGS
	JZ   f32done

f32row:
	ZERO4
	JZ   f32tail

f32loop:
	PREFETCHT0 AHEAD(DI)(AX*4)
	PREFETCHT0 (AHEAD+64)(DI)(AX*4)
	VMOVUPS (DI)(AX*4), Y4
	VMOVUPS 32(DI)(AX*4), Y5
	VMOVUPS 64(DI)(AX*4), Y6
	VMOVUPS 96(DI)(AX*4), Y7
	FMA4
	ADDQ $32, AX
	CMPQ AX, BX
	JB   f32loop

f32tail:
	CMPQ AX, DX
	JAE  f32reduce
	VMOVUPS (DI)(AX*4), Y4
	VFMADD231PS (SI)(AX*4), Y4, Y0
	ADDQ $8, AX
	JMP  f32tail

f32reduce:
	SUM4
	LEAQ (DI)(DX*4), DI
	DECQ CX
	JNZ  f32row

f32done:
	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() (lo uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, lo+0(FP)
	RET
