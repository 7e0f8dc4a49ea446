/* Packed SGEMM for the native CPU EP: C = A·B (+ bias, activation) with B packed once (constant weights, either
 * orientation) into 32-column panels, A packed per call into MR-row panels, an MR×32 register-blocked micro-kernel
 * (AVX-512 where the build has it, AVX2 + FMA as 6×16 blocks, plain vectorisable C otherwise), K blocked; output
 * tiles split over the pool's threads (nx_pool.h). Row-major throughout. Also the convolution whose B rows are read in place from
 * stride-phase planes of the input (nx_conv_shifted). */
#include <stdlib.h>
#include <string.h>
#include "nx_math.h"
#include "nx_kernels.h"
#include "nx_pool.h"
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#define MR 16  /* rows of a tile: 8 + 8 (AVX-512 blocks), 6 + 5 + 5 (AVX2 blocks); 16, 32, 64 ... output channels fill
                 * whole tiles */
#define NR 32
#define NB 16  /* columns of a Bᵀ panel (the AVX-512 build's few-column products, few_columns_chunks) */
#define NX_GROUP 8  /* columns of a B row read as one vector (micro_rows' grp) */
#define KC 256
#define PF_STEPS 48  /* A prefetched this many k steps ahead (~2.7 KB: L3 latency; 8 was ~6% slower on ResNet-18) */
#define CACHE_BUDGET (1536L << 10)  /* bytes of packed operand kept in L2 while the other one streams */
#define ALIGN_FLOATS 16  /* scratch slack for aligning a packed B (aligned64) */

void nx_act_row(float* y, long n, int act, float a, float b);

/* floats the packed form of a K×N B takes */
NX_EXPORT long nx_gemm_packed_size(long K, long N) { return ((N + NR - 1) / NR) * NR * K; }

/* pack B (K×N, element (k, n) at b[k*sk + n*sn]: sk = N, sn = 1 for row-major B; sk = 1, sn = K for B given
 * transposed as N×K) into panels bp[panel][k][0..NR), zero past N */
NX_EXPORT void nx_gemm_pack_b(long K, long N, const float* b, long sk, long sn, float* bp) {
    long panels = (N + NR - 1) / NR;
    for (long p = 0; p < panels; p++) {
        float* dst = bp + p * K * NR;
        long n0 = p * NR, w = N - n0 < NR ? N - n0 : NR;
        for (long k = 0; k < K; k++) {
            float* d = dst + k * NR;
            const float* s = b + k * sk + n0 * sn;
            if (sn == 1) {
                for (long j = 0; j < w; j++) d[j] = s[j];
            } else {
                for (long j = 0; j < w; j++) d[j] = s[j * sn];
            }
            for (long j = w; j < NR; j++) d[j] = 0.f;
        }
    }
}

/* A rows [i0, i0+MR) × cols [k0, k0+kc) → ap[k][0..MR), zero past M */
static void pack_a(const float* a, long lda, long M, long i0, long k0, long kc, float* ap) {
    long h = M - i0 < MR ? M - i0 : MR;
    for (long i = 0; i < h; i++) {
        const float* s = a + (i0 + i) * lda + k0;
        for (long k = 0; k < kc; k++) ap[k * MR + i] = s[k];
    }
    for (long i = h; i < MR; i++)
        for (long k = 0; k < kc; k++) ap[k * MR + i] = 0.f;
}

/* acc (MR×NR, row stride ld) = sum over kc of ap[k][i] * B[k][j] (+ the tile already in acc when `add`); B row k
 * is bp + k*NR (a packed panel) or, with `off`, bp + off[k] (a conv's shifted input rows, see nx_conv_shifted).
 * With `grp` the row's NR columns are NR / NX_GROUP groups of NX_GROUP contiguous values,
 * group g at B row + grp[g] (a conv tile of whole output rows shorter than NR, see nx_conv_shifted).
 * Only columns below `cols` are needed: strips wholly past them are skipped (left as they were) where the vector
 * code has strips narrower than NR (silero VAD's convs have 3-5 positions: 32 would be 6-10x the work).
 * The AVX-512 build runs tiles of contiguous columns, more than 24 wanted, as blocks of up to 8 rows × 32 columns in
 * zmm registers (zblock: 16 accumulators; per k 2 B loads and 8 broadcasts feed 16 FMAs) and grouped or narrow
 * columns as the AVX2 build's blocks (micro_ymm). (A 14-row zmm tile had left 16 output channels a 14-row and a
 * 2-row panel, the 2-row one as costly as a whole one: a 16-channel 1×1 conv over 56×56 positions 40 µs against the
 * AVX2 build's 26, measured at the time.) */
#ifdef __AVX512F__
/* row_epilogue's ReLU and HardSwish on 16 lanes (relu8 / hardswish8's operations) */
static inline __m512 relu16(__m512 v) { return _mm512_max_ps(_mm512_setzero_ps(), v); }
static inline __m512 hardswish16(__m512 v) {
    __m512 t = _mm512_fmadd_ps(v, _mm512_set1_ps(1.f / 6.f), _mm512_set1_ps(0.5f));
    return _mm512_mul_ps(v, _mm512_min_ps(_mm512_set1_ps(1.f), _mm512_max_ps(_mm512_setzero_ps(), t)));
}

/* row_epilogue(row, n, bias, act) on 16 lanes, act none, ReLU or HardSwish: the same operations */
static inline __attribute__((always_inline)) __m512 row_epilogue16(__m512 v, float bias, int act) {
    if (act || bias != 0.f) v = _mm512_add_ps(v, _mm512_set1_ps(bias));
    if (act == NX_ACT_RELU) return relu16(v);
    if (act == NX_ACT_HARDSWISH) return hardswish16(v);
    return v;
}

/* with `fuse`, a zblock's sums stored as row_out leaves them without column bias or residual: + rb[row] where rb is
 * given, then row_epilogue with no bias */
static inline __attribute__((always_inline)) __m512 tile_epilogue16(__m512 v, const float* rb, int row, int act) {
    return row_epilogue16(rb ? _mm512_add_ps(v, _mm512_set1_ps(rb[row])) : v, 0.f, act);
}

static inline __attribute__((always_inline)) void zblock(const int R, int r0, long kc, const float* ap,
                                                         const float* bp, const int* off, float* acc, long ld,
                                                         int add, int prefetch, const int fuse, const float* rb,
                                                         int act) {
    __m512 c[8][2];
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
        c[i][0] = add ? _mm512_loadu_ps(acc + (r0 + i) * ld) : _mm512_setzero_ps();
        c[i][1] = add ? _mm512_loadu_ps(acc + (r0 + i) * ld + 16) : _mm512_setzero_ps();
    }
#pragma GCC unroll 2
    for (long k = 0; k < kc; k++) {
        const float* brow = off ? bp + off[k] : bp + k * NR;
        __m512 b0 = _mm512_loadu_ps(brow), b1 = _mm512_loadu_ps(brow + 16);
        const float* a = ap + k * MR + r0;
        if (prefetch) _mm_prefetch((const char*)(a + PF_STEPS * MR), _MM_HINT_T0);  /* A streams (weights: L3) */
#pragma GCC unroll 8
        for (int i = 0; i < R; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            c[i][0] = _mm512_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(ai, b1, c[i][1]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; fuse && i < R; i++) {
        c[i][0] = tile_epilogue16(c[i][0], rb, r0 + i, act);
        c[i][1] = tile_epilogue16(c[i][1], rb, r0 + i, act);
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
        _mm512_storeu_ps(acc + (r0 + i) * ld, c[i][0]);
        _mm512_storeu_ps(acc + (r0 + i) * ld + 16, c[i][1]);
    }
}

/* rows [r0, r0 + R) for 1 <= R <= 8, R known at run time */
static inline __attribute__((always_inline)) void zblock_rows(long R, int r0, long kc, const float* ap,
                                                              const float* bp, const int* off, float* acc, long ld,
                                                              int add) {
    switch (R) {
    case 8: zblock(8, r0, kc, ap, bp, off, acc, ld, add, !r0, 0, NULL, 0); break;
    case 7: zblock(7, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    case 6: zblock(6, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    case 5: zblock(5, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    case 4: zblock(4, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    case 3: zblock(3, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    case 2: zblock(2, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    default: zblock(1, r0, kc, ap, bp, off, acc, ld, add, 0, 0, NULL, 0); break;
    }
}
#endif
#if defined(__AVX2__) && defined(__FMA__)
/* AVX2 (16 ymm registers): the 16×32 tile as 6×16 blocks (12 accumulators, the two B vectors of a k step and the
 * broadcast A value: 15 registers; per k 8 loads feed 12 FMAs); a whole tile as 6 + 5 + 5 rows, a partial one as
 * 6-row blocks and a block of the rows left.
 * The blocks of one 16-column half run back to back, while that half of the B panel (KC cache lines) is in L1. A
 * 14-row tile (6 + 6 + 2) left most conv weights (16, 32, 64 ... output channels) a panel of 2 or 4 rows; on its
 * own that panel took about half a full one's time (measured at the time). 8-column strips (15 loads per 14 FMAs: load-bound) stay for a
 * tile whose wanted columns fit in one (silero VAD's convs have 3-5 positions: a 16-wide block would be 3-5x the
 * work). */
#define BLOCK_ROWS 6
_Static_assert(MR == BLOCK_ROWS + 5 + 5, "micro_ymm: a whole tile is 6 + 5 + 5 rows");
static inline __attribute__((always_inline)) const float* b_row(const float* bp, const int* off, long k) {
    return off ? bp + off[k] : bp + k * NR;
}

/* the column in a B row where group g of NX_GROUP columns starts */
static inline __attribute__((always_inline)) long group_at(const long* grp, int g) {
    return grp ? grp[g] : g * NX_GROUP;
}

/* row_epilogue's ReLU (v < 0 ? 0 : v) and nx_hardswish (v · unit_clamp(fma(v, 1/6, 1/2))) on 8 lanes, NaN and -0
 * kept alike: max(0, v) is v unless 0 > v, min(1, t) is t unless 1 < t */
static inline __m256 relu8(__m256 v) { return _mm256_max_ps(_mm256_setzero_ps(), v); }
static inline __m256 hardswish8(__m256 v) {
    __m256 t = _mm256_fmadd_ps(v, _mm256_set1_ps(1.f / 6.f), _mm256_set1_ps(0.5f));
    return _mm256_mul_ps(v, _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_max_ps(_mm256_setzero_ps(), t)));
}

/* row_epilogue(row, n, bias, act) on 8 lanes, act none, ReLU or HardSwish: the same operations */
static inline __attribute__((always_inline)) __m256 row_epilogue8(__m256 v, float bias, int act) {
    if (act || bias != 0.f) v = _mm256_add_ps(v, _mm256_set1_ps(bias));
    if (act == NX_ACT_RELU) return relu8(v);
    if (act == NX_ACT_HARDSWISH) return hardswish8(v);
    return v;
}

/* rows [r0, r0 + R) × columns [j, j + 16); with `fuse`, each row's last sums stored through row_epilogue8 of bias
 * rb[row] (or none) and activation `act` (none, ReLU or HardSwish) */
static inline __attribute__((always_inline)) void block16e(const int R, int r0, int j, long kc, const float* ap,
                                                           const float* bp, const int* off, const long* grp,
                                                           float* acc, long ld, int add, int prefetch, const int fuse,
                                                           const float* rb, int act) {
    long s0 = group_at(grp, j / NX_GROUP), s1 = group_at(grp, j / NX_GROUP + 1);
    __m256 c0[BLOCK_ROWS], c1[BLOCK_ROWS];
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
        c0[i] = add ? _mm256_loadu_ps(acc + (r0 + i) * ld + j) : _mm256_setzero_ps();
        c1[i] = add ? _mm256_loadu_ps(acc + (r0 + i) * ld + j + 8) : _mm256_setzero_ps();
    }
#pragma GCC unroll 2
    for (long k = 0; k < kc; k++) {
        const float* brow = b_row(bp, off, k);
        __m256 b0 = _mm256_loadu_ps(brow + s0), b1 = _mm256_loadu_ps(brow + s1);
        const float* a = ap + k * MR;
        if (prefetch) _mm_prefetch((const char*)(a + PF_STEPS * MR), _MM_HINT_T0);
#pragma GCC unroll 6
        for (int i = 0; i < R; i++) {
            __m256 ai = _mm256_broadcast_ss(a + r0 + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; fuse && i < R; i++) {
        float b = rb ? rb[r0 + i] : 0.f;
        c0[i] = row_epilogue8(c0[i], b, act);
        c1[i] = row_epilogue8(c1[i], b, act);
    }
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
        _mm256_storeu_ps(acc + (r0 + i) * ld + j, c0[i]);
        _mm256_storeu_ps(acc + (r0 + i) * ld + j + 8, c1[i]);
    }
}

static inline __attribute__((always_inline)) void block16(const int R, int r0, int j, long kc, const float* ap,
                                                          const float* bp, const int* off, const long* grp,
                                                          float* acc, long ld, int add, int prefetch) {
    block16e(R, r0, j, kc, ap, bp, off, grp, acc, ld, add, prefetch, 0, NULL, 0);
}

/* rows [r0, r0 + R) × all 32 columns (R ≤ 3: 12 accumulators) */
static inline __attribute__((always_inline)) void block32(const int R, int r0, long kc, const float* ap,
                                                          const float* bp, const int* off, const long* grp,
                                                          float* acc, long ld, int add) {
    long s[4] = {group_at(grp, 0), group_at(grp, 1), group_at(grp, 2), group_at(grp, 3)};
    __m256 c[3][4];
#pragma GCC unroll 3
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) c[i][q] = add ? _mm256_loadu_ps(acc + (r0 + i) * ld + 8 * q) : _mm256_setzero_ps();
#pragma GCC unroll 2
    for (long k = 0; k < kc; k++) {
        const float* brow = b_row(bp, off, k);
        __m256 b[4] = {_mm256_loadu_ps(brow + s[0]), _mm256_loadu_ps(brow + s[1]), _mm256_loadu_ps(brow + s[2]),
                       _mm256_loadu_ps(brow + s[3])};
        const float* a = ap + k * MR + r0;
#pragma GCC unroll 3
        for (int i = 0; i < R; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) c[i][q] = _mm256_fmadd_ps(ai, b[q], c[i][q]);
        }
    }
#pragma GCC unroll 3
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) _mm256_storeu_ps(acc + (r0 + i) * ld + 8 * q, c[i][q]);
}

/* rows [r0, r0 + R) (R = 2 or 3) × the wanted columns: one 32-wide block, or a 16-wide one when that covers them */
static inline __attribute__((always_inline)) void block_few(const int R, int r0, long kc, const float* ap,
                                                            const float* bp, const int* off, const long* grp,
                                                            float* acc, long ld, int add, long cols) {
    if (cols > 16) block32(R, r0, kc, ap, bp, off, grp, acc, ld, add);
    else block16(R, r0, 0, kc, ap, bp, off, grp, acc, ld, add, 0);
}

/* rows [r0, r0 + R) (R = 8 or 4) × columns [j, j + 8), one strip */
static inline __attribute__((always_inline)) void strip8(const int R, int r0, int j, long kc, const float* ap,
                                                         const float* bp, const int* off, const long* grp,
                                                         float* acc, long ld, int add) {
    long s0 = group_at(grp, j / NX_GROUP);
    __m256 c[8];
    acc += j;
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) c[i] = add ? _mm256_loadu_ps(acc + (r0 + i) * ld) : _mm256_setzero_ps();
    for (long k = 0; k < kc; k++) {
        __m256 b = _mm256_loadu_ps(b_row(bp, off, k) + s0);
        const float* a = ap + k * MR + r0;
#pragma GCC unroll 8
        for (int i = 0; i < R; i++) c[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + i), b, c[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) _mm256_storeu_ps(acc + (r0 + i) * ld, c[i]);
}

/* the wanted rows × columns [j, j + 8) as strips of 8 or 4 rows (the packed A is zero past M: a strip may read
 * rows past the last) */
static inline __attribute__((always_inline)) void strips(long rows, int j, long kc, const float* ap, const float* bp,
                                                         const int* off, const long* grp, float* acc, long ld,
                                                         int add) {
    if (rows <= 4) strip8(4, 0, j, kc, ap, bp, off, grp, acc, ld, add);
    else strip8(8, 0, j, kc, ap, bp, off, grp, acc, ld, add);
    if (rows > 12) strip8(8, 8, j, kc, ap, bp, off, grp, acc, ld, add);
    else if (rows > 8) strip8(4, 8, j, kc, ap, bp, off, grp, acc, ld, add);
}

/* a whole tile's 16 rows as 6 + 5 + 5 (a 4-row block's 8 accumulators barely hide the FMA latency), over the 16-column
 * halves below `wide`; with `fuse`, block16e's row_epilogue8 */
static inline __attribute__((always_inline)) void whole_rows(long kc, const float* ap, const float* bp, const int* off,
                                                             const long* grp, float* acc, long ld, int add, long wide,
                                                             const int fuse, const float* rb, int act) {
    for (int j = 0; j < NR && j < wide; j += 16) {
        block16e(6, 0, j, kc, ap, bp, off, grp, acc, ld, add, !j, fuse, rb, act);
        block16e(5, 6, j, kc, ap, bp, off, grp, acc, ld, add, 0, fuse, rb, act);
        block16e(5, 11, j, kc, ap, bp, off, grp, acc, ld, add, 0, fuse, rb, act);
    }
}

static inline __attribute__((always_inline)) void micro_ymm(long kc, const float* ap, const float* bp,
                                                            const int* off, const long* grp, float* acc, long ld,
                                                            int add, long cols, long rows) {
    if (cols <= 8) {
        strips(rows, 0, kc, ap, bp, off, grp, acc, ld, add);
        return;
    }
    /* 17-24 wanted columns: 16 in 16-wide blocks, the rest one strip (a second 16-wide block would be 2-8x its work:
     * a 7×7 map's 49 positions leave 17 to the second panel) */
    long wide = cols > 16 && cols <= 24 ? 16 : cols;
    /* 6-row blocks, then the 1-5 rows left: 4 or 5 as 16-wide blocks of that many rows, 3 or fewer as one 32-wide
     * block (a block of 2 may read the zero row past the last) */
    if (rows == MR) {
        whole_rows(kc, ap, bp, off, grp, acc, ld, add, wide, 0, NULL, 0);
    } else {
        int groups = (int)(rows / BLOCK_ROWS);
        long left = rows - groups * BLOCK_ROWS;
        for (int j = 0; j < NR && j < wide; j += 16) {
            for (int g = 0; g < groups; g++)
                block16(BLOCK_ROWS, g * BLOCK_ROWS, j, kc, ap, bp, off, grp, acc, ld, add, !(j | g));
            if (left == 5) block16(5, groups * BLOCK_ROWS, j, kc, ap, bp, off, grp, acc, ld, add, 0);
            else if (left == 4) block16(4, groups * BLOCK_ROWS, j, kc, ap, bp, off, grp, acc, ld, add, 0);
        }
        if (left == 3) block_few(3, groups * BLOCK_ROWS, kc, ap, bp, off, grp, acc, ld, add, wide);
        else if (left > 0 && left < 3) block_few(2, groups * BLOCK_ROWS, kc, ap, bp, off, grp, acc, ld, add, wide);
    }
    if (wide < cols) strips(rows, 16, kc, ap, bp, off, grp, acc, ld, add);
}
#endif
#ifdef __AVX512F__
/* B row columns [s0, s0 + 8) and [s1, s1 + 8) as one vector (one load where they are adjacent) */
static inline __attribute__((always_inline)) __m512 two_groups(const float* brow, long s0, long s1, const int joined) {
    if (joined) return _mm512_loadu_ps(brow + s0);
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(brow + s0)), _mm256_loadu_ps(brow + s1), 1);
}

/* all MR = 16 rows × columns [j, j + 16) of a grouped tile in zmm: 16 accumulators, per k one B vector (its two
 * groups of NX_GROUP joined) and 16 broadcasts (the AVX2 blocks' 6 broadcasts and 2 loads per 12 ymm FMAs held these
 * convs to ~100 GFLOP/s on Zen 4, this form runs at its FMA peak, ~116: measured alone, data in L1); with `fuse`,
 * row_epilogue16 of bias rb[row] (or none) */
static inline __attribute__((always_inline)) void zblock16(int j, long kc, const float* ap, const float* bp,
                                                           const int* off, const long* grp, float* acc, long ld,
                                                           int add, const int joined, const int fuse,
                                                           const float* rb, int act) {
    long s0 = group_at(grp, j / NX_GROUP), s1 = group_at(grp, j / NX_GROUP + 1);
    __m512 c[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) c[i] = add ? _mm512_loadu_ps(acc + i * ld + j) : _mm512_setzero_ps();
#pragma GCC unroll 2
    for (long k = 0; k < kc; k++) {
        __m512 b = two_groups(b_row(bp, off, k), s0, s1, joined);
        const float* a = ap + k * MR;
        if (!j) _mm_prefetch((const char*)(a + PF_STEPS * MR), _MM_HINT_T0);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) c[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b, c[i]);
    }
#pragma GCC unroll 16
    for (int i = 0; fuse && i < MR; i++) c[i] = row_epilogue16(c[i], rb ? rb[i] : 0.f, act);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) _mm512_storeu_ps(acc + i * ld + j, c[i]);
}

/* a whole grouped tile (16 rows, 32 columns) as two zblock16 */
static inline __attribute__((always_inline)) void grouped_whole_z(long kc, const float* ap, const float* bp,
                                                                  const int* off, const long* grp, float* acc,
                                                                  long ld, int add, const int fuse, const float* rb,
                                                                  int act) {
    for (int j = 0; j < NR; j += 16) {
        if (group_at(grp, j / NX_GROUP + 1) == group_at(grp, j / NX_GROUP) + NX_GROUP)
            zblock16(j, kc, ap, bp, off, grp, acc, ld, add, 1, fuse, rb, act);
        else
            zblock16(j, kc, ap, bp, off, grp, acc, ld, add, 0, fuse, rb, act);
    }
}

static inline __attribute__((always_inline)) void micro_rows(long kc, const float* ap, const float* bp,
                                                             const int* off, const long* grp, float* acc, long ld,
                                                             int add, long cols, long rows) {
    if (grp && rows == MR) {
        grouped_whole_z(kc, ap, bp, off, grp, acc, ld, add, 0, NULL, 0);
        return;
    }
    if (grp || cols <= 24) {
        micro_ymm(kc, ap, bp, off, grp, acc, ld, add, cols, rows);
        return;
    }
    zblock_rows(rows < 8 ? rows : 8, 0, kc, ap, bp, off, acc, ld, add);
    if (rows > 8) zblock_rows(rows - 8, 8, kc, ap, bp, off, acc, ld, add);
}
#elif defined(__AVX2__) && defined(__FMA__)
#define micro_rows micro_ymm
#else
static inline void micro_rows(long kc, const float* ap, const float* bp, const int* off, const long* grp, float* acc,
                              long ld, int add, long cols, long rows) {
    (void)cols, (void)rows;
    float c[MR * NR];
    long col[NR];  /* where column j is in a B row */
    for (int j = 0; j < NR; j++) col[j] = grp ? grp[j / NX_GROUP] + j % NX_GROUP : j;
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) c[i * NR + j] = add ? acc[i * ld + j] : 0.f;
    for (long k = 0; k < kc; k++) {
        const float* brow = off ? bp + off[k] : bp + k * NR;
        for (int i = 0; i < MR; i++) {
            float ai = ap[k * MR + i];
            if (grp) for (int j = 0; j < NR; j++) c[i * NR + j] += ai * brow[col[j]];
            else for (int j = 0; j < NR; j++) c[i * NR + j] += ai * brow[j];
        }
    }
    for (int i = 0; i < MR; i++) memcpy(acc + i * ld, c + i * NR, NR * sizeof(float));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
/* a whole tile of shifted rows in groups (grouped_tile), its last K block, with the epilogue of bias rb[row] (or none)
 * and activation `act` (none, ReLU or HardSwish) fused into the stores: a short-K conv's separate epilogue pass over
 * its output had taken ~20 % of its time (the README CNN's 3→16 channel 3×3 conv, K = 27, and MobileNetV3's stem,
 * measured at the time) */
#define NX_FUSED_EPILOGUE 1
static void grouped_whole_fused(long kc, const float* ap, const float* base, const int* off, const long* grp,
                                float* acc, long ld, int add, const float* rb, int act) {
#ifdef __AVX512F__
    grouped_whole_z(kc, ap, base, off, grp, acc, ld, add, 1, rb, act);
#else
    whole_rows(kc, ap, base, off, grp, acc, ld, add, NR, 1, rb, act);
#endif
}
#endif

/* `rows`: the tile rows that are wanted (the others may be left as they were where the vector code can) */
static void micro(long kc, const float* ap, const float* bp, float* acc, long ld, int add, long cols, long rows) {
    micro_rows(kc, ap, bp, NULL, NULL, acc, ld, add, cols, rows);
}

static void micro_shifted(long kc, const float* ap, const float* base, const int* off, const long* grp, float* acc,
                          long ld, int add, long cols, long rows) {
    micro_rows(kc, ap, base, off, grp, acc, ld, add, cols, rows);
}

/* row[j] = act(row[j] + bias) over n values; ReLU and HardSwish inline: a call per tile row costs as much as a short
 * K */
static inline void row_epilogue(float* row, long n, float bias, int act, float alpha, float beta) {
    if (act == NX_ACT_RELU) {
        for (long j = 0; j < n; j++) { float v = row[j] + bias; row[j] = v < 0.f ? 0.f : v; }
        return;
    }
    if (act == NX_ACT_HARDSWISH) {
        for (long j = 0; j < n; j++) row[j] = nx_hardswish(row[j] + bias);
        return;
    }
    if (bias != 0.f) for (long j = 0; j < n; j++) row[j] += bias;
    if (act) nx_act_row(row, n, act, alpha, beta);
}

/* the epilogue of row i of C, columns [n0, n0 + w): + bias[n] + row_bias[i] + res[i, n], then the activation */
static inline void row_out(float* dst, long i, long n0, long w, const float* bias, const float* row_bias,
                           const float* res, long ldr, int act, float alpha, float beta) {
    float rb = row_bias ? row_bias[i] : 0.f;
    if (bias) for (long j = 0; j < w; j++) dst[j] += bias[n0 + j] + rb;
    else if (row_bias) for (long j = 0; j < w; j++) dst[j] += rb;
    if (res) {
        const float* r = res + i * ldr + n0;
        for (long j = 0; j < w; j++) dst[j] += r[j];
    }
    row_epilogue(dst, w, 0.f, act, alpha, beta);
}

/* one MR×NR tile of C = act(A·B + bias[n] + row_bias[m] + res[m, n]): row panel ip of the packed A times one
 * packed B panel, into rows [ip*MR, min(M, ip*MR + MR)) and columns [n0, n0 + w) of C. A whole tile accumulates
 * straight in C, an edge tile in a scratch tile copied out after. */
static void tile_product(long K, long ip, const float* ap, const float* bpanel, float* c, long ldc,
                         long M, long n0, long w, const float* bias, const float* row_bias, const float* res,
                         long ldr, int act, float alpha, float beta) {
    long i0 = ip * MR, i_end = M - i0 < MR ? M : i0 + MR;
    int whole = i_end - i0 == MR && w == NR;
    float tile[MR * NR];
    float* acc = whole ? c + i0 * ldc + n0 : tile;
    long ld = whole ? ldc : NR;
#ifdef __AVX512F__
    int fused = whole && !bias && !res && (act == 0 || act == NX_ACT_RELU || act == NX_ACT_HARDSWISH);
#else
    int fused = 0;
#endif
    for (long k0 = 0; k0 < K; k0 += KC) {
        long kc = K - k0 < KC ? K - k0 : KC;
#ifdef __AVX512F__
        if (fused && k0 + kc == K) {  /* (a separate epilogue pass had been ~17 % of a K = 16 1×1 conv's time) */
            const float* a = ap + ip * MR * K + k0 * MR;
            const float* rb = row_bias ? row_bias + i0 : NULL;
            zblock(8, 0, kc, a, bpanel + k0 * NR, NULL, acc, ld, k0 > 0, 1, 1, rb, act);
            zblock(8, 8, kc, a, bpanel + k0 * NR, NULL, acc, ld, k0 > 0, 0, 1, rb, act);
            continue;
        }
#endif
        micro(kc, ap + ip * MR * K + k0 * MR, bpanel + k0 * NR, acc, ld, k0 > 0, w, i_end - i0);
    }
    for (long i = i0; i < i_end && !fused; i++) {
        float* dst = c + i * ldc + n0;
        if (!whole) memcpy(dst, tile + (i - i0) * NR, w * sizeof(float));
        row_out(dst, i, n0, w, bias, row_bias, res, ldr, act, alpha, beta);
    }
}

/* the arguments of one nx_gemm call and its plan, for the chunks of its loops */
struct gemm_job {
    long M, N, K, lda, ldb, ldc, ldr, mpanels, panels, kblocks, nb;
    const float *a, *ap, *b, *bp, *bias, *row_bias, *res;
    float *c, *a_own, *b_own;
    int* b_state;  /* with B packed on demand (b_lazy): per panel 0 = not packed, 1 = being packed, 2 = packed */
    int act, b_lazy;
    float alpha, beta;
};

/* rows of C = act(A·B + ...) for an M below MR with B packed, B panels [lo, hi): each row against each panel in
 * registers (an MR-row tile would compute MR - M rows of zeros: 16x the work for the one-row GEMMs of a batch-1 MLP) */
static void few_rows_chunks(void* p, long lo, long hi, int who) {
    const struct gemm_job* g = p;
    long K = g->K;
    (void)who;
    for (long jp = lo; jp < hi; jp++) {
        long n0 = jp * NR, w = g->N - n0 < NR ? g->N - n0 : NR;
        const float* panel = g->bp + jp * K * NR;
        for (long i = 0; i < g->M; i++) {
            float acc[NR] = {0.f};
            const float* ar = g->a + i * g->lda;
            for (long k = 0; k < K; k++) {
                float av = ar[k];
                const float* br = panel + k * NR;
                for (long j = 0; j < NR; j++) acc[j] = fmaf(av, br[j], acc[j]);
            }
            float* dst = g->c + i * g->ldc + n0;
            memcpy(dst, acc, w * sizeof(float));
            row_out(dst, i, n0, w, g->bias, g->row_bias, g->res, g->ldr, g->act, g->alpha, g->beta);
        }
    }
}

/* C = act(A·b + ...) for a one-column B with A packed: row panels ip0 .. ip0 + NP - 1 side by side (2·NP
 * independent sums in registers), A streaming once (a 1×1 conv of a 1×1 map, squeeze-and-excite's FCs: as tiles, B
 * was packed 32 wide and each A value broadcast for 31 columns of zeros). Each row's sum is the tiles' chain,
 * a[i][k]·b[k] added in k order (contracted to one multiply-add where the micro-kernel's is one): the same bits. */
static inline __attribute__((always_inline)) void gemv_panels(const int NP, const struct gemm_job* g, long ip0) {
    long K = g->K;
    const float* panel = g->ap + ip0 * MR * K;
    nx_v8 acc[8];
    for (int q = 0; q < 2 * NP; q++) acc[q] = (nx_v8){0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (long k = 0; k < K; k++) {
        float x = g->b[k * g->ldb];
#pragma GCC unroll 8
        for (int q = 0; q < 2 * NP; q++) acc[q] += *(const nx_v8*)(panel + q / 2 * MR * K + k * MR + q % 2 * 8) * x;
    }
    for (long i = ip0 * MR; i < g->M && i < (ip0 + NP) * MR; i++) {
        float* dst = g->c + i * g->ldc;
        *dst = acc[(i - ip0 * MR) / 8][(i - ip0 * MR) % 8];
        row_out(dst, i, 0, 1, g->bias, g->row_bias, g->res, g->ldr, g->act, g->alpha, g->beta);
    }
}

/* row panels [lo, hi) of a one-column product, four at a time */
static void gemv_chunks(void* p, long lo, long hi, int who) {
    (void)who;
    long ip = lo;
    for (; ip + 4 <= hi; ip += 4) gemv_panels(4, p, ip);
    if (hi - ip == 3) gemv_panels(3, p, ip);
    else if (hi - ip == 2) gemv_panels(2, p, ip);
    else if (hi - ip == 1) gemv_panels(1, p, ip);
}

/* floats the packed form of an M×K A takes (nx_gemm_pack_a) */
NX_EXPORT long nx_gemm_packed_a_size(long M, long K) { return ((M + MR - 1) / MR) * MR * K; }

/* all of A (M×K, row stride lda) in nx_gemm's layout: MR-row panels, each ap[panel][k][0..MR) over all of K (one
 * sequential stream per tile: the hardware prefetcher follows it when weights come from L3 or memory) */
NX_EXPORT void nx_gemm_pack_a(long M, long K, const float* a, long lda, float* ap) {
    long mpanels = (M + MR - 1) / MR;
    for (long k0 = 0; k0 < K; k0 += KC) {
        long kc = K - k0 < KC ? K - k0 : KC;
        for (long ip = 0; ip < mpanels; ip++) pack_a(a, lda, M, ip * MR, k0, kc, ap + ip * MR * K + k0 * MR);
    }
}

/* C (M×N, row stride ldc) = act(A·B + bias[n] + row_bias[m] + res[m, n]).
 * A: packed `ap` (nx_gemm_pack_a) or raw `a` (row stride lda, packed here; rows may overlap, lda < K: a
 * one-channel conv's windows of its input, cpu_ops.py's "windows" conv); B: packed `bp` (nx_gemm_pack_b) or
 * raw `b` (K×N, row stride ldb, packed here). bias, row_bias and
 * res (row stride ldr) may be NULL. Returns 0, or -1 when scratch could not be allocated. */
NX_EXPORT long nx_gemm_scratch_size(long M, long N, long K, int a_raw, int b_raw) {
    return (a_raw ? nx_gemm_packed_a_size(M, K) : 0)
           + (b_raw ? nx_gemm_packed_size(K, N) + ALIGN_FLOATS + (N + NB - 1) / NB : 0);  /* (+ the panel states) */
}

/* p rounded up to a 64-byte boundary (a B panel's rows are read in 32-byte vectors: unaligned, each would straddle
 * two cache lines: tests/bench/micro.py times both) */
static float* aligned64(float* p) { return (float*)(((unsigned long)p + 63) & ~63UL); }

/* raw B's columns [n0, n0 + width) as a panel d[k][0..width), zero past N */
static void pack_columns(const struct gemm_job* g, long n0, long width, float* d) {
    long w = g->N - n0 < width ? g->N - n0 : width;
    for (long k = 0; k < g->K; k++, d += width) {
        const float* src = g->b + k * g->ldb + n0;
        for (long j = 0; j < w; j++) d[j] = src[j];
        for (long j = w; j < width; j++) d[j] = 0.f;
    }
}

/* raw B's panel jp into its place in b_own */
static void pack_b_panel(const struct gemm_job* g, long jp) { pack_columns(g, jp * NR, NR, g->b_own + jp * g->K * NR); }

/* a panel packed on demand, its state *st 0 = not packed, 1 = being packed, 2 = packed: 1 when the caller is to pack
 * it now (then panel_packed), 0 once it is packed (waiting while another packs it) */
static int claim_panel(int* st) {
    int s = __atomic_load_n(st, __ATOMIC_ACQUIRE);
    if (s == 2) return 0;
    if (s == 0 && __atomic_compare_exchange_n(st, &s, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) return 1;
    while (__atomic_load_n(st, __ATOMIC_ACQUIRE) != 2) NX_CPU_RELAX();  /* (being packed: a panel's copy is short) */
    return 0;
}

static void panel_packed(int* st) { __atomic_store_n(st, 2, __ATOMIC_RELEASE); }

/* packing items [lo, hi): A's (K block, row panel) pairs first when A is raw, then B's panels when B is raw and
 * not packed on demand */
static void gemm_pack_chunks(void* p, long lo, long hi, int who) {
    const struct gemm_job* g = p;
    long a_items = g->a_own ? g->kblocks * g->mpanels : 0;
    (void)who;
    for (long t = lo; t < hi; t++) {
        if (t < a_items) {
            long kb = t / g->mpanels, ip = t % g->mpanels, k0 = kb * KC, kc = g->K - k0 < KC ? g->K - k0 : KC;
            pack_a(g->a, g->lda, g->M, ip * MR, k0, kc, g->a_own + ip * MR * g->K + k0 * MR);
            continue;
        }
        pack_b_panel(g, t - a_items);
    }
}

/* B panel jp packed on demand: by the first participant to need it, which then computes its tiles (in the tile
 * order of one-panel blocks, the tiles of a panel run back to back, mostly in one chunk): the panel is read from
 * that core's cache. Packing every panel first, split over the threads, left most tiles reading a panel another
 * core had written (small 1×1 convs gained little from a second thread; micro.py's 1×1 conv row, 1 and 2) */
static void need_b_panel(const struct gemm_job* g, long jp) {
    if (claim_panel(g->b_state + jp)) {
        pack_b_panel(g, jp);
        panel_packed(g->b_state + jp);
    }
}

/* output tiles [lo, hi) in the order nx_gemm chose (B block by B block, row panel by row panel within one) */
static void gemm_tile_chunks(void* p, long lo, long hi, int who) {
    const struct gemm_job* g = p;
    long mpanels = g->mpanels, panels = g->panels, nb = g->nb;
    const float* apk = g->ap ? g->ap : g->a_own;
    const float* bpk = g->bp ? g->bp : g->b_own;
    (void)who;
    for (long t = lo; t < hi; t++) {
        long jb = t / (mpanels * nb), r = t - jb * mpanels * nb;
        long pb = panels - jb * nb < nb ? panels - jb * nb : nb;  /* panels in this (possibly last) block */
        long ip = r / pb, jp = jb * nb + r % pb;
        long n0 = jp * NR, w = g->N - n0 < NR ? g->N - n0 : NR;
        if (g->b_lazy) need_b_panel(g, jp);
        tile_product(g->K, ip, apk, bpk + jp * g->K * NR, g->c, g->ldc, g->M, n0, w, g->bias, g->row_bias, g->res,
                     g->ldr, g->act, g->alpha, g->beta);
    }
}

#ifdef __AVX512F__
/* A product of few columns (a 1×1 conv of a 7×7 map: N = 49) with A packed (fitting in cache) and B raw, computed
 * as its transpose Cᵀ = Bᵀ·Aᵀ: 16 output rows per zmm vector (a packed A panel's k-th row is one), 16 columns
 * broadcast from a Bᵀ panel, all of K in registers; each 16×16 block transposed in registers, row_out's epilogue
 * (ReLU, HardSwish or none) applied there and stored. The 32-wide tiles had left such products a partial panel (17
 * of 49 columns as a 16-wide block and an 8-wide strip) and a separate epilogue pass: 576×96 by 96×49 87 -> 70 us
 * (N = 17: 52 -> 34), measured alone. The same sums in the same order: the same bits. */

#define FEW_COLUMNS 1024  /* (3136 columns: 2-6 % slower than the 32-wide tiles with K = 16 or 48, measured) */

/* c[j] = the 16 rows of C of column j, for the R columns of one Bᵀ panel (the others zero) */
static inline __attribute__((always_inline)) void few_columns_block(const int R, long K, const float* a,
                                                                    const float* bt, __m512* c) {
#pragma GCC unroll 16
    for (int j = 0; j < NB; j++) c[j] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (long k = 0; k < K; k++) {
        __m512 av = _mm512_loadu_ps(a + k * MR);
        _mm_prefetch((const char*)(a + (k + PF_STEPS) * MR), _MM_HINT_T0);
#pragma GCC unroll 16
        for (int j = 0; j < R; j++) c[j] = _mm512_fmadd_ps(av, _mm512_set1_ps(bt[k * NB + j]), c[j]);
    }
}

/* the 16×16 block c (c[j]: column j) as rows: r[i] = row i (unpack 32-bit, then 64-bit pairs within 128-bit lanes;
 * then the 4×4 lanes of each row quadruple) */
static inline __attribute__((always_inline)) void transpose16(const __m512* c, __m512* r) {
    __m512 t[16], u[16];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_ps(c[2 * k], c[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(c[2 * k], c[2 * k + 1]);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {  /* u[4k + m], lane L: row 4L + m, columns 4k .. 4k + 3 */
        __m512d a0 = _mm512_castps_pd(t[4 * k]), a1 = _mm512_castps_pd(t[4 * k + 1]);
        __m512d a2 = _mm512_castps_pd(t[4 * k + 2]), a3 = _mm512_castps_pd(t[4 * k + 3]);
        u[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        u[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        u[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        u[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
        __m512 v3 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
        r[m] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + m] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
        r[8 + m] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
}

/* row_out on the 16 columns [n0, n0 + 16) of row i (those in `m`) in a register, ReLU or HardSwish (or none) */
static inline __attribute__((always_inline)) __m512 row_out16(__m512 v, const struct gemm_job* g, long i, long n0,
                                                              __mmask16 m) {
    float rb = g->row_bias ? g->row_bias[i] : 0.f;
    if (g->bias) v = _mm512_add_ps(v, _mm512_add_ps(_mm512_maskz_loadu_ps(m, g->bias + n0), _mm512_set1_ps(rb)));
    else if (g->row_bias) v = _mm512_add_ps(v, _mm512_set1_ps(rb));
    if (g->res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, g->res + i * g->ldr + n0));
    return row_epilogue16(v, 0.f, g->act);
}

/* Bᵀ panel q, bt[k][0..NB) = b[k][q·NB ..], packed on demand by the first participant to need it */
static const float* need_bt_panel(const struct gemm_job* g, long q) {
    float* bt = g->b_own + q * NB * g->K;
    if (claim_panel(g->b_state + q)) {
        pack_columns(g, q * NB, NB, bt);
        panel_packed(g->b_state + q);
    }
    return bt;
}

/* tiles [lo, hi) of a few-column product, Bᵀ panel by Bᵀ panel (one in L1 while every row panel meets it; A fits
 * in cache) */
static void few_columns_chunks(void* p, long lo, long hi, int who) {
    const struct gemm_job* g = p;
    long K = g->K, N = g->N;
    (void)who;
    for (long t = lo; t < hi; t++) {
        long q = t / g->mpanels, ip = t % g->mpanels;
        long i0 = ip * MR, h = g->M - i0 < MR ? g->M - i0 : MR, n0 = q * NB, R = N - n0 < NB ? N - n0 : NB;
        const float* a = g->ap + ip * MR * K;
        const float* bt = need_bt_panel(g, q);
        __m512 c[NB], r[MR];
        switch (R) {
        case 16: few_columns_block(16, K, a, bt, c); break;
        case 15: few_columns_block(15, K, a, bt, c); break;
        case 14: few_columns_block(14, K, a, bt, c); break;
        case 13: few_columns_block(13, K, a, bt, c); break;
        case 12: few_columns_block(12, K, a, bt, c); break;
        case 11: few_columns_block(11, K, a, bt, c); break;
        case 10: few_columns_block(10, K, a, bt, c); break;
        case 9: few_columns_block(9, K, a, bt, c); break;
        case 8: few_columns_block(8, K, a, bt, c); break;
        case 7: few_columns_block(7, K, a, bt, c); break;
        case 6: few_columns_block(6, K, a, bt, c); break;
        case 5: few_columns_block(5, K, a, bt, c); break;
        case 4: few_columns_block(4, K, a, bt, c); break;
        case 3: few_columns_block(3, K, a, bt, c); break;
        case 2: few_columns_block(2, K, a, bt, c); break;
        default: few_columns_block(1, K, a, bt, c); break;
        }
        transpose16(c, r);
        __mmask16 m = (__mmask16)((1u << R) - 1);
        for (long i = 0; i < h; i++)
            _mm512_mask_storeu_ps(g->c + (i0 + i) * g->ldc + n0, m, row_out16(r[i], g, i0 + i, n0, m));
    }
}
#endif

NX_EXPORT int nx_gemm(long M, long N, long K, const float* a, long lda, const float* ap, const float* b, long ldb,
                      const float* bp, float* c, long ldc, const float* bias, const float* row_bias, const float* res,
                      long ldr, int act, float alpha, float beta, float* scratch, int threads) {
    NX_CHECK(M >= 0 && N >= 0 && K >= 0 && (a || ap) && (b || bp) && ldc >= N && (!a || lda >= 1) && (!b || ldb >= N));
    NX_CHECK(!res || ldr >= N);
    struct gemm_job g = {.M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc, .ldr = ldr, .a = a, .ap = ap,
                         .b = b, .bp = bp, .bias = bias, .row_bias = row_bias, .res = res, .c = c, .act = act,
                         .alpha = alpha, .beta = beta};
    long panels = g.panels = (N + NR - 1) / NR, mpanels = g.mpanels = (M + MR - 1) / MR;
    g.kblocks = (K + KC - 1) / KC;
    int nt = nx_team(threads, (double)M * N * K);
    if (a && bp && M < 4) {
        nx_for(nt, panels, few_rows_chunks, &g);
        return 0;
    }
    if (ap && b && N == 1) {
        nx_for(nt, mpanels, gemv_chunks, &g);
        return 0;
    }
    float* mine = scratch ? NULL : malloc(sizeof(float) * nx_gemm_scratch_size(M, N, K, !ap, !bp) + 64);
    if (!scratch && !mine) return -1;
    g.a_own = ap ? NULL : (scratch ? scratch : mine);
    g.b_own = bp ? NULL : aligned64((scratch ? scratch : mine) + (ap ? 0 : nx_gemm_packed_a_size(M, K)));
#ifdef __AVX512F__
    if (ap && b && N <= FEW_COLUMNS && (act == 0 || act == NX_ACT_RELU || act == NX_ACT_HARDSWISH) &&
        M * K * (long)sizeof(float) <= CACHE_BUDGET && N * K * (long)sizeof(float) <= CACHE_BUDGET) {
        /* (Bᵀ's NB-wide panels and their states fit where B's would go) */
        long qpanels = (N + NB - 1) / NB;
        g.b_state = (int*)(g.b_own + qpanels * NB * K);
        memset(g.b_state, 0, qpanels * sizeof(int));
        nx_for(nt, qpanels * mpanels, few_columns_chunks, &g);
        free(mine);
        return 0;
    }
#endif
    /* tiles go B block by B block, row panel by row panel within a block. An A that fits in cache: blocks of one
     * B panel (each B panel streams once and meets every row panel while hot: MiniLM's weights); else a B that
     * fits: one block (A streams once: a conv's weights); else blocks of as many B panels as fit (each block read
     * from memory once, each A panel once per block) */
    long panel_bytes = K * NR * (long)sizeof(float);
    long nb = mpanels * MR * K * (long)sizeof(float) <= CACHE_BUDGET ? 1
              : panels * panel_bytes <= CACHE_BUDGET ? panels : CACHE_BUDGET / panel_bytes;
    g.nb = nb < 1 ? 1 : nb;
    g.b_lazy = g.b_own && g.nb == 1;
    if (g.b_lazy) {
        g.b_state = (int*)(g.b_own + nx_gemm_packed_size(K, N));
        memset(g.b_state, 0, panels * sizeof(int));
    }
    nx_for(nt, (g.a_own ? g.kblocks * mpanels : 0) + (g.b_own && !g.b_lazy ? panels : 0), gemm_pack_chunks, &g);
    nx_for(nt, mpanels * panels, gemm_tile_chunks, &g);
    free(mine);
    return 0;
}

/* Convolution as a GEMM whose B rows are read in place: the zero-padded input is split by stride phase into planes
 * xs[c][ph][pw][i][j] = padded x[c][i*SH + ph][j*SW + pw] (Hs × Ws each), so that tap (c, kh, kw) of output
 * (oh, ow) reads plane (c, kh*DH % SH, kw*DW % SW) at (oh + kh*DH / SH, ow + kw*DW / SW): over the positions
 * q = oh*Ws + ow every tap is one contiguous row at a fixed offset. No im2col matrix or panel is built; positions
 * with ow >= OW (the Ws - OW columns past each output row) are computed and dropped, except where OW is whole
 * groups of NX_GROUP (grouped_tile).
 * A stride-1 conv padded on both sides shares its pad columns: a plane row is the input row and max(left, right)
 * zeros, a read left of a row lands in the zeros closing the row above (`lead` zeros open the plane): 33 columns
 * instead of 34 for a 3×3 conv of a 32-wide map, 9 instead of 10 for an 8-wide one (positions computed and
 * dropped). y (M × OH*OW) = act(W·x + bias[m] + res[m, p]); weights packed by nx_gemm_pack_a. */
static void unshared_geometry(long KH, long KW, long SH, long SW, long DH, long DW, long OH, long OW, long* hs,
                              long* ws) {
    *hs = OH + (KH - 1) * DH / SH;
    *ws = OW + (KW - 1) * DW / SW;
}

static void shifted_geometry(long KH, long KW, long SH, long SW, long DH, long DW, long OH, long OW, long W, long PL,
                             long* hs, long* ws, long* lead) {
    unshared_geometry(KH, KW, SH, SW, DH, DW, OH, OW, hs, ws);
    *lead = 0;
    long PR = OW + (KW - 1) * DW - PL - W;  /* the right pad the windows reach */
    long shared = W + (PL > PR ? PL : PR);
    if (shared < OW) shared = OW;
    if (SH == 1 && SW == 1 && PL >= 1 && PR >= 1 && PL + *hs * shared <= *hs * *ws) {  /* (within the scratch bound) */
        *ws = shared;
        *lead = PL;
    }
}

/* whether some tap of a kernel axis (K taps, dilation D, stride S) reads stride phase ph (a 1×1 stride-2 conv
 * reads one phase of four: the planes nobody reads are not filled) */
static int phase_used(long ph, long K, long D, long S) {
    long g = S, d = D % S;
    while (d) { long t = g % d; g = d; d = t; }  /* g = gcd(D, S): k·D mod S runs over the multiples of g */
    if (K >= S / g) return ph % g == 0;          /* (a whole period of taps: silero's 256-tap stride-128 STFT) */
    for (long k = 0; k < K; k++)
        if (k * D % S == ph) return 1;
    return 0;
}

/* zeros after the last plane: the last position panel's rows reach up to NR - 1 + (ws - OW) floats past it */
static long shifted_slack(long ws) { return NR + ws; }

/* between a tile (h rows of NR positions from q0 on the Ws-wide grid) and the OH×OW rows of m: copy the tile's
 * valid positions out (`out`), or add the matrix's values into the tile (residual) */
static void shifted_runs(float* tile, float* m, long P, long h, long q0, long Q, long ws, long OW, int out) {
    for (long q = q0; q < q0 + NR && q < Q;) {
        long oh = q / ws, ow = q % ws, len = ws - ow;
        if (len > q0 + NR - q) len = q0 + NR - q;
        if (ow < OW) {
            long run = len < OW - ow ? len : OW - ow;
            for (long i = 0; i < h; i++) {
                float* t = tile + i * NR + (q - q0);
                float* r = m + i * P + oh * OW + ow;
                if (out) nx_copy_run(r, t, run);
                else for (long j = 0; j < run; j++) t[j] += r[j];
            }
        }
        q += len;
    }
}

/* floats of nx_conv_shifted's scratch holding `copies` copies of the input planes (see nx_conv_shifted) */
NX_EXPORT long nx_conv_shifted_scratch(long C, long KH, long KW, long SH, long SW, long DH, long DW, long OH,
                                       long OW, long copies) {
    long hs, ws;
    unshared_geometry(KH, KW, SH, SW, DH, DW, OH, OW, &hs, &ws);  /* (the larger of the two geometries) */
    return copies * (C * SH * SW * hs * ws + shifted_slack(ws)) + C * KH * KW + 16;  /* (planes, slack) each, offsets */
}

/* rows [lo, hi) of one participant's copy of a conv's input planes made so far (planes_with_rows), on a cache line
 * of its own */
struct made_rows {
    __attribute__((aligned(64))) long lo, hi;
};

/* the arguments of one nx_conv_shifted call and its geometry, for the chunks of its loops */
struct shifted_job {
    long C, H, W, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW, M, K, hs, ws, lead, plane, Q, P, mpanels, panels;
    long plane_block;  /* rows of a plane per item of shifted_plane_chunks (nx_spatial_block) */
    long pool_rows;    /* output rows per item of pooled_tile_chunks */
    long copy;         /* floats from one participant's copy of the planes to the next's; 0: one copy, shared */
    const float *x, *ap, *bias, *res;
    float *y, *xs, *pooled;
    const int* off;
    int act, a_outer, grouped;
    float alpha, beta;
    struct made_rows* built;  /* per participant, with `copy` */
};

/* what the rows of stride phase (ph, pw) of every channel's planes take: whether a tap reads them, and where a plane
 * row's values come from (phase_rows: d[j] = the input row's value j·SW + off, zeros outside [j_lo, j_hi)) */
struct plane_phase {
    long ph, pw, off, j_lo, j_hi;
    int used;
};

static struct plane_phase plane_phase(const struct shifted_job* g, long k) {
    long SW = g->SW, W = g->W, ws = g->ws;
    struct plane_phase q = {.ph = k / SW, .pw = k % SW};
    q.used = phase_used(q.ph, g->KH, g->DH, g->SH) && phase_used(q.pw, g->KW, g->DW, SW);
    q.off = q.pw - g->PL + g->lead;                      /* column of j = 0 */
    q.j_lo = q.off >= 0 ? 0 : (-q.off + SW - 1) / SW;    /* first j with a column >= 0 */
    q.j_hi = (W - q.off + SW - 1) / SW;                  /* first j with a column >= W */
    if (q.j_hi > ws) q.j_hi = ws;
    if (q.j_lo > q.j_hi) q.j_lo = q.j_hi;
    return q;
}

/* rows [i0, i1) of the plane of channel c in stride phase q at dst (its first value: after the plane's `lead`
 * zeros, written with row 0): d[j] = padded row r at column j·SW + pw - PL, zeros where that is outside [0, W), a
 * strided copy between (no bounds test per value; no memset / memcpy call: three a row were most of the planes' time
 * on small maps) */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void phase_rows(const struct shifted_job* g,
                                                                                     float* dst, long c,
                                                                                     const struct plane_phase* q,
                                                                                     long i0, long i1) {
    long H = g->H, W = g->W, SW = g->SW, ws = g->ws, off = q->off, j_lo = q->j_lo, j_hi = q->j_hi;
    for (long i = i0; q->used && i < i1; i++) {
        if (i == 0) nx_zero_run(dst - g->lead, g->lead);
        long r = i * g->SH + q->ph - g->PT;
        float* d = dst + i * ws;
        if (r < 0 || r >= H) {
            nx_zero_run(d, ws);
            continue;
        }
        const float* src = g->x + (c * H + r) * W;
        nx_zero_run(d, j_lo);
        if (SW == 1) nx_copy_run(d + j_lo, src + j_lo + off, j_hi - j_lo);
        else if (SW == 2) nx_take_even(d + j_lo, src + 2 * j_lo + off, j_hi - j_lo, W - 2 * j_lo - off);
        else for (long j = j_lo; j < j_hi; j++) d[j] = src[j * SW + off];
        nx_zero_run(d + j_hi, ws - j_hi);
    }
}

/* the shared planes' items [lo, hi): item t is a block of rows of plane cp, blocks outer (nx_spatial_items), walked
 * with counters; a stride phase's geometry is worked out when the phase changes (the ~10 divisions an item had taken
 * were most of a 2-thread 8×8 map's planes: 320 items) */
static void shifted_plane_chunks(void* p, long lo, long hi, int who) {
    const struct shifted_job* g = p;
    long phases = g->SH * g->SW, planes = g->C * phases, block = g->plane_block;
    long cp = lo % planes, i0 = lo / planes * block, k = cp % phases, c = cp / phases;
    struct plane_phase q = plane_phase(g, k);
    (void)who;
    for (long t = lo; t < hi; t++) {
        if (q.ph * g->SW + q.pw != k) q = plane_phase(g, k);
        phase_rows(g, g->xs + cp * g->plane + g->lead, c, &q, i0, i0 + block < g->hs ? i0 + block : g->hs);
        if (++k == phases) k = 0, c++;  /* the next item: the next plane, or the first plane's next block */
        if (++cp == planes) cp = 0, c = 0, k = 0, i0 += block;
    }
}

/* participant who's copy of the planes (g->copy apart: each participant makes the rows its own tiles read, in its
 * own copy, as they come; no loop of their own, no wait for it, no line written by one core and read by the other),
 * with rows [i0, i1) made: rows made before are kept while the rows asked for join them (a participant's own items
 * go forward, the ones it takes from another's back end backward), else the range starts again */
static const float* planes_with_rows(struct shifted_job* g, int who, long i0, long i1) {
    float* xs = g->xs + who * g->copy;
    if (!g->copy) return xs;  /* (the shared copy: all made beforehand) */
    i0 = i0 > 0 ? i0 : 0;
    i1 = i1 < g->hs ? i1 : g->hs;
    long lo = g->built[who].lo, hi = g->built[who].hi, from = i0, to = i1;
    if (i0 >= lo && i1 <= hi) return xs;
    if (hi > lo && i0 >= lo && i0 <= hi) from = hi, hi = i1;           /* (forward: rows [hi, i1) to make) */
    else if (hi > lo && i1 <= hi && i1 >= lo) to = lo, lo = i0;        /* (backward: rows [i0, lo)) */
    else lo = i0, hi = i1;
    long phases = g->SH * g->SW;
    for (long k = 0; k < phases; k++) {
        struct plane_phase q = plane_phase(g, k);
        for (long c = 0; c < g->C; c++) phase_rows(g, xs + (c * phases + k) * g->plane + g->lead, c, &q, from, to);
    }
    g->built[who].lo = lo;
    g->built[who].hi = hi;
    return xs;
}

/* the plane rows the output rows [oh0, oh1) read: their taps' rows, and the row above (a read left of a row in the
 * shared-pad geometry lands in the zeros closing the row above) */
static const float* planes_for(struct shifted_job* g, int who, long oh0, long oh1) {
    return planes_with_rows(g, who, oh0 - 1, oh1 + (g->KH - 1) * g->DH / g->SH);
}

#ifdef NX_GROUP
/* the output tile of row panel ip and output positions [p0, p0 + NR) when every output row is whole groups of
 * NX_GROUP positions: group q of the tile reads its first position's place in the planes (oh*ws + ow), no position
 * is computed and dropped, and a tile of whole rows and columns accumulates in y itself */
static void grouped_tile(const struct shifted_job* g, const float* xs, long ip, long p0, float* tile) {
    long K = g->K, P = g->P, OW = g->OW, i0 = ip * MR, h = g->M - i0 < MR ? g->M - i0 : MR;
    long cols = P - p0 < NR ? P - p0 : NR, grp[NR / NX_GROUP];
    long oh = p0 / OW, ow = p0 % OW, first = oh * g->ws + ow;  /* (one division a tile: one per group had been
                                                                  * ~5 % of a K = 27 conv) */
    for (int q = 0; q < NR / NX_GROUP; q++) {  /* (a group past the last position: the first one's, read, dropped) */
        grp[q] = q * NX_GROUP < cols ? oh * g->ws + ow : first;
        ow += NX_GROUP;
        if (ow >= OW) ow -= OW, oh++;
    }
    int whole = h == MR && cols == NR;
    float* acc = whole ? g->y + i0 * P + p0 : tile;
    long ld = whole ? P : NR;
#ifdef NX_FUSED_EPILOGUE
    int fused = whole && !g->res && (g->act == 0 || g->act == NX_ACT_RELU || g->act == NX_ACT_HARDSWISH);
#else
    int fused = 0;
#endif
    for (long k0 = 0; k0 < K; k0 += KC) {
        long kc = K - k0 < KC ? K - k0 : KC;
#ifdef NX_FUSED_EPILOGUE
        if (fused && k0 + kc == K) {
            grouped_whole_fused(kc, g->ap + ip * MR * K + k0 * MR, xs, g->off + k0, grp, acc, ld, k0 > 0,
                                g->bias ? g->bias + i0 : NULL, g->act);
            continue;
        }
#endif
        micro_shifted(kc, g->ap + ip * MR * K + k0 * MR, xs, g->off + k0, grp, acc, ld, k0 > 0, cols, h);
    }
    for (long i = 0; i < h && !fused; i++) {  /* the epilogue in the order of the other tiles': residual, then bias, act */
        float* dst = g->y + (i0 + i) * P + p0;
        if (!whole) nx_copy_run(dst, tile + i * NR, cols);
        if (g->res) {
            const float* r = g->res + (i0 + i) * P + p0;
            for (long j = 0; j < cols; j++) dst[j] += r[j];
        }
        row_epilogue(dst, cols, g->bias ? g->bias[i0 + i] : 0.f, g->act, g->alpha, g->beta);
    }
}
#endif

#ifdef NX_GROUP
/* items [lo, hi) of a conv followed by a 2×2 stride-2 max pool: item t is output rows [t·pool_rows, +pool_rows) (an
 * even count of whole rows in whole position panels), its grouped tiles, then its pooled rows from y while they are
 * in this core's cache (a pool loop of its own cost more at 2 threads than its whole work at 1, measured at the
 * time) */
static void pooled_tile_chunks(void* p, long lo, long hi, int who) {
    struct shifted_job* g = p;
    long P = g->P, OH = g->OH, OW = g->OW, PH = OH / 2, PW = OW / 2, rows = g->pool_rows;
    float tile[MR * NR];
    for (long t = lo; t < hi; t++) {
        long p0 = t * rows * OW, p1 = p0 + rows * OW < P ? p0 + rows * OW : P;
        const float* xs = planes_for(g, who, t * rows, (t + 1) * rows);
        for (long q0 = p0; q0 < p1; q0 += NR)
            for (long ip = 0; ip < g->mpanels; ip++) grouped_tile(g, xs, ip, q0, tile);
        long r1 = (t + 1) * rows / 2 < PH ? (t + 1) * rows / 2 : PH;
        for (long m = 0; m < g->M; m++)
            for (long r = t * rows / 2; r < r1; r++) {
                const float* a = g->y + m * P + 2 * r * OW;
                nx_max_2x2_row(a, a + OW, g->pooled + (m * PH + r) * PW, PW);
            }
    }
}
#endif

/* output tiles [lo, hi): row panel by position panel, the order a_outer says */
static void shifted_tile_chunks(void* p, long lo, long hi, int who) {
    struct shifted_job* g = p;
    long M = g->M, K = g->K, Q = g->Q, P = g->P, mpanels = g->mpanels, panels = g->panels;
    long across = g->grouped ? g->OW : g->ws;  /* (positions of an output row in the tiles' numbering) */
    for (long t = lo; t < hi; t++) {
        long ip = g->a_outer ? t / panels : t % mpanels, jp = g->a_outer ? t % panels : t / mpanels;
        long q0 = jp * NR, i0 = ip * MR, h = M - i0 < MR ? M - i0 : MR;
        float tile[MR * NR];
        const float* xs = planes_for(g, who, q0 / across, (q0 + NR - 1) / across + 1);
#ifdef NX_GROUP
        if (g->grouped) {
            grouped_tile(g, xs, ip, q0, tile);
            continue;
        }
#endif
        for (long k0 = 0; k0 < K; k0 += KC) {
            long kc = K - k0 < KC ? K - k0 : KC;
            micro_shifted(kc, g->ap + ip * MR * K + k0 * MR, xs + q0, g->off + k0, NULL, tile, NR, k0 > 0,
                          Q - q0, h);
        }
        /* epilogue: the residual into the tile, bias and activation over whole tile rows, then the tile's
         * positions out as runs along output rows (the dropped columns skipped) */
        if (g->res) shifted_runs(tile, (float*)(g->res + i0 * P), P, h, q0, Q, g->ws, g->OW, 0);  /* read only */
        long cols = Q - q0 < NR ? Q - q0 : NR;  /* (the strips computed) */
        if (cols == NR && g->act && g->act != NX_ACT_RELU && g->act != NX_ACT_HARDSWISH) {  /* one call per tile */
            for (long i = 0; g->bias && i < h; i++) row_epilogue(tile + i * NR, NR, g->bias[i0 + i], 0, 0.f, 0.f);
            nx_act_row(tile, h * NR, g->act, g->alpha, g->beta);
        } else {
            for (long i = 0; i < h; i++)
                row_epilogue(tile + i * NR, cols, g->bias ? g->bias[i0 + i] : 0.f, g->act, g->alpha, g->beta);
        }
        shifted_runs(tile, g->y + i0 * P, P, h, q0, Q, g->ws, g->OW, 1);
    }
}

/* the conv described above, its scratch holding `copies` copies of the input planes (nx_conv_shifted_scratch); with
 * `pooled`, y's 2×2 stride-2 max pool too (M × OH/2 × OW/2, nx_maxpool's bits) */
NX_EXPORT int nx_conv_shifted(long C, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW, long PT,
                              long PL, long OH, long OW, const float* x, long M, const float* ap, float* y,
                              const float* bias, const float* res, int act, float alpha, float beta, float* scratch,
                              long copies, float* pooled, int threads) {
    NX_CHECK(C >= 1 && M >= 1 && scratch);
    NX_CHECK(KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1 && DH >= 1 && DW >= 1 && PT >= 0 && PL >= 0);
    NX_CHECK(H >= 1 && W >= 1 && OH >= 1 && OW >= 1 && (!pooled || (OH >= 2 && OW >= 2)));
    long hs, ws, lead;
    shifted_geometry(KH, KW, SH, SW, DH, DW, OH, OW, W, PL, &hs, &ws, &lead);
    long K = C * KH * KW, plane = lead + hs * ws, Q = OH * ws, P = OH * OW;
    long slack = shifted_slack(ws);
    if ((double)C * SH * SW * plane + slack >= 2147483647.0) return -1;  /* offsets are int */
    if (!scratch || copies < 1) return -1;
    float* xs = scratch;
    long copy = C * SH * SW * plane + slack;  /* (one copy of the planes and its slack) */
    int* off = (int*)(xs + copies * copy);
    int nt = nx_team(threads, (double)M * P * K);
#ifdef NX_GROUP
    int grouped = OW % NX_GROUP == 0;  /* tiles of output positions, not of plane positions (grouped_tile) */
#else
    int grouped = 0;
#endif
    /* weights larger than ~1 MB stream once (row panels outer, the input planes stay in cache); else the
     * position panels go outer and the weights are re-read from cache */
    struct shifted_job g = {.C = C, .H = H, .W = W, .KH = KH, .KW = KW, .SH = SH, .SW = SW, .DH = DH, .DW = DW,
                            .PT = PT, .PL = PL, .OH = OH, .OW = OW, .M = M, .K = K, .hs = hs, .ws = ws, .lead = lead,
                            .plane = plane,
                            .Q = Q, .P = P, .mpanels = (M + MR - 1) / MR, .panels = ((grouped ? P : Q) + NR - 1) / NR,
                            .x = x,
                            .ap = ap, .bias = bias, .res = res, .y = y, .xs = xs, .off = off, .act = act,
                            .a_outer = M * K * (long)sizeof(float) > (1L << 20), .grouped = grouped,
                            .alpha = alpha, .beta = beta};
    /* threads, weights read once per tile row panel, and a copy for each participant: each participant makes the
     * plane rows its tiles read in its own copy, as they come (planes_with_rows); else one copy, made beforehand (at
     * one thread, made row by row was no faster, measured at the time) */
    int own = nt > 1 && !g.a_outer && copies >= nt;
    struct made_rows built[NX_POOL_MAX];
    g.copy = own ? copy : 0;
    g.built = built;
    for (long i = 0; i < (own ? nt : 1); i++) {
        built[i].lo = built[i].hi = 0;
        memset(xs + i * copy + copy - slack, 0, slack * sizeof(float));
    }
    /* the taps' offsets in channel 0's planes, then each channel's as channel 0's plus its planes (the divisions
     * per tap had cost a 64-channel 3×3 conv 1.5 µs, on the caller while the pool waited) */
    long taps = KH * KW, step = SH * SW * plane;
    for (long kh = 0, k = 0; kh < KH; kh++)
        for (long kw = 0; kw < KW; kw++, k++)
            off[k] = (int)(((kh * DH % SH) * SW + kw * DW % SW) * plane + kh * DH / SH * ws + kw * DW / SW);
    for (long c = 1; c < C; c++)
        for (long k = 0; k < taps; k++) off[c * taps + k] = off[k] + (int)(c * step);
    g.plane_block = nx_spatial_block(hs, nt);
    if (!own) nx_for(nt, nx_spatial_items(C * SH * SW, hs, nt), shifted_plane_chunks, &g);
#ifdef NX_GROUP
    if (pooled && grouped && !g.a_outer) {  /* the pool in the tiles' loop */
        g.pooled = pooled;
        g.pool_rows = 2;
        while (g.pool_rows * OW % NR) g.pool_rows += 2;
        nx_for(nt, (OH + g.pool_rows - 1) / g.pool_rows, pooled_tile_chunks, &g);
        return 0;
    }
#endif
    nx_for(nt, g.mpanels * g.panels, shifted_tile_chunks, &g);
    if (pooled) nx_maxpool(M, OH, OW, 2, 2, 2, 2, 1, 1, 0, 0, OH / 2, OW / 2, y, pooled, threads);
    return 0;
}
