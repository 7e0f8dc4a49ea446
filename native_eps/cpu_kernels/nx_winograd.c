/* Winograd F(4×4, 3×3) convolution (stride 1, dilation 1, group 1) on NCHW float32, one call per layer: input
 * tiles transformed to V[36][C][tiles] (vectorised across a tile row), 36 GEMMs P[ξ] = U[ξ]·V[ξ] with the
 * transformed weights U packed once (nx_gemm_pack_a per ξ), output transform with bias, residual and activation.
 * Interpolation points 0, ±1, ±2, ∞ (Lavin & Gray); U = G w Gᵀ comes from the caller. */
#include <stdlib.h>
#include <string.h>
#include "nx_math.h"
#include "nx_pool.h"

void nx_act_row(float* y, long n, int act, float a, float b);
int nx_gemm(long M, long N, long K, const float* a, long lda, const float* ap, const float* b, long ldb,
            const float* bp, float* c, long ldc, const float* bias, const float* row_bias, const float* res, long ldr,
            int act, float alpha, float beta, float* scratch, int threads);
long nx_gemm_packed_a_size(long M, long K);
long nx_gemm_packed_size(long K, long N);

#define NR 32  /* nx_gemm's B panel width: V is written straight in that packed layout */

/* t[0..5] = Bᵀ d for d[0..5] (shared terms as in the numpy path) */
#define BT6(d, t) do {                                                                                      \
        float a0 = d[4] - 4.f * d[2], a1 = d[3] - 4.f * d[1], a2 = d[4] - d[2], a3 = 2.f * (d[3] - d[1]);   \
        t[0] = 4.f * d[0] - 5.f * d[2] + d[4];                                                             \
        t[1] = a0 + a1;                                                                                    \
        t[2] = a0 - a1;                                                                                    \
        t[3] = a2 + a3;                                                                                    \
        t[4] = a2 - a3;                                                                                    \
        t[5] = 4.f * d[1] - 5.f * d[3] + d[5];                                                             \
    } while (0)

/* o[0..3] = Aᵀ p for p[0..5] */
#define AT6(p, o) do {                                                                                      \
        float s1 = p[1] + p[2], d1 = p[1] - p[2], s2 = p[3] + p[4], d2 = p[3] - p[4];                       \
        o[0] = p[0] + s1 + s2;                                                                             \
        o[1] = d1 + 2.f * d2;                                                                              \
        o[2] = s1 + 4.f * s2;                                                                              \
        o[3] = d1 + 8.f * d2 + p[5];                                                                       \
    } while (0)

#define TWMAX 256  /* tiles per tile row handled in one vector pass (wider images take several) */

/* floats of scratch nx_winograd_f4 needs for one image */
NX_EXPORT long nx_winograd_f4_scratch(long C, long M, long OH, long OW) {
    long t = ((OH + 3) / 4) * ((OW + 3) / 4);
    return 36 * (nx_gemm_packed_size(C, t) + M * t);
}

/* the input transform of one image: V[ξ] for channel c, tile row ti (ct = c * TH + ti) */
struct wino_in_job {
    long C, H, W, PT, PL, TH, TW, vb;
    const float* xn;
    float* v;
};

static void wino_in_chunks(void* ctx, long lo, long hi, int who) {
    const struct wino_in_job* job = (const struct wino_in_job*)ctx;
    long C = job->C, H = job->H, W = job->W, PT = job->PT, PL = job->PL, TH = job->TH, TW = job->TW, vb = job->vb;
    const float* xn = job->xn;
    float* v = job->v;
    (void)who;
    for (long ct = lo; ct < hi; ct++) {
        long c = ct / TH, ti = ct % TH;
        float t[6][6][TWMAX];   /* row r of the tile window, column transform k, tile j */
        for (long j0 = 0; j0 < TW; j0 += TWMAX) {
            long tw = TW - j0 < TWMAX ? TW - j0 : TWMAX;
            for (int r = 0; r < 6; r++) {
                long ih = ti * 4 + r - PT;
                const float* row = (ih >= 0 && ih < H) ? xn + (c * H + ih) * W : NULL;
                for (long j = 0; j < tw; j++) {
                    float d[6];
                    for (int l = 0; l < 6; l++) {
                        long iw = (j0 + j) * 4 + l - PL;
                        d[l] = row && iw >= 0 && iw < W ? row[iw] : 0.f;
                    }
                    float o[6];
                    BT6(d, o);
                    for (int k = 0; k < 6; k++) t[r][k][j] = o[k];
                }
            }
            for (int k = 0; k < 6; k++)
                for (long j = 0; j < tw; j++) {
                    float d[6], o[6];
                    for (int r = 0; r < 6; r++) d[r] = t[r][k][j];
                    BT6(d, o);
                    long tile = ti * TW + j0 + j;
                    float* dst = v + (tile / NR) * C * NR + c * NR + tile % NR;
                    for (int q = 0; q < 6; q++) dst[(q * 6 + k) * vb] = o[q];
                }
        }
    }
}

/* the 36 GEMMs P[ξ] = U[ξ]·V[ξ] of one image, one thread each */
struct wino_gemm_job {
    long M, C, T, ua, vb;
    const float* up;
    const float* v;
    float* p;
    int failed;
};

static void wino_gemm_chunks(void* ctx, long lo, long hi, int who) {
    struct wino_gemm_job* job = (struct wino_gemm_job*)ctx;
    long M = job->M, C = job->C, T = job->T, ua = job->ua, vb = job->vb;
    const float* up = job->up;
    const float* v = job->v;
    float* p = job->p;
    (void)who;
    for (long xi = lo; xi < hi; xi++)
        if (nx_gemm(M, T, C, NULL, 0, up + xi * ua, NULL, 0, v + xi * vb, p + xi * M * T, T, NULL, NULL, NULL, 0, 0,
                    0.f, 0.f, NULL, 1) != 0)
            __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
}

/* the output transform of one image: output channel m, tile row ti (mt = m * TH + ti), with bias, residual and
 * activation */
struct wino_out_job {
    long M, OH, OW, TH, TW, T;
    const float* p;
    const float* bias;
    const float* rn;
    float* yn;
    int act;
    float alpha, beta;
};

static void wino_out_chunks(void* ctx, long lo, long hi, int who) {
    const struct wino_out_job* job = (const struct wino_out_job*)ctx;
    long M = job->M, OH = job->OH, OW = job->OW, TH = job->TH, TW = job->TW, T = job->T;
    const float* p = job->p;
    const float* bias = job->bias;
    const float* rn = job->rn;
    float* yn = job->yn;
    int act = job->act;
    float alpha = job->alpha, beta = job->beta;
    (void)who;
    for (long mt = lo; mt < hi; mt++) {
        long m = mt / TH, ti = mt % TH;
        float s[6][4][TWMAX];   /* tile-row transform j, column a, tile */
        float out[4][4 * TWMAX];
        float b0 = bias ? bias[m] : 0.f;
        for (long j0 = 0; j0 < TW; j0 += TWMAX) {
            long tw = TW - j0 < TWMAX ? TW - j0 : TWMAX;
            for (int jj = 0; jj < 6; jj++)
                for (long j = 0; j < tw; j++) {
                    float q[6], o[4];
                    for (int k = 0; k < 6; k++) q[k] = p[((jj * 6 + k) * M + m) * T + ti * TW + j0 + j];
                    AT6(q, o);
                    for (int a = 0; a < 4; a++) s[jj][a][j] = o[a];
                }
            for (int a = 0; a < 4; a++)
                for (long j = 0; j < tw; j++) {
                    float q[6], o[4];
                    for (int jj = 0; jj < 6; jj++) q[jj] = s[jj][a][j];
                    AT6(q, o);
                    for (int r = 0; r < 4; r++) out[r][4 * j + a] = o[r] + b0;
                }
            for (int r = 0; r < 4; r++) {
                long oh = ti * 4 + r, ow0 = j0 * 4;
                if (oh >= OH) break;
                long len = OW - ow0 < 4 * tw ? OW - ow0 : 4 * tw;
                float* dst = yn + (m * OH + oh) * OW + ow0;
                if (rn) {
                    const float* rr = rn + (m * OH + oh) * OW + ow0;
                    for (long i = 0; i < len; i++) dst[i] = out[r][i] + rr[i];
                } else {
                    memcpy(dst, out[r], len * sizeof(float));
                }
                nx_act_row(dst, len, act, alpha, beta);
            }
        }
    }
}

/* y (N, M, OH, OW) = act(conv3x3(x (N, C, H, W), pads top PT / left PL, zeros past the image) + bias + res);
 * up: 36 packed U[ξ] (M×C) blocks of nx_gemm_packed_a_size(M, C); scratch: nx_winograd_f4_scratch floats.
 * Returns 0, or -1 when a GEMM could not allocate. */
NX_EXPORT int nx_winograd_f4(long N, long C, long H, long W, long M, long PT, long PL, long OH, long OW,
                             const float* x, const float* up, const float* bias, const float* res, float* y,
                             float* scratch, int act, float alpha, float beta, int threads) {
    NX_CHECK(N >= 1 && C >= 1 && M >= 1 && H >= 1 && W >= 1 && PT >= 0 && PL >= 0 && OH >= 1 && OW >= 1);
    NX_CHECK(scratch != NULL);
    long TH = (OH + 3) / 4, TW = (OW + 3) / 4, T = TH * TW;
    long ua = nx_gemm_packed_a_size(M, C), vb = nx_gemm_packed_size(C, T);
    float* v = scratch;              /* [36] B panels of V[ξ] (C×T): [panel][c][32 tiles] */
    float* p = scratch + 36 * vb;    /* [36][M][T] */
    int nt = nx_team(threads, 36.0 * M * C * T);
    if (T % NR)  /* tiles past T in the last panel: zeros, once (the transform writes only real tiles) */
        for (long xi = 0; xi < 36; xi++)
            for (long c = 0; c < C; c++)
                memset(v + xi * vb + (T / NR) * C * NR + c * NR + T % NR, 0, (NR - T % NR) * sizeof(float));
    for (long n = 0; n < N; n++) {
        struct wino_in_job ij = {.C = C, .H = H, .W = W, .PT = PT, .PL = PL, .TH = TH, .TW = TW, .vb = vb,
                                 .xn = x + n * C * H * W, .v = v};
        nx_for(nt, C * TH, wino_in_chunks, &ij);
        struct wino_gemm_job gj = {.M = M, .C = C, .T = T, .ua = ua, .vb = vb, .up = up, .v = v, .p = p, .failed = 0};
        nx_for(nt, 36, wino_gemm_chunks, &gj);
        if (gj.failed) return -1;
        struct wino_out_job oj = {.M = M, .OH = OH, .OW = OW, .TH = TH, .TW = TW, .T = T, .p = p, .bias = bias,
                                  .rn = res ? res + n * M * OH * OW : NULL, .yn = y + n * M * OH * OW, .act = act,
                                  .alpha = alpha, .beta = beta};
        nx_for(nt, M * TH, wino_out_chunks, &oj);
    }
    return 0;
}
