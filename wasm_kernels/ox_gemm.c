/* Packed single-precision GEMM: operand packing (strided, transposed, implicit im2col), an MRx8 register-blocked
 * micro-kernel (6x8 relaxed, 4x8 SIMD128), cache blocking, and the bias + activation epilogue. Exports ox_gemm. */
#include "ox_gemm.h"
#include "ox_kernels.h"

/* ---- packing ------------------------------------------------------------------------------------------------ */

OX_INLINE void transpose4(f4* r0, f4* r1, f4* r2, f4* r3) {
    f4 lo01 = wasm_i32x4_shuffle(*r0, *r1, 0, 4, 1, 5), hi01 = wasm_i32x4_shuffle(*r0, *r1, 2, 6, 3, 7);
    f4 lo23 = wasm_i32x4_shuffle(*r2, *r3, 0, 4, 1, 5), hi23 = wasm_i32x4_shuffle(*r2, *r3, 2, 6, 3, 7);
    *r0 = wasm_i32x4_shuffle(lo01, lo23, 0, 1, 4, 5);
    *r1 = wasm_i32x4_shuffle(lo01, lo23, 2, 3, 6, 7);
    *r2 = wasm_i32x4_shuffle(hi01, hi23, 0, 1, 4, 5);
    *r3 = wasm_i32x4_shuffle(hi01, hi23, 2, 3, 6, 7);
}

/* dst[p*MR + r] = alpha * A(i0 + r, k0 + p) for r < mr, 0 for mr <= r < MR */
static void pack_a(const float* A, int rsa, int csa, int i0, int mr, int k0, int kc, float alpha, float* dst) {
    const float* a = A + (long)i0 * rsa + (long)k0 * csa;
    int p = 0;
    f4 al = SPLAT(alpha);
    if (mr == OX_MR && csa == 1 && (OX_MR == 4 || OX_MR == 6)) {   /* rows contiguous along k: 4x4 transposes (+ rows 4, 5 by lanes) */
        for (; p + 4 <= kc; p += 4) {
            f4 r0 = LD(a + p), r1 = LD(a + rsa + p), r2 = LD(a + 2 * rsa + p), r3 = LD(a + 3 * rsa + p);
            transpose4(&r0, &r1, &r2, &r3);
#if OX_MR == 6
            f4 r4 = wasm_f32x4_mul(LD(a + 4 * rsa + p), al), r5 = wasm_f32x4_mul(LD(a + 5 * rsa + p), al);
            f4 q01 = wasm_i32x4_shuffle(r4, r5, 0, 4, 1, 5), q23 = wasm_i32x4_shuffle(r4, r5, 2, 6, 3, 7);
            float* d = dst + p * OX_MR;
            ST(d + 0, wasm_f32x4_mul(r0, al));
            wasm_v128_store64_lane(d + 4, q01, 0);
            ST(d + 6, wasm_f32x4_mul(r1, al));
            wasm_v128_store64_lane(d + 10, q01, 1);
            ST(d + 12, wasm_f32x4_mul(r2, al));
            wasm_v128_store64_lane(d + 16, q23, 0);
            ST(d + 18, wasm_f32x4_mul(r3, al));
            wasm_v128_store64_lane(d + 22, q23, 1);
#else
            ST(dst + (p + 0) * OX_MR, wasm_f32x4_mul(r0, al));
            ST(dst + (p + 1) * OX_MR, wasm_f32x4_mul(r1, al));
            ST(dst + (p + 2) * OX_MR, wasm_f32x4_mul(r2, al));
            ST(dst + (p + 3) * OX_MR, wasm_f32x4_mul(r3, al));
#endif
        }
    } else if (mr == OX_MR && rsa == 1 && (OX_MR == 4 || OX_MR == 6)) {   /* columns contiguous along m (transposed A) */
        for (; p < kc; p++) {
            const float* s = a + (long)p * csa;
            ST(dst + p * OX_MR, wasm_f32x4_mul(LD(s), al));
#if OX_MR == 6
            dst[p * OX_MR + 4] = alpha * s[4];
            dst[p * OX_MR + 5] = alpha * s[5];
#endif
        }
    }
    for (; p < kc; p++) {
        float* d = dst + p * OX_MR;
        int r = 0;
        for (; r < mr; r++) d[r] = alpha * a[(long)r * rsa + (long)p * csa];
        for (; r < OX_MR; r++) d[r] = 0.f;
    }
}

/* dst[p*NR + c] = B(k0 + p, j0 + c) for c < nr, 0 beyond */
static void pack_b_matrix(const ox_bsrc* B, int j0, int nr, int k0, int kc, float* dst) {
    const float* b = B->p + (long)k0 * B->rs + (long)j0 * B->cs;
    int rs = B->rs, cs = B->cs, p = 0;
    if (nr == OX_NR && cs == 1) {
        for (; p < kc; p++) {
            const float* s = b + (long)p * rs;
            ST(dst + p * OX_NR, LD(s));
            ST(dst + p * OX_NR + 4, LD(s + 4));
        }
        return;
    }
    if (nr == OX_NR && rs == 1) {            /* transposed B: columns contiguous along k */
        for (; p + 4 <= kc; p += 4) {
            for (int g = 0; g < 2; g++) {
                const float* s = b + p + (long)(4 * g) * cs;
                f4 r0 = LD(s), r1 = LD(s + cs), r2 = LD(s + 2 * cs), r3 = LD(s + 3 * cs);
                transpose4(&r0, &r1, &r2, &r3);
                ST(dst + (p + 0) * OX_NR + 4 * g, r0);
                ST(dst + (p + 1) * OX_NR + 4 * g, r1);
                ST(dst + (p + 2) * OX_NR + 4 * g, r2);
                ST(dst + (p + 3) * OX_NR + 4 * g, r3);
            }
        }
    }
    for (; p < kc; p++) {
        float* d = dst + p * OX_NR;
        int c = 0;
        for (; c < nr; c++) d[c] = b[(long)p * rs + (long)c * cs];
        for (; c < OX_NR; c++) d[c] = 0.f;
    }
}

/* implicit im2col: row k = (c*KH + kh)*KW + kw, column n = oh*OW + ow of the (C x H x W) image B->p */
static void pack_b_im2col(const ox_bsrc* B, int j0, int nr, int k0, int kc, float* dst) {
    const int H = B->H, W = B->W, KH = B->KH, KW = B->KW, OW = B->OW;
    int oh0 = j0 / OW, ow0 = j0 - oh0 * OW;
    int one_row = (ow0 + nr <= OW) && nr == OX_NR;   /* the panel's columns lie in one output row */
    int kk = k0;
    int c = kk / (KH * KW), rem = kk - c * KH * KW;
    int kh = rem / KW, kw = rem - kh * KW;
    for (int p = 0; p < kc; p++) {
        const float* plane = B->p + (long)c * H * W;
        float* d = dst + p * OX_NR;
        int dh = kh * B->DH - B->PT, dw = kw * B->DW - B->PL;
        if (one_row) {
            int ih = oh0 * B->SH + dh;
            int iw0 = ow0 * B->SW + dw;
            if (ih < 0 || ih >= H) {
                ST(d, SPLAT(0.f));
                ST(d + 4, SPLAT(0.f));
            } else if (B->SW == 1 && iw0 >= 0 && iw0 + OX_NR <= W) {
                const float* s = plane + (long)ih * W + iw0;
                ST(d, LD(s));
                ST(d + 4, LD(s + 4));
            } else if (B->SW == 2 && iw0 >= 0 && iw0 + 2 * OX_NR <= W) {   /* stride 2: even lanes of 16 */
                const float* s = plane + (long)ih * W + iw0;
                ST(d, wasm_i32x4_shuffle(LD(s), LD(s + 4), 0, 2, 4, 6));
                ST(d + 4, wasm_i32x4_shuffle(LD(s + 8), LD(s + 12), 0, 2, 4, 6));
            } else {
                const float* s = plane + (long)ih * W;
                for (int q = 0; q < OX_NR; q++) {
                    int iw = iw0 + q * B->SW;
                    d[q] = (iw >= 0 && iw < W) ? s[iw] : 0.f;
                }
            }
        } else {
            int oh = oh0, ow = ow0, q = 0;
            for (; q < nr; q++) {
                int ih = oh * B->SH + dh, iw = ow * B->SW + dw;
                d[q] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? plane[(long)ih * W + iw] : 0.f;
                if (++ow == OW) { ow = 0; oh++; }
            }
            for (; q < OX_NR; q++) d[q] = 0.f;
        }
        if (++kw == KW) { kw = 0; if (++kh == KH) { kh = 0; c++; } }
    }
}

static void pack_b(const ox_bsrc* B, int j0, int nr, int k0, int kc, float* dst) {
    if (B->kind == OX_B_IM2COL) pack_b_im2col(B, j0, nr, k0, kc, dst);
    else pack_b_matrix(B, j0, nr, k0, kc, dst);
}

/* ---- micro-kernel and epilogue ------------------------------------------------------------------------------- */

OX_INLINE f4 bias_vec(const ox_epi* e, int i, int j, int n) {
    const float* b = e->bias + (long)i * e->bsm;
    if (e->bsn == 0) return SPLAT(e->beta * b[0]);
    if (e->bsn == 1) return wasm_f32x4_mul(ld_part(b + j, n), SPLAT(e->beta));
    float t[4] = {0.f, 0.f, 0.f, 0.f};
    for (int q = 0; q < n && q < 4; q++) t[q] = e->beta * b[(long)(j + q) * e->bsn];
    return LD(t);
}

OX_INLINE void write_row(float* c, f4 v0, f4 v1, int nr, int first, int last, const ox_epi* e, int i, int j) {
    int n0 = nr < 4 ? nr : 4, n1 = nr - 4;
    if (!first) {
        v0 = wasm_f32x4_add(v0, ld_part(c, n0));
        if (n1 > 0) v1 = wasm_f32x4_add(v1, ld_part(c + 4, n1));
    }
    if (last) {
        if (e->bias) {
            v0 = wasm_f32x4_add(v0, bias_vec(e, i, j, n0));
            if (n1 > 0) v1 = wasm_f32x4_add(v1, bias_vec(e, i, j + 4, n1));
        }
        if (e->act) {
            v0 = v_act(v0, e->act, e->a0, e->a1);
            if (n1 > 0) v1 = v_act(v1, e->act, e->a0, e->a1);
        }
    }
    st_part(c, v0, n0);
    if (n1 > 0) st_part(c + 4, v1, n1);
}

/* MR x 8 tile (MR = 4, 5 or 6): 2*MR accumulators + 2 B vectors + 1 broadcast A (+ a product temporary without
 * FMA) must fit the 16 vector registers, so the SIMD128 build uses fewer rows than the relaxed (FMA) one. */
static void micro_kernel(int kc, const float* pa, const float* pb, float* C, int ldc, int mr, int nr, int first,
                         int last, const ox_epi* e, int i0, int j0) {
    f4 c00 = SPLAT(0.f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
#if OX_MR >= 5
    f4 c40 = c00, c41 = c00;
#endif
#if OX_MR >= 6
    f4 c50 = c00, c51 = c00;
#endif
    for (int p = 0; p < kc; p++) {
        f4 b0 = LD(pb), b1 = LD(pb + 4);
        f4 a = wasm_v128_load32_splat(pa);
        c00 = VFMA(a, b0, c00);
        c01 = VFMA(a, b1, c01);
        a = wasm_v128_load32_splat(pa + 1);
        c10 = VFMA(a, b0, c10);
        c11 = VFMA(a, b1, c11);
        a = wasm_v128_load32_splat(pa + 2);
        c20 = VFMA(a, b0, c20);
        c21 = VFMA(a, b1, c21);
        a = wasm_v128_load32_splat(pa + 3);
        c30 = VFMA(a, b0, c30);
        c31 = VFMA(a, b1, c31);
#if OX_MR >= 5
        a = wasm_v128_load32_splat(pa + 4);
        c40 = VFMA(a, b0, c40);
        c41 = VFMA(a, b1, c41);
#endif
#if OX_MR >= 6
        a = wasm_v128_load32_splat(pa + 5);
        c50 = VFMA(a, b0, c50);
        c51 = VFMA(a, b1, c51);
#endif
        pa += OX_MR;
        pb += OX_NR;
    }
    write_row(C, c00, c01, nr, first, last, e, i0, j0);
    if (mr > 1) write_row(C + ldc, c10, c11, nr, first, last, e, i0 + 1, j0);
    if (mr > 2) write_row(C + 2 * ldc, c20, c21, nr, first, last, e, i0 + 2, j0);
    if (mr > 3) write_row(C + 3 * ldc, c30, c31, nr, first, last, e, i0 + 3, j0);
#if OX_MR >= 5
    if (mr > 4) write_row(C + 4 * ldc, c40, c41, nr, first, last, e, i0 + 4, j0);
#endif
#if OX_MR >= 6
    if (mr > 5) write_row(C + 5 * ldc, c50, c51, nr, first, last, e, i0 + 5, j0);
#endif
}

/* ---- few rows (M < MR): no packing, B streamed once per row ---------------------------------------------------- */

/* C row i = epilogue(alpha * sum_k A(i, k) B(k, :)) for a row-major B (cs == 1): axpy over contiguous B rows */
static void gemv_rows(int M, int N, int K, const float* A, int rsa, int csa, float alpha, const float* B, int rs,
                      float* C, int ldc, const ox_epi* e) {
    for (int i = 0; i < M; i++) {
        const float* a = A + (long)i * rsa;
        float* c = C + (long)i * ldc;
        for (int j0 = 0; j0 < N; j0 += 32) {          /* 32 columns of accumulators stay in registers */
            int nj = ox_min(32, N - j0);
            f4 acc[8];
            for (int q = 0; q < 8; q++) acc[q] = SPLAT(0.f);
            if (nj == 32) {
                for (int k = 0; k < K; k++) {
                    const float* b = B + (long)k * rs + j0;
                    f4 av = SPLAT(alpha * a[(long)k * csa]);
                    for (int q = 0; q < 8; q++) acc[q] = VFMA(av, LD(b + 4 * q), acc[q]);
                }
            } else {
                for (int k = 0; k < K; k++) {
                    const float* b = B + (long)k * rs + j0;
                    f4 av = SPLAT(alpha * a[(long)k * csa]);
                    for (int q = 0; q * 4 < nj; q++) acc[q] = VFMA(av, ld_part(b + 4 * q, nj - 4 * q), acc[q]);
                }
            }
            for (int q = 0; q * 8 < nj; q++)
                write_row(c + j0 + 8 * q, acc[2 * q], acc[2 * q + 1], ox_min(8, nj - 8 * q), 1, 1, e, i, j0 + 8 * q);
        }
    }
}

/* the same for a transposed B (rs == 1, column j contiguous along k): one dot product per output */
static void gemv_dots(int M, int N, int K, const float* A, int rsa, int csa, float alpha, const float* B, int cs,
                      float* C, int ldc, const ox_epi* e) {
    for (int i = 0; i < M; i++) {
        const float* a = A + (long)i * rsa;
        float* c = C + (long)i * ldc;
        for (int j0 = 0; j0 < N; j0 += 8) {
            int nj = ox_min(8, N - j0);
            float out[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
            for (int j = 0; j < nj; j++) {
                const float* b = B + (long)(j0 + j) * cs;
                f4 s0 = SPLAT(0.f), s1 = s0;
                int k = 0;
                if (csa == 1) {
                    for (; k + 8 <= K; k += 8) {
                        s0 = VFMA(LD(a + k), LD(b + k), s0);
                        s1 = VFMA(LD(a + k + 4), LD(b + k + 4), s1);
                    }
                }
                float t[4];
                ST(t, wasm_f32x4_add(s0, s1));
                float r = (t[0] + t[1]) + (t[2] + t[3]);
                for (; k < K; k++) r += a[(long)k * csa] * b[k];
                out[j] = alpha * r;
            }
            write_row(c + j0, LD(out), LD(out + 4), nj, 1, 1, e, i, j0);
        }
    }
}

/* A few rows (M < MR) by a B packed ahead (ox_gemm_pack_b): each row against four 8-column panels at a time, the
 * micro-kernel's sums in its order (alpha * A(i, k), then one multiply-add per k from 0 per (jc, pc) block), so a
 * row's values do not depend on M; without it one row was an MR-row tile of zeros (an MLP's layers at batch 1). */
static void gemv_packed(int M, int N, int K, const float* A, int rsa, int csa, float alpha, const float* PB,
                        float* C, int ldc, const ox_epi* e) {
    for (int jc = 0; jc < N; jc += OX_NC) {
        int nc = ox_min(OX_NC, N - jc);
        for (int pc = 0; pc < K; pc += OX_KC) {
            int kc = ox_min(OX_KC, K - pc), first = pc == 0, last = pc + kc >= K;
            const float* pb = PB + (long)jc * K + (long)pc * ((nc + OX_NR - 1) / OX_NR * OX_NR);
            for (int i = 0; i < M; i++) {
                const float* a = A + (long)i * rsa + (long)pc * csa;
                float* c = C + (long)i * ldc + jc;
                for (int jr = 0; jr < nc; jr += 4 * OX_NR) {
                    int panels = ox_min(4, (nc - jr + OX_NR - 1) / OX_NR);
                    const float* b = pb + (long)jr * kc;
                    f4 acc[8];
                    for (int q = 0; q < 8; q++) acc[q] = SPLAT(0.f);
                    for (int k = 0; k < kc; k++) {
                        f4 av = SPLAT(alpha * a[(long)k * csa]);
                        for (int q = 0; q < panels; q++) {
                            const float* bq = b + (long)q * OX_NR * kc + k * OX_NR;
                            acc[2 * q] = VFMA(av, LD(bq), acc[2 * q]);
                            acc[2 * q + 1] = VFMA(av, LD(bq + 4), acc[2 * q + 1]);
                        }
                    }
                    for (int q = 0; q < panels; q++) {
                        int j = jr + q * OX_NR;
                        write_row(c + j, acc[2 * q], acc[2 * q + 1], ox_min(OX_NR, nc - j), first, last, e, i,
                                  jc + j);
                    }
                }
            }
        }
    }
}

/* ---- driver --------------------------------------------------------------------------------------------------- */

void ox_gemm_drive(int M, int N, int K, const float* A, int rsa, int csa, float alpha, const ox_bsrc* B,
                   float* C, int ldc, const ox_epi* e, float* scratch) {
    if (M <= 0 || N <= 0) return;
    float* pb = scratch;
    float* pa = scratch + OX_KC * OX_NC;
    if (K <= 0) {   /* empty sum: only the epilogue */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j += OX_NR)
                write_row(C + (long)i * ldc + j, SPLAT(0.f), SPLAT(0.f), ox_min(OX_NR, N - j), 1, 1, e, i, j);
        return;
    }
    if (M < OX_MR && B->kind == OX_B_PACKED) {
        gemv_packed(M, N, K, A, rsa, csa, alpha, (const float*)B->p, C, ldc, e);
        return;
    }
    if (M < 4 && B->kind == OX_B_MATRIX) {
        if (B->cs == 1) { gemv_rows(M, N, K, A, rsa, csa, alpha, B->p, B->rs, C, ldc, e); return; }
        if (B->rs == 1) { gemv_dots(M, N, K, A, rsa, csa, alpha, B->p, B->cs, C, ldc, e); return; }
    }
    for (int jc = 0; jc < N; jc += OX_NC) {
        int nc = ox_min(OX_NC, N - jc);
        for (int pc = 0; pc < K; pc += OX_KC) {
            int kc = ox_min(OX_KC, K - pc);
            int first = pc == 0, last = pc + kc >= K;
            if (B->kind == OX_B_PACKED) {   /* the block (jc, pc) of a B packed ahead by ox_gemm_pack_b */
                pb = (float*)B->p + (long)jc * K + (long)pc * ((nc + OX_NR - 1) / OX_NR * OX_NR);
            } else {
                for (int jr = 0; jr < nc; jr += OX_NR)
                    pack_b(B, jc + jr, ox_min(OX_NR, nc - jr), pc, kc, pb + jr * kc);
            }
            for (int ic = 0; ic < M; ic += OX_MC) {
                int mc = ox_min(OX_MC, M - ic);
                for (int ir = 0; ir < mc; ir += OX_MR)
                    pack_a(A, rsa, csa, ic + ir, ox_min(OX_MR, mc - ir), pc, kc, alpha, pa + ir * kc);
                for (int jr = 0; jr < nc; jr += OX_NR) {
                    int nr = ox_min(OX_NR, nc - jr);
                    for (int ir = 0; ir < mc; ir += OX_MR) {
                        int i = ic + ir, j = jc + jr;
                        micro_kernel(kc, pa + ir * kc, pb + jr * kc, C + (long)i * ldc + j, ldc,
                                  ox_min(OX_MR, mc - ir), nr, first, last, e, i, j);
                    }
                }
            }
        }
    }
}

/* Batched GEMM: for b < batch, C_b = act(alpha * op(A_b) op(B_b) + beta * bias_b) where X_b = X + b*sX
 * (a stride of 0 broadcasts). op(A) element (i, k) at A[i*rsa + k*csa]; op(B) element (k, j) at B[k*rsb + j*csb];
 * bias element (i, j) at bias[i*bsm + j*bsn] (bias may be null). scratch: OX_GEMM_SCRATCH floats. */
OX_EXPORT void ox_gemm(int batch, int M, int N, int K,
                       const float* A, int rsa, int csa, int sA,
                       const float* B, int rsb, int csb, int sB,
                       float* C, int ldc, int sC,
                       float alpha, const float* bias, int bsm, int bsn, int sBias, float beta,
                       int act, float a0, float a1, float* scratch) {
    for (int b = 0; b < batch; b++) {
        ox_bsrc src = {0};
        src.kind = OX_B_MATRIX;
        src.p = B + (long)b * sB;
        src.rs = rsb;
        src.cs = csb;
        ox_epi e = {bias ? bias + (long)b * sBias : 0, bsm, bsn, beta, act, a0, a1};
        ox_gemm_drive(M, N, K, A + (long)b * sA, rsa, csa, alpha, &src, C + (long)b * sC, ldc, &e, scratch);
    }
}

OX_EXPORT int ox_gemm_scratch_floats(void) { return OX_GEMM_SCRATCH; }

/* Floats of a K x N B operand packed ahead of time (every (NC, KC) block as the driver packs it) */
OX_EXPORT int ox_gemm_packed_b_floats(int K, int N) { return K * ((N + OX_NR - 1) / OX_NR * OX_NR); }

/* Packs op(B) (element (k, j) at B[k*rsb + j*csb]) into dst (ox_gemm_packed_b_floats floats): block (jc, pc)
 * at dst + jc*K + pc*round_up(nc, NR), laid out exactly as the driver's per-call packing. */
OX_EXPORT void ox_gemm_pack_b(int K, int N, const float* B, int rsb, int csb, float* dst) {
    ox_bsrc src = {0};
    src.kind = OX_B_MATRIX;
    src.p = B;
    src.rs = rsb;
    src.cs = csb;
    for (int jc = 0; jc < N; jc += OX_NC) {
        int nc = ox_min(OX_NC, N - jc);
        int ncr = (nc + OX_NR - 1) / OX_NR * OX_NR;
        for (int pc = 0; pc < K; pc += OX_KC) {
            int kc = ox_min(OX_KC, K - pc);
            float* blk = dst + (long)jc * K + (long)pc * ncr;
            for (int jr = 0; jr < nc; jr += OX_NR) pack_b(&src, jc + jr, ox_min(OX_NR, nc - jr), pc, kc, blk + jr * kc);
        }
    }
}

/* ox_gemm with B packed by ox_gemm_pack_b (shared by every batch entry): C_b = act(alpha * op(A_b) B + bias) */
OX_EXPORT void ox_gemm_pb(int batch, int M, int N, int K, const float* A, int rsa, int csa, int sA,
                          const float* PB, float* C, int ldc, int sC,
                          float alpha, const float* bias, int bsm, int bsn, int sBias, float beta,
                          int act, float a0, float a1, float* scratch) {
    for (int b = 0; b < batch; b++) {
        ox_bsrc src = {0};
        src.kind = OX_B_PACKED;
        src.p = PB;
        ox_epi e = {bias ? bias + (long)b * sBias : 0, bsm, bsn, beta, act, a0, a1};
        ox_gemm_drive(M, N, K, A + (long)b * sA, rsa, csa, alpha, &src, C + (long)b * sC, ldc, &e, scratch);
    }
}
