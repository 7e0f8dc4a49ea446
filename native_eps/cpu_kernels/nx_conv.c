/* 2-D convolution helpers on NCHW float32: depthwise convolution with a fused bias + activation epilogue, max and
 * global average pooling, nearest upsampling, ConvTranspose (kernel == stride) tap placement. Planes are split over
 * the pool's threads (nx_pool.h). */
#include <stddef.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include "nx_math.h"
#include "nx_pool.h"

void nx_act_row(float* y, long n, int act, float a, float b);

/* One zero-padded plane split by stride phase in both directions, so that every tap of an output row is a
 * contiguous run: xq[(qh * SW + qw) * RQ * WQ + r * WQ + j] = padded[r * SH + qh][j * SW + qw]. RQ rows and WQ
 * columns per phase plane; `slack` zeros after the last one. Each phase row is written once, pads included, by
 * inline vector moves (a memset of the whole plane, a memcpy call per row, a scalar stride-2 gather and divisions
 * per row had cost MobileNetV3's 3×3 depthwise convs 15-30 %, measured at the time). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void padded_phases(
        const float* x, long H, long W, long PT, long PL, long SH, long SW, long RQ, long WQ, float* xq, long slack) {
    for (long q = 0; q < SW; q++) {  /* column phase q: its columns j in [lo, hi) come from input columns j*SW + q - PL */
        long lo = q >= PL ? 0 : (PL - q + SW - 1) / SW, hi = (W + PL - q + SW - 1) / SW;
        if (hi > WQ) hi = WQ;
        if (lo > hi) lo = hi;
        long first = lo * SW + q - PL;  /* the input column of lo */
        for (long qh = 0, r = 0, rp = 0; rp < SH * RQ; rp++) {  /* padded row rp: row r of the row phase qh planes */
            float* dst = xq + ((qh * SW + q) * RQ + r) * WQ;
            long ih = rp - PT;
            if (ih < 0 || ih >= H) {
                nx_zero_run(dst, WQ);
            } else {
                const float* src = x + ih * W + first;
                nx_zero_run(dst, lo);
                if (SW == 1) nx_copy_run(dst + lo, src, hi - lo);
                else if (SW == 2) nx_take_even(dst + lo, src, hi - lo, W - first);
                else for (long j = 0; j < hi - lo; j++) dst[lo + j] = src[j * SW];
                nx_zero_run(dst + hi, WQ - hi);
            }
            if (++qh == SH) qh = 0, r++;
        }
    }
    nx_zero_run(xq + SH * SW * RQ * WQ, slack);
}

/* one register of floats as a GCC vector (8 lanes with AVX, 4 in the SSE2 baseline build); unaligned, may alias */
#ifdef __AVX__
#define NX_VL 8
#else
#define NX_VL 4
#endif
typedef float nx_vf __attribute__((vector_size(NX_VL * 4), aligned(4), may_alias));

/* acc[i0 .. i0 + V * NX_VL) = b0 + sum over taps t of wc[t] * (xq + off[t])[i]: V vectors of outputs held in registers
 * over all taps (explicit vectors: GCC's loop interchange turned the plain-array form into a scalar loop) */
#define NX_DW_CHUNK(V)                                                                     \
    do {                                                                                   \
        nx_vf ac[V];                                                                       \
        _Pragma("GCC unroll 8") for (int v = 0; v < V; v++) ac[v] = (nx_vf){0} + b0;       \
        for (long t = 0; t < taps; t++) {                                                  \
            float wv = wc[t];                                                              \
            const float* src = xq + off[t] + i0;                                           \
            _Pragma("GCC unroll 8") for (int v = 0; v < V; v++)                            \
                ac[v] += wv * *(const nx_vf*)(src + NX_VL * v);                                \
        }                                                                                  \
        _Pragma("GCC unroll 8") for (int v = 0; v < V; v++) *(nx_vf*)(acc + i0 + NX_VL * v) = ac[v]; \
    } while (0)

struct dwconv_job {
    long C, H, W, OH, OW, SH, SW, PT, PL, RQ, WQ, taps, len, slack;
    const float *x, *w, *bias;
    float* y;
    int act;
    float a, b;
    const long* off;           /* each tap's offset into the phase-split plane */
    int failed;                /* a participant's scratch could not be allocated */
    struct nx_scratch planes;  /* per participant: the phase-split plane, then the outputs of OH rows of width WQ */
};

static void dwconv_chunks(void* ctx, long lo, long hi, int who) {
    struct dwconv_job* job = ctx;
    long C = job->C, H = job->H, W = job->W, SH = job->SH, SW = job->SW, PT = job->PT, PL = job->PL;
    long OH = job->OH, OW = job->OW, RQ = job->RQ, WQ = job->WQ, taps = job->taps, len = job->len;
    long slack = job->slack;
    const float *x = job->x, *w = job->w, *bias = job->bias;
    float* y = job->y;
    int act = job->act;
    float a = job->a, b = job->b;
    const long* off = job->off;
    float* xq = nx_scratch(&job->planes, who);
    if (!xq) {
        __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float* acc = xq + SH * SW * RQ * WQ + slack;
    for (long p = lo; p < hi; p++) {
        long c = p % C;
        const float* wc = w + c * taps;
        float* yp = y + p * OH * OW;
        float b0 = bias ? bias[c] : 0.f;
        padded_phases(x + p * H * W, H, W, PT, PL, SH, SW, RQ, WQ, xq, slack);
        long i0 = 0;
        for (; i0 + 8 * NX_VL <= len; i0 += 8 * NX_VL) NX_DW_CHUNK(8);
        for (; i0 + 2 * NX_VL < len; i0 += 4 * NX_VL) NX_DW_CHUNK(4);  /* (4 chains of FMAs hide their latency) */
        for (; i0 < len; i0 += 2 * NX_VL) NX_DW_CHUNK(2);
        nx_act_row(acc, len, act, a, b);  /* (one run: rows of 7-28 outputs left most of it to the scalar tail) */
        for (long oh = 0; oh < OH; oh++) nx_copy_run(yp + oh * OW, acc + oh * WQ, OW);
    }
}

/* output positions up to which a depthwise conv runs NX_VL channels at a time (measured at the time against the
 * per-plane path, both builds in one process, 1 thread: MobileNetV3's depthwise convs with 7×7 and 14×14 outputs
 * 1.3-2.1x faster, 28×28 even; its nine shapes 949 -> 731 us) */
#define NX_DW_BLOCKED_MAX 256
/* a strided conv runs NX_VL channels at a time on any map whose padded block of NX_VL planes takes at most this
 * many bytes: the per-plane path writes SH·SW phase planes first (on a Zen 4 host, AVX-512 build, 1 thread, each
 * kernel alone: MobileNetV3's 16-channel 112×112 stride-2 3×3 conv 58 -> 42 µs, its 72-channel 56×56 one 88 -> 52,
 * measured at the time) */
#define NX_DW_BLOCKED_STRIDED_BYTES (2L << 20)

#if NX_VL == 8
typedef int nx_vi __attribute__((vector_size(32)));

/* r[i][k] -> r[k][i] (an 8×8 block of floats, in registers: unpack, shuffle and 128-bit lane swaps) */
static inline __attribute__((always_inline)) void transpose8(nx_vf r[8]) {
    nx_vf t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shuffle(r[i], r[i + 1], (nx_vi){0, 8, 1, 9, 4, 12, 5, 13});
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], (nx_vi){2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; h++) {
            u[i + 2 * h] = __builtin_shuffle(t[i + h], t[i + 2 + h], (nx_vi){0, 1, 8, 9, 4, 5, 12, 13});
            u[i + 2 * h + 1] = __builtin_shuffle(t[i + h], t[i + 2 + h], (nx_vi){2, 3, 10, 11, 6, 7, 14, 15});
        }
    for (int k = 0; k < 4; k++) {
        r[k] = __builtin_shuffle(u[k], u[k + 4], (nx_vi){0, 1, 2, 3, 8, 9, 10, 11});
        r[k + 4] = __builtin_shuffle(u[k], u[k + 4], (nx_vi){4, 5, 6, 7, 12, 13, 14, 15});
    }
}
#endif

struct dwblock_job {
    long C, H, W, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW, R, WP;
    const float *x, *w, *bias;
    float* y;
    int act;
    float a, b;
    const long* off;      /* each tap's offset in the channel-interleaved input */
    int failed;
    struct nx_scratch s;  /* per participant: the block's padded input, its outputs, its weights (NX_VL lanes each) */
};

/* V outputs of a channel block along one output row (u < V at out + u*NX_VL): b0 + the sum over taps t of
 * wt[t] * (src + toff[t])[u * step], one multiply-add chain per output (V independent chains), taps in order */
static inline __attribute__((always_inline)) void dw_group(const int V, long taps, const float* wt, const long* toff,
                                                           const float* src, long step, nx_vf b0, float* out) {
    nx_vf ac[8];
#pragma GCC unroll 8
    for (int u = 0; u < V; u++) ac[u] = b0;
    for (long t = 0; t < taps; t++) {
        nx_vf wv = *(const nx_vf*)(wt + t * NX_VL);
        const float* s = src + toff[t];
#pragma GCC unroll 8
        for (int u = 0; u < V; u++) ac[u] += wv * *(const nx_vf*)(s + u * step);
    }
#pragma GCC unroll 8
    for (int u = 0; u < V; u++) *(nx_vf*)(out + u * NX_VL) = ac[u];
}

/* dw_group for a stride-1, undilated row of KW-wide taps: each kernel row's V - 1 + KW input vectors are loaded
 * once for its KW taps (dw_group loads one per multiply-add: load-bound), the same sums in the same order */
static inline __attribute__((always_inline)) void dw_group_rows(const int V, const int KW, long KH, const float* wt,
                                                                const long* toff, const float* src, nx_vf b0,
                                                                float* out) {
    nx_vf ac[8];
#pragma GCC unroll 8
    for (int u = 0; u < V; u++) ac[u] = b0;
    for (long kh = 0; kh < KH; kh++) {
        const float* s = src + toff[kh * KW];
#pragma GCC unroll 5
        for (int kw = 0; kw < KW; kw++) {
            nx_vf wv = *(const nx_vf*)(wt + (kh * KW + kw) * NX_VL);
#pragma GCC unroll 8
            for (int u = 0; u < V; u++) ac[u] += wv * *(const nx_vf*)(s + (u + kw) * NX_VL);
        }
    }
#pragma GCC unroll 8
    for (int u = 0; u < V; u++) *(nx_vf*)(out + u * NX_VL) = ac[u];
}

/* V outputs of a row by dw_group_rows for a stride-1, undilated row of 3 or 5 taps (rows_kw), else dw_group */
static inline __attribute__((always_inline)) void dw_row_group(const int V, int rows_kw, long KH, long taps,
                                                               const float* wt, const long* toff, const float* src,
                                                               long step, nx_vf b0, float* out) {
    if (rows_kw == 3) dw_group_rows(V, 3, KH, wt, toff, src, b0, out);
    else if (rows_kw == 5) dw_group_rows(V, 5, KH, wt, toff, src, b0, out);
    else dw_group(V, taps, wt, toff, src, step, b0, out);
}

/* blocks [lo, hi) of NX_VL channels of one image: the padded input channel-interleaved (xt[r][j][lane]), every tap
 * one vector multiply-add over the block's channels (8 outputs of a row at a time: 8 independent chains; the last
 * 8 of a row overlap the group before, a row narrower than 8 is one group), the activation over all outputs, the
 * outputs back to their planes (8×8 register transposes with AVX both ways). The per-plane costs (padding, row
 * copies, short rows) are shared by NX_VL channels: on small maps (MobileNetV3's 576 channels at 7×7) they were
 * most of the time. No division per position (8 per 8 outputs had cost as much as the multiply-adds, measured at
 * the time). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void dwblock_chunks(void* ctx, long lo, long hi,
                                                                                         int who) {
    struct dwblock_job* j = ctx;
    long C = j->C, H = j->H, W = j->W, SH = j->SH, SW = j->SW, PT = j->PT, PL = j->PL;
    long OH = j->OH, OW = j->OW, R = j->R, WP = j->WP, taps = j->KH * j->KW, cb = (C + NX_VL - 1) / NX_VL;
    const long* toff = j->off;
    float* xt = nx_scratch(&j->s, who);
    if (!xt) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    float* yt = xt + R * WP * NX_VL;
    float* wt = yt + OH * OW * NX_VL;
    for (long blk = lo; blk < hi; blk++) {
        long n = blk / cb, c0 = blk % cb * NX_VL, lanes = C - c0 < NX_VL ? C - c0 : NX_VL;
        /* the pads: rows above and below the input, columns left and right of it (the rest is written below) */
        nx_zero_run(xt, PT * WP * NX_VL);
        nx_zero_run(xt + (PT + H) * WP * NX_VL, (R - PT - H) * WP * NX_VL);
        for (long r = PT; r < PT + H; r++) {
            nx_zero_run(xt + r * WP * NX_VL, PL * NX_VL);
            nx_zero_run(xt + (r * WP + PL + W) * NX_VL, (WP - PL - W) * NX_VL);
        }
        const float* xc = j->x + (n * C + c0) * H * W;  /* the block's first plane */
        long q = 0, r = 0, c = 0;                        /* input position q = (r, c) */
#if NX_VL == 8
        if (lanes == NX_VL)  /* 8 input positions of the 8 planes as one 8×8 transpose */
            for (; q + 8 <= H * W; q += 8) {
                nx_vf v[8];
                for (int l = 0; l < 8; l++) v[l] = *(const nx_vf*)(xc + l * H * W + q);
                transpose8(v);
                for (int k = 0; k < 8; k++) {
                    *(nx_vf*)(xt + ((r + PT) * WP + PL + c) * NX_VL) = v[k];
                    if (++c == W) c = 0, r++;
                }
            }
#endif
        for (; q < H * W; q++) {
            for (long l = 0; l < lanes; l++) xt[((r + PT) * WP + PL + c) * NX_VL + l] = xc[l * H * W + q];
            for (long l = lanes; l < NX_VL; l++) xt[((r + PT) * WP + PL + c) * NX_VL + l] = 0.f;
            if (++c == W) c = 0, r++;
        }
        nx_vf b0 = {0};
        long t0 = 0;  /* the block's weights tap by tap: wt[t][lane] */
#if NX_VL == 8
        if (lanes == NX_VL)
            for (; t0 + 8 <= taps; t0 += 8) {
                nx_vf v[8];
                for (int l = 0; l < 8; l++) v[l] = *(const nx_vf*)(j->w + (c0 + l) * taps + t0);
                transpose8(v);
                for (int k = 0; k < 8; k++) *(nx_vf*)(wt + (t0 + k) * NX_VL) = v[k];
            }
#endif
        for (long l = 0; l < NX_VL; l++) {
            for (long t = t0; t < taps; t++) wt[t * NX_VL + l] = l < lanes ? j->w[(c0 + l) * taps + t] : 0.f;
            if (j->bias && l < lanes) b0[l] = j->bias[c0 + l];
        }
        long step = SW * NX_VL;
        int rows_kw = SW == 1 && j->DW == 1 && (j->KW == 3 || j->KW == 5) ? (int)j->KW : 0;
        for (long oh = 0; oh < OH; oh++) {
            const float* row = xt + oh * SH * WP * NX_VL;
            float* orow = yt + oh * OW * NX_VL;
            switch (OW < 8 ? OW : 8) {
            case 8:
                for (long ow0 = 0; ow0 < OW; ow0 += 8) {
                    long o = ow0 + 8 <= OW ? ow0 : OW - 8;
                    dw_row_group(8, rows_kw, j->KH, taps, wt, toff, row + o * step, step, b0, orow + o * NX_VL);
                }
                break;
            case 7: dw_row_group(7, rows_kw, j->KH, taps, wt, toff, row, step, b0, orow); break;  /* (7×7 maps) */
            case 6: dw_group(6, taps, wt, toff, row, step, b0, orow); break;
            case 5: dw_group(5, taps, wt, toff, row, step, b0, orow); break;
            case 4: dw_group(4, taps, wt, toff, row, step, b0, orow); break;
            case 3: dw_group(3, taps, wt, toff, row, step, b0, orow); break;
            case 2: dw_group(2, taps, wt, toff, row, step, b0, orow); break;
            default: dw_group(1, taps, wt, toff, row, step, b0, orow); break;
            }
        }
        nx_act_row(yt, OH * OW * NX_VL, j->act, j->a, j->b);
        float* yc = j->y + (n * C + c0) * OH * OW;
        q = 0;
#if NX_VL == 8
        if (lanes == NX_VL)
            for (; q + 8 <= OH * OW; q += 8) {
                nx_vf v[8];
                for (int k = 0; k < 8; k++) v[k] = *(const nx_vf*)(yt + (q + k) * NX_VL);
                transpose8(v);
                for (int l = 0; l < 8; l++) *(nx_vf*)(yc + l * OH * OW + q) = v[l];
            }
#endif
        for (; q < OH * OW; q++)
            for (long l = 0; l < lanes; l++) yc[l * OH * OW + q] = yt[q * NX_VL + l];
    }
}

/* depthwise (returns 0, or -1 when its scratch could not be allocated): y[n, c] = act(bias[c] + sum_kh,kw w[c, kh, kw] * x[n, c, oh*SH - PT + kh*DH, ow*SW - PL + kw*DW]).
 * Over the phase-split plane every tap is one flat multiply-add over OH rows of width WQ (each tap's phase plane
 * and offset precomputed; the extra columns are dropped at the end), in chunks of 8 vectors of outputs, the rest in
 * chunks of 4 and 2 vectors that may run past the plane into the zeroed slack (those outputs are dropped too).
 * Maps of at most NX_DW_BLOCKED_MAX outputs, and strided ones up to NX_DW_BLOCKED_STRIDED_BYTES, run NX_VL
 * channels at a time instead (dwblock_chunks). Both add the taps in the same order: the results are the same bit
 * for bit. */
NX_EXPORT int nx_dwconv(long N, long C, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW,
                         long PT, long PL, long OH, long OW, const float* x, const float* w, const float* bias,
                         float* y, int act, float a, float b, int threads) {
    NX_CHECK(N >= 1 && C >= 1 && act >= 0);
    NX_CHECK(KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1 && DH >= 1 && DW >= 1 && PT >= 0 && PL >= 0);
    NX_CHECK(H >= 1 && W >= 1 && OH >= 1 && OW >= 1);
    long planes = N * C;
    long R = (OH - 1) * SH + (KH - 1) * DH + 1;
    long WP = (OW - 1) * SW + (KW - 1) * DW + 1;
    if (WP < W + PL) WP = W + PL;  /* every input column has a place (those past the last window are unread) */
    if (R < H + PT) R = H + PT;
    long WQ = (WP + SW - 1) / SW, RQ = (R + SH - 1) / SH;
    long taps = KH * KW;
    long len = OH * WQ;
    long slack = (KW - 1) * DW / SW + 4 * NX_VL;  /* the last 4-vector chunk's overrun past its phase plane */
    int nt = nx_team(threads, (double)planes * OH * OW * KH * KW);
    long* off = malloc(taps * sizeof(long));
    if (!off) return -1;
    int strided = SH > 1 || SW > 1;
    long block_bytes = R * WP * NX_VL * (long)sizeof(float);
    if (OH * OW <= NX_DW_BLOCKED_MAX || (strided && block_bytes <= NX_DW_BLOCKED_STRIDED_BYTES)) {
        for (long kh = 0; kh < KH; kh++)
            for (long kw = 0; kw < KW; kw++) off[kh * KW + kw] = (kh * DH * WP + kw * DW) * NX_VL;
        struct dwblock_job job = {.C = C, .H = H, .W = W, .KH = KH, .KW = KW, .SH = SH, .SW = SW, .DH = DH, .DW = DW,
                                  .PT = PT, .PL = PL, .OH = OH, .OW = OW, .R = R, .WP = WP, .x = x, .w = w,
                                  .bias = bias, .y = y, .act = act, .a = a, .b = b, .off = off, .failed = 0,
                                  .s = {.bytes = sizeof(float) * NX_VL * (R * WP + OH * OW + taps)}};
        nx_for(nt, N * ((C + NX_VL - 1) / NX_VL), dwblock_chunks, &job);
        nx_scratch_free(&job.s);
        free(off);
        return job.failed ? -1 : 0;
    }
    for (long kh = 0; kh < KH; kh++)
        for (long kw = 0; kw < KW; kw++) {
            long r = kh * DH, col = kw * DW;
            off[kh * KW + kw] = (((r % SH) * SW + col % SW) * RQ + r / SH) * WQ + col / SW;
        }
    struct dwconv_job job = {.C = C, .H = H, .W = W, .OH = OH, .OW = OW, .SH = SH, .SW = SW, .PT = PT, .PL = PL,
                             .RQ = RQ, .WQ = WQ, .taps = taps, .len = len, .slack = slack, .x = x, .w = w,
                             .bias = bias, .y = y, .act = act, .a = a, .b = b, .off = off, .failed = 0,
                             .planes = {.bytes = sizeof(float) * (SH * SW * RQ * WQ + slack + len + 4 * NX_VL)}};
    nx_for(nt, planes, dwconv_chunks, &job);
    nx_scratch_free(&job.planes);
    free(off);
    return job.failed ? -1 : 0;
}

static inline float max_nan(float o, float v) { return (v > o || v != v) ? v : o; }  /* NaN propagates */

#ifdef __AVX2__
/* max_nan over 8 lanes: v where v > o or v is NaN, else o (max_ps(v, o) is v where v > o, else o) */
static inline __m256 max_nan8(__m256 o, __m256 v) {
    return _mm256_blendv_ps(_mm256_max_ps(v, o), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}
#endif

/* o[0, n) = the 2×2 windows (stride 2) over rows a and b: max_nan(max_nan(a, b) at 2w, the same at 2w + 1), what the
 * row and window passes below compute, in one pass of vectors (the small CNN's pools 13 / 9 / 7 µs in the two passes,
 * 9 / 6 / 6 in this one, measured at the time) */
void nx_max_2x2_row(const float* a, const float* b, float* o, long n) {
    long w = 0;
#ifdef __AVX2__
    for (; w + 8 <= n; w += 8) {
        __m256 r0 = max_nan8(_mm256_loadu_ps(a + 2 * w), _mm256_loadu_ps(b + 2 * w));
        __m256 r1 = max_nan8(_mm256_loadu_ps(a + 2 * w + 8), _mm256_loadu_ps(b + 2 * w + 8));
        _mm256_storeu_ps(o + w, max_nan8(nx_evens(r0, r1), nx_odds(r0, r1)));
    }
#endif
    for (; w < n; w++) o[w] = max_nan(max_nan(a[2 * w], b[2 * w]), max_nan(a[2 * w + 1], b[2 * w + 1]));
}

struct maxpool_job {
    long H, W, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW, len, planes, block;  /* block: output rows per item */
    const float* x;
    float* y;
    struct nx_scratch rp;  /* per participant: the padded row */
};

static void maxpool_chunks(void* ctx, long lo, long hi, int who) {
    struct maxpool_job* job = ctx;
    long H = job->H, W = job->W, KH = job->KH, KW = job->KW, SH = job->SH, SW = job->SW, DH = job->DH;
    long DW = job->DW, PT = job->PT, PL = job->PL, OH = job->OH, OW = job->OW, len = job->len;
    const float* x = job->x;
    float* y = job->y;
    float* rp = nx_scratch(&job->rp, who);
    if (!rp) return;
    for (long j = 0; j < len; j++) rp[j] = -FLT_MAX;  /* the numpy kernel pads with the lowest float (the pads are
                                                        * never written) */
    float* row = rp + PL;
    for (long t = lo; t < hi; t++) {  /* item t: a block of output rows of one plane, blocks outer (nx_spatial_items) */
        long p = t % job->planes, oh0 = t / job->planes * job->block;
        long oh1 = oh0 + job->block < OH ? oh0 + job->block : OH;
        const float* xp = x + p * H * W;
        float* yp = y + p * OH * OW;
        for (long oh = oh0; oh < oh1; oh++) {
            float* o = yp + oh * OW;
            const float* in[16];
            long n = 0;
            for (long kh = 0; kh < KH; kh++) {
                long ih = oh * SH - PT + kh * DH;
                if (ih >= 0 && ih < H && n < 16) in[n++] = xp + ih * W;
            }
            if (n == 2 && KH == 2 && KW == 2 && SW == 2 && DW == 1 && PL == 0 && 2 * OW <= W) {
                nx_max_2x2_row(in[0], in[1], o, OW);
                continue;
            }
            if (n == 3) {
                const float *a = in[0], *b = in[1], *c = in[2];
                for (long w = 0; w < W; w++) row[w] = max_nan(max_nan(a[w], b[w]), c[w]);
            } else if (n == 2 && KH == 2) {
                const float *a = in[0], *b = in[1];
                for (long w = 0; w < W; w++) row[w] = max_nan(a[w], b[w]);
            } else {
                for (long w = 0; w < W; w++) row[w] = n ? in[0][w] : -FLT_MAX;
                for (long i = 1; i < n; i++)
                    for (long w = 0; w < W; w++) row[w] = max_nan(row[w], in[i][w]);
                for (long kh = 16; kh < KH; kh++) {  /* (windows taller than 16 rows) */
                    long ih = oh * SH - PT + kh * DH;
                    if (ih >= 0 && ih < H)
                        for (long w = 0; w < W; w++) row[w] = max_nan(row[w], xp[ih * W + w]);
                }
            }
            if (KW == 3 && SW == 2 && DW == 1) {
                for (long ow = 0; ow < OW; ow++)
                    o[ow] = max_nan(max_nan(rp[2 * ow], rp[2 * ow + 1]), rp[2 * ow + 2]);
            } else if (KW == 2 && SW == 2 && DW == 1) {
                for (long ow = 0; ow < OW; ow++) o[ow] = max_nan(rp[2 * ow], rp[2 * ow + 1]);
            } else {
                for (long ow = 0; ow < OW; ow++) o[ow] = rp[ow * SW];
                for (long kw = 1; kw < KW; kw++)
                    for (long ow = 0; ow < OW; ow++) o[ow] = max_nan(o[ow], rp[ow * SW + kw * DW]);
            }
        }
    }
}

/* max pooling over planes (pads are ignored positions; NaN propagates); dilation DH, DW. Per output row: the
 * column-wise max over the window's input rows into a row padded with the lowest float (one pass, vectorised), then
 * the window along that one row (one pass for the common 3- and 2-wide stride-2 windows; a 2-row window takes one
 * pass for its rows too) */
NX_EXPORT void nx_maxpool(long planes, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW,
                          long PT, long PL, long OH, long OW, const float* x, float* y, int threads) {
    NX_CHECK(planes >= 0);
    NX_CHECK(KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1 && DH >= 1 && DW >= 1 && PT >= 0 && PL >= 0);
    NX_CHECK(H >= 1 && W >= 1 && OH >= 1 && OW >= 1);
    long len = (OW - 1) * SW + (KW - 1) * DW + 1;  /* the padded row the windows read */
    if (len < PL + W) len = PL + W;
    int nt = nx_team(threads, (double)planes * H * W * NX_PASS_WORK);  /* (a pass) */
    struct maxpool_job job = {.H = H, .W = W, .KH = KH, .KW = KW, .SH = SH, .SW = SW, .DH = DH, .DW = DW, .PT = PT,
                              .PL = PL, .OH = OH, .OW = OW, .len = len, .planes = planes,
                              .block = nx_spatial_block(OH, nt), .x = x, .y = y, .rp = {.bytes = sizeof(float) * len}};
    nx_for(nt, nx_spatial_items(planes, OH, nt), maxpool_chunks, &job);
    nx_scratch_free(&job.rp);
}

struct upsample_nearest_job {
    long H, W, fh, fw, OW;
    const float* x;
    float* y;
};

static void upsample_nearest_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct upsample_nearest_job* job = ctx;
    long H = job->H, W = job->W, fh = job->fh, fw = job->fw, OW = job->OW;
    const float* x = job->x;
    float* y = job->y;
    for (long p = lo; p < hi; p++) {
        for (long i = 0; i < H; i++) {
            const float* xr = x + (p * H + i) * W;
            float* o = y + (p * H + i) * fh * OW;
            if (fw == 2) for (long j = 0; j < W; j++) { o[2 * j] = xr[j]; o[2 * j + 1] = xr[j]; }
            else for (long j = 0; j < OW; j++) o[j] = xr[j / fw];
            for (long r = 1; r < fh; r++) memcpy(o + r * OW, o, OW * sizeof(float));
        }
    }
}

/* nearest upsampling of planes by whole factors: y[p][i][j] = x[p][i / fh][j / fw] */
NX_EXPORT void nx_upsample_nearest(long planes, long H, long W, long fh, long fw, const float* x, float* y,
                                   int threads) {
    NX_CHECK(planes >= 0 && H >= 0 && W >= 0 && fh >= 1 && fw >= 1);
    long OW = W * fw;
    struct upsample_nearest_job job = {.H = H, .W = W, .fh = fh, .fw = fw, .OW = OW, .x = x, .y = y};
    nx_for(nx_team(threads, (double)planes * H * W * fh * fw * NX_PASS_WORK), planes, upsample_nearest_chunks,
           &job);
}

struct global_avg_job {
    long hw;
    const float* x;
    float* y;
};

static void global_avg_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct global_avg_job* job = ctx;
    long hw = job->hw;
    const float* x = job->x;
    float* y = job->y;
    for (long p = lo; p < hi; p++) y[p] = nx_sum(x + p * hw, hw) / (float)hw;
}

/* y[p] = mean of plane p's hw values */
NX_EXPORT void nx_global_avg(long planes, long hw, const float* x, float* y, int threads) {
    NX_CHECK(planes >= 0 && hw >= 1);
    struct global_avg_job job = {.hw = hw, .x = x, .y = y};
    nx_for(nx_team(threads, (double)planes * hw * NX_PASS_WORK), planes, global_avg_chunks, &job);
}

struct place_taps_job {
    long KH, KW, H, W;
    const float* taps;
    float* y;
};

static void place_taps_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct place_taps_job* job = ctx;
    long KH = job->KH, KW = job->KW, H = job->H, W = job->W;
    const float* taps = job->taps;
    float* y = job->y;
    for (long m = lo; m < hi; m++)
        for (long i = 0; i < H; i++)
            for (long a = 0; a < KH; a++) {
                float* dst = y + ((m * H + i) * KH + a) * W * KW;
                for (long b = 0; b < KW; b++) {
                    const float* src = taps + ((m * KH + a) * KW + b) * H * W + i * W;
                    for (long j = 0; j < W; j++) dst[j * KW + b] = src[j];
                }
            }
}

/* ConvTranspose with kernel == stride, from per-tap planes: y[m][i*KH + a][j*KW + b] = taps[(m*KH + a)*KW + b][i*W + j]
 * (the taps come from one GEMM; numpy's copy through a 5-D transposed view took ~15x longer) */
NX_EXPORT void nx_place_taps(long M, long KH, long KW, long H, long W, const float* taps, float* y, int threads) {
    NX_CHECK(M >= 0 && KH >= 1 && KW >= 1 && H >= 0 && W >= 0);
    struct place_taps_job job = {.KH = KH, .KW = KW, .H = H, .W = W, .taps = taps, .y = y};
    nx_for(nx_team(threads, (double)M * KH * KW * H * W * NX_PASS_WORK), M, place_taps_chunks, &job);
}

struct dw_transpose_job {
    long KH, KW, H, W;
    const float *x, *w, *bias;
    float* y;
};

static void dw_transpose_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct dw_transpose_job* job = ctx;
    long KH = job->KH, KW = job->KW, H = job->H, W = job->W;
    const float *x = job->x, *w = job->w, *bias = job->bias;
    float* y = job->y;
    for (long c = lo; c < hi; c++)
        for (long i = 0; i < H; i++)
            for (long a = 0; a < KH; a++) {
                float* dst = y + ((c * H + i) * KH + a) * W * KW;
                const float* src = x + (c * H + i) * W;
                float bb = bias ? bias[c] : 0.f;
                for (long b = 0; b < KW; b++) {
                    float k = w[(c * KH + a) * KW + b];
                    for (long j = 0; j < W; j++) dst[j * KW + b] = src[j] * k + bb;
                }
            }
}

/* depthwise ConvTranspose with kernel == stride: y[c][i*KH + a][j*KW + b] = x[c][i][j] * w[c][a][b] + bias[c] */
NX_EXPORT void nx_dw_transpose(long C, long KH, long KW, long H, long W, const float* x, const float* w,
                               const float* bias, float* y, int threads) {
    NX_CHECK(C >= 0 && KH >= 1 && KW >= 1 && H >= 0 && W >= 0);
    struct dw_transpose_job job = {.KH = KH, .KW = KW, .H = H, .W = W, .x = x, .w = w, .bias = bias, .y = y};
    nx_for(nx_team(threads, (double)C * KH * KW * H * W * NX_PASS_WORK), C, dw_transpose_chunks, &job);
}
