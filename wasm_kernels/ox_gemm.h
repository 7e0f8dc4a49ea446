/* Internal interface of the packed GEMM driver (ox_gemm.c), shared with the convolution kernels (ox_conv.c). */
#ifndef OX_GEMM_H
#define OX_GEMM_H

#include "ox_common.h"

/* Register tile of the micro-kernel and cache blocking of the packed operands */
#ifndef OX_MR
#ifdef __wasm_relaxed_simd__
#define OX_MR 6
#else
#define OX_MR 4
#endif
#endif
#define OX_NR 8
#ifndef OX_KC
#define OX_KC 256
#endif
#ifndef OX_MC
#define OX_MC (OX_MR == 6 ? 72 : 64)   /* a multiple of MR */
#endif
#ifndef OX_NC
#define OX_NC 512
#endif

/* Where the B operand (K x N) comes from: a strided matrix or an implicit im2col view of a 2-D image. */
enum { OX_B_MATRIX = 0, OX_B_IM2COL = 1, OX_B_PACKED = 2 };

typedef struct {
    int kind;
    const float* p;
    int rs, cs;            /* OX_B_MATRIX: element (k, n) at p[k*rs + n*cs]; OX_B_PACKED: p from ox_gemm_pack_b */
    /* OX_B_IM2COL: p is one image group (C x H x W); k = (c*KH + kh)*KW + kw, n = oh*OW + ow */
    int H, W, KH, KW, SH, SW, DH, DW, PT, PL, OW;
} ox_bsrc;

/* Epilogue: C = act(acc + beta * bias[i*bsm + j*bsn]) on the last K block (bias may be 0) */
typedef struct {
    const float* bias;
    int bsm, bsn;
    float beta;
    int act;
    float a0, a1;
} ox_epi;

/* C (M x N, row stride ldc) = epilogue(alpha * A B); A element (i, k) at A[i*rsa + k*csa].
 * scratch must hold OX_GEMM_SCRATCH floats (16-byte aligned). */
#define OX_GEMM_SCRATCH (OX_KC * OX_NC + OX_MC * OX_KC + 64)
void ox_gemm_drive(int M, int N, int K, const float* A, int rsa, int csa, float alpha, const ox_bsrc* B,
                   float* C, int ldc, const ox_epi* e, float* scratch);

#endif
