/* 8-bit integer GEMM (MatMulInteger: uint8 / int8 A × uint8 / int8 B → int32, or its float32 result for
 * MatMulIntegerToFloat / DynamicQuantizeMatMul) and DynamicQuantizeLinear for the native CPU EP. B is packed once into
 * 24-column panels of int16 k-pairs; A rows are widened to int16 (a − a_zero) per call; each B panel stays in L1
 * while the row blocks pass. The AVX2 micro-kernel multiplies int16 pairs with _mm256_madd_epi16 (each pair sum
 * ≤ 2·255² fits int32, no saturation, unlike maddubs); the plain C path does the same arithmetic. Accumulation wraps
 * modulo 2³² as int32 does in onnxruntime; B's zero point is applied after the dot products as
 * − b_zero[n] · Σₖ(a − a_zero). Where the CPU has AVX-512 VNNI (checked at run time in the AVX-512 build), B is
 * packed instead into 32-column panels of signed byte k-quads and vpdpbusd multiplies unsigned A bytes by them (see
 * "VNNI" below): the same int32 sums. DynamicQuantizeLinear follows the ONNX definition in float32: range widened to
 * include 0, scale = range / 255, zero point and values rounded half to even, saturated to [0, 255]. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <float.h>
#include "nx_math.h"
#include "nx_pool.h"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define QMR 4     /* rows of A per micro-tile */
#define QNR 24    /* columns per packed B panel (three 8-lane int32 vectors) */

static long pairs(long K) { return (K + 1) / 2; }

#ifdef __AVX512F__
/* VNNI: C = Σₖ (a − a_zero)(b − b_zero) from D = Σₖ au·bs, where au = a (uint8) or a + 128 (int8 as uint8) and
 * bs = b (int8) or b − 128 (uint8 as int8), the operands of vpdpbusd (unsigned × signed bytes, four products summed
 * into an int32 lane, no saturation): with α = a_zero + (128 for int8 A) per row and β = b_zero − (128 for uint8 B)
 * per column, Σₖ (au − α)(bs − β) = D − α·Σₖbs − β·Σₖau + K·α·β, all modulo 2³² as int32 adds wrap: the int16
 * path's sums exactly. B's panels hold VNR columns × k-quads of bytes, then Σₖbs per column, then B's 128 or 0. */
#define VMR 8   /* rows of A per VNNI tile (16 zmm accumulators) */
#define VNR 32  /* columns per VNNI panel (two 16-lane int32 vectors) */
static long quads(long K) { return (K + 3) / 4; }

static int use_vnni(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    }
    return known;
}

static long vnni_panel_bytes(long K) { return quads(K) * 4 * VNR; }
static long vnni_packed_bytes(long K, long N) { return ((N + VNR - 1) / VNR) * vnni_panel_bytes(K) + 4 * (N + 1); }

static void vnni_pack_b(long K, long N, const void* b, int b_signed, int16_t* bp16) {
    long panels = (N + VNR - 1) / VNR, kq = quads(K);
    int8_t* bp = (int8_t*)bp16;
    int32_t* colsum = (int32_t*)(bp + panels * vnni_panel_bytes(K));
    for (long p = 0; p < panels; p++)
        for (long j = 0; j < VNR; j++) {
            long n = p * VNR + j;
            uint32_t sum = 0;
            for (long k = 0; k < 4 * kq; k++) {
                int v = 0;
                if (k < K && n < N) v = b_signed ? ((const int8_t*)b)[k * N + n] : ((const uint8_t*)b)[k * N + n] - 128;
                bp[p * vnni_panel_bytes(K) + ((k / 4) * VNR + j) * 4 + k % 4] = (int8_t)v;
                sum += (uint32_t)v;
            }
            if (n < N) colsum[n] = (int32_t)sum;
        }
    colsum[N] = b_signed ? 0 : 128;
}

/* acc[r][0..VNR) = Σ over k-quads of row r's bytes · panel (rows past the real ones repeat a real row) */
__attribute__((target("avx512vnni"))) static void vnni_tile(long kq, const uint8_t* const* a, const int8_t* bp,
                                                            int32_t acc[VMR][VNR]) {
    __m512i c[VMR][2];
    for (int r = 0; r < VMR; r++) c[r][0] = c[r][1] = _mm512_setzero_si512();
    for (long q = 0; q < kq; q++) {
        __m512i b0 = _mm512_loadu_si512(bp + q * 4 * VNR), b1 = _mm512_loadu_si512(bp + q * 4 * VNR + 64);
#pragma GCC unroll 8
        for (int r = 0; r < VMR; r++) {
            int32_t quad;
            memcpy(&quad, a[r] + 4 * q, sizeof quad);
            __m512i av = _mm512_set1_epi32(quad);
            c[r][0] = _mm512_dpbusd_epi32(c[r][0], av, b0);
            c[r][1] = _mm512_dpbusd_epi32(c[r][1], av, b1);
        }
    }
    for (int r = 0; r < VMR; r++) {
        _mm512_storeu_si512(acc[r], c[r][0]);
        _mm512_storeu_si512(acc[r] + 16, c[r][1]);
    }
}
#endif

/* int16 elements the packed form of a K×N B takes */
NX_EXPORT long nx_qgemm_packed_size(long K, long N) {
#ifdef __AVX512F__
    if (use_vnni()) return (vnni_packed_bytes(K, N) + 1) / 2;
#endif
    return ((N + QNR - 1) / QNR) * pairs(K) * 2 * QNR;
}

/* pack row-major K×N B (uint8, or int8 when b_signed) into panels bp[panel][k pair][column 0..QNR)[2], zero past K
 * and N (the VNNI form where the CPU has it) */
NX_EXPORT void nx_qgemm_pack_b(long K, long N, const void* b, int b_signed, int16_t* bp) {
#ifdef __AVX512F__
    if (use_vnni()) {
        vnni_pack_b(K, N, b, b_signed, bp);
        return;
    }
#endif
    long panels = (N + QNR - 1) / QNR, kp = pairs(K);
    const uint8_t* bu = (const uint8_t*)b;
    const int8_t* bs = (const int8_t*)b;
    for (long p = 0; p < panels; p++) {
        int16_t* dst = bp + p * kp * 2 * QNR;
        for (long q = 0; q < kp; q++)
            for (long j = 0; j < QNR; j++)
                for (long h = 0; h < 2; h++) {
                    long k = 2 * q + h, n = p * QNR + j;
                    int16_t v = 0;
                    if (k < K && n < N) v = b_signed ? bs[k * N + n] : bu[k * N + n];
                    dst[(q * QNR + j) * 2 + h] = v;
                }
    }
}

/* y[r][0..w) = Σ over k pairs of a_r · panel, for QMR rows (rows past the real ones repeat a real row) */
static void tile(long kp, const int16_t* const* a, const int16_t* bp, int32_t acc[QMR][QNR]) {
#if defined(__AVX2__)
    __m256i c[QMR][QNR / 8];
    for (int r = 0; r < QMR; r++)
        for (int v = 0; v < QNR / 8; v++) c[r][v] = _mm256_setzero_si256();
    for (long q = 0; q < kp; q++) {
        __m256i b[QNR / 8];
        for (int v = 0; v < QNR / 8; v++) b[v] = _mm256_loadu_si256((const __m256i*)(bp + q * 2 * QNR + 16 * v));
        for (int r = 0; r < QMR; r++) {
            int32_t pr;
            memcpy(&pr, a[r] + 2 * q, sizeof pr);
            __m256i av = _mm256_set1_epi32(pr);
            for (int v = 0; v < QNR / 8; v++) c[r][v] = _mm256_add_epi32(c[r][v], _mm256_madd_epi16(av, b[v]));
        }
    }
    for (int r = 0; r < QMR; r++)
        for (int v = 0; v < QNR / 8; v++) _mm256_storeu_si256((__m256i*)(acc[r] + 8 * v), c[r][v]);
#else
    uint32_t c[QMR][QNR];  /* unsigned: the sum wraps modulo 2^32 as int32 hardware adds do */
    memset(c, 0, sizeof c);
    for (long q = 0; q < kp; q++) {
        const int16_t* b = bp + q * 2 * QNR;
        for (int r = 0; r < QMR; r++) {
            int32_t a0 = a[r][2 * q], a1 = a[r][2 * q + 1];
            for (int j = 0; j < QNR; j++) c[r][j] += (uint32_t)(a0 * b[2 * j] + a1 * b[2 * j + 1]);
        }
    }
    for (int r = 0; r < QMR; r++)
        for (int j = 0; j < QNR; j++) acc[r][j] = (int32_t)c[r][j];
#endif
}

void nx_act_row(float* y, long n, int act, float a, float b);

/* the float32 result of MatMulIntegerToFloat / DynamicQuantizeMatMul: y = act(float(acc) · scale[n] + bias[n]) */
typedef struct {
    const float* scale;
    long scale_step;    /* 0: one scale; 1: one per column */
    const float* bias;  /* per column, or NULL */
    int act;
    float fa, fb;
} q_float_out;

/* out[0..w) for columns n0.. of one row: the numpy kernel's arithmetic (a float32 product, then a float32 sum:
 * never contracted into one FMA, whose single rounding would differ) */
__attribute__((optimize("fp-contract=off"))) static void float_row(const int32_t* acc, long w, long n0,
                                                                   const q_float_out* o, float* out) {
    const float* bias = o->bias ? o->bias + n0 : NULL;
    if (o->scale_step) {
        const float* sc = o->scale + n0;
        for (long j = 0; j < w; j++) out[j] = (float)acc[j] * sc[j];
    } else {
        float sc = o->scale[0];
        for (long j = 0; j < w; j++) out[j] = (float)acc[j] * sc;
    }
    if (bias)
        for (long j = 0; j < w; j++) out[j] = out[j] + bias[j];
    if (o->act) nx_act_row(out, w, o->act, o->fa, o->fb);
}

/* d[0..K) = a[0..K) − z (int16) and their sum (wrapping as int32 does) */
static int32_t widen_row(long K, const void* a, int a_signed, int32_t z, int16_t* d) {
    const uint8_t* au = (const uint8_t*)a;
    const int8_t* as = (const int8_t*)a;
    uint32_t s = 0;
    long k = 0;
#if defined(__AVX2__)
    __m256i vs = _mm256_setzero_si256();
    const __m256i vz = _mm256_set1_epi16((int16_t)z), ones = _mm256_set1_epi16(1);
    for (; k + 16 <= K; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i*)((const uint8_t*)a + k));
        __m256i w = _mm256_sub_epi16(a_signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v), vz);
        _mm256_storeu_si256((__m256i*)(d + k), w);
        vs = _mm256_add_epi32(vs, _mm256_madd_epi16(w, ones));
    }
    int32_t lanes[8];
    _mm256_storeu_si256((__m256i*)lanes, vs);
    for (int j = 0; j < 8; j++) s += (uint32_t)lanes[j];
#endif
    for (; k < K; k++) {
        int32_t v = (a_signed ? (int32_t)as[k] : (int32_t)au[k]) - z;
        d[k] = (int16_t)v;
        s += (uint32_t)v;
    }
    return (int32_t)s;
}

/* one qgemm call's loops: A's rows prepared (widened to int16, or unsigned bytes for VNNI) with their sums, then
 * the (panel, row block) tiles */
struct qgemm_job {
    long M, N, K, rblocks;
    const void* a;
    int a_signed;
    const int32_t* az;
    long az_stride;
    const int32_t* bz;
    int32_t* y;
    const q_float_out* fo;
    float* yf;
    void* rows;  /* A's prepared rows: int16 (a − a_zero) pairs, or VNNI's unsigned byte quads */
    int32_t* rs; /* their sums */
    long lda;    /* elements of a prepared row */
    const void* bp;
    const int32_t* colsum;  /* VNNI: Σₖbs per column, then B's offset */
};

/* row i's columns [n0, n0 + w) of the result: the int32 sums, or their float32 epilogue */
static inline void store_row(const struct qgemm_job* job, const int32_t* acc, long i, long n0, long w) {
    if (job->fo) float_row(acc, w, n0, job->fo, job->yf + i * job->N + n0);
    else memcpy(job->y + i * job->N + n0, acc, sizeof(int32_t) * w);
}

static inline int32_t a_zero(const struct qgemm_job* job, long i) { return job->az ? job->az[i * job->az_stride] : 0; }

static void qgemm_widen_chunks(void* ctx, long lo, long hi, int who) {
    const struct qgemm_job* job = (const struct qgemm_job*)ctx;
    long K = job->K, lda = job->lda, esize = job->a_signed ? (long)sizeof(int8_t) : (long)sizeof(uint8_t);
    (void)who;
    for (long i = lo; i < hi; i++) {
        int16_t* d = (int16_t*)job->rows + i * lda;
        job->rs[i] = widen_row(K, (const char*)job->a + i * K * esize, job->a_signed, a_zero(job, i), d);
        if (K < lda) d[K] = 0;
    }
}

/* where tile pr = p * rblocks + rb of `rows` × `cols` tiles lies: panel p (outer: a panel stays in L1 while the row
 * blocks pass), rows [i0, i0 + mr), columns [n0, n0 + w) */
struct tile_at {
    long p, i0, mr, n0, w;
};

static struct tile_at tile_at(const struct qgemm_job* job, long pr, long rows, long cols) {
    struct tile_at t = {.p = pr / job->rblocks, .i0 = pr % job->rblocks * rows};
    t.mr = job->M - t.i0 < rows ? job->M - t.i0 : rows;
    t.n0 = t.p * cols;
    t.w = job->N - t.n0 < cols ? job->N - t.n0 : cols;
    return t;
}

/* A's row r of a tile (its last row again past mr: those sums are not stored) */
static long tile_row(struct tile_at t, long r) { return t.i0 + (r < t.mr ? r : t.mr - 1); }

static void qgemm_tile_chunks(void* ctx, long lo, long hi, int who) {
    const struct qgemm_job* job = (const struct qgemm_job*)ctx;
    long lda = job->lda, kp = lda / 2;
    (void)who;
    for (long pr = lo; pr < hi; pr++) {
        struct tile_at t = tile_at(job, pr, QMR, QNR);
        long i0 = t.i0, mr = t.mr, n0 = t.n0, w = t.w;
        const int16_t* rows[QMR];
        for (int r = 0; r < QMR; r++) rows[r] = (const int16_t*)job->rows + tile_row(t, r) * lda;
        int32_t acc[QMR][QNR];
        tile(kp, rows, (const int16_t*)job->bp + t.p * kp * 2 * QNR, acc);
        for (long r = 0; r < mr; r++) {
            if (job->bz) {
                uint32_t s = (uint32_t)job->rs[i0 + r];
                for (long j = 0; j < w; j++)
                    acc[r][j] = (int32_t)((uint32_t)acc[r][j] - (uint32_t)job->bz[n0 + j] * s);
            }
            store_row(job, acc[r], i0 + r, n0, w);
        }
    }
}

#ifdef __AVX512F__
/* VNNI: A's rows as unsigned bytes (int8 shifted by 128) padded to whole quads, and their sums */
static void vnni_rows_chunks(void* ctx, long lo, long hi, int who) {
    const struct qgemm_job* job = (const struct qgemm_job*)ctx;
    long K = job->K, K4 = job->lda;
    uint8_t flip = job->a_signed ? 0x80 : 0;
    (void)who;
    for (long i = lo; i < hi; i++) {
        const uint8_t* src = (const uint8_t*)job->a + i * K;
        uint8_t* d = (uint8_t*)job->rows + i * K4;
        uint32_t sum = 0;
        for (long k = 0; k < K; k++) {
            d[k] = src[k] ^ flip;
            sum += d[k];
        }
        for (long k = K; k < K4; k++) d[k] = 0;
        job->rs[i] = (int32_t)sum;
    }
}

static void vnni_tile_chunks(void* ctx, long lo, long hi, int who) {
    const struct qgemm_job* job = (const struct qgemm_job*)ctx;
    long K = job->K, lda = job->lda;
    const int32_t *bz = job->bz, *colsum = job->colsum;
    uint32_t ca = job->a_signed ? 128 : 0, cb = (uint32_t)colsum[job->N];
    (void)who;
    for (long pr = lo; pr < hi; pr++) {
        struct tile_at t = tile_at(job, pr, VMR, VNR);
        long i0 = t.i0, mr = t.mr, n0 = t.n0, w = t.w;
        const uint8_t* rows[VMR];
        for (int r = 0; r < VMR; r++) rows[r] = (const uint8_t*)job->rows + tile_row(t, r) * lda;
        int32_t acc[VMR][VNR];
        vnni_tile(lda / 4, rows, (const int8_t*)job->bp + t.p * vnni_panel_bytes(K), acc);
        for (long r = 0; r < mr; r++) {
            uint32_t alpha = ca + (uint32_t)a_zero(job, i0 + r), rs = (uint32_t)job->rs[i0 + r];
            for (long j = 0; j < w; j++) {
                uint32_t beta = (uint32_t)(bz ? bz[n0 + j] : 0) - cb;
                acc[r][j] = (int32_t)((uint32_t)acc[r][j] - alpha * (uint32_t)colsum[n0 + j] - beta * rs +
                                      (uint32_t)K * alpha * beta);
            }
            store_row(job, acc[r], i0 + r, n0, w);
        }
    }
}
#endif

/* (A − a_zero) · (B − b_zero) into int32 y, or (fo non-NULL) its float32 result into yf */
static int qgemm(long M, long N, long K, const void* a, int a_signed, const int32_t* az, long az_stride,
                 const int16_t* bp, const int32_t* bz, int32_t* y, const q_float_out* fo, float* yf, int threads) {
    if (M <= 0 || N <= 0) return 0;
    struct qgemm_job job = {.M = M, .N = N, .K = K, .a = a, .a_signed = a_signed, .az = az, .az_stride = az_stride,
                            .bz = bz, .y = y, .fo = fo, .yf = yf, .bp = bp};
    nx_body rows = qgemm_widen_chunks, tiles = qgemm_tile_chunks;
    long panels = (N + QNR - 1) / QNR, row_bytes;
    job.rblocks = (M + QMR - 1) / QMR;
    job.lda = 2 * pairs(K);
    row_bytes = job.lda * (long)sizeof(int16_t);
#ifdef __AVX512F__
    if (use_vnni()) {
        rows = vnni_rows_chunks, tiles = vnni_tile_chunks;
        panels = (N + VNR - 1) / VNR;
        job.rblocks = (M + VMR - 1) / VMR;
        job.lda = row_bytes = 4 * quads(K);
        job.colsum = (const int32_t*)((const int8_t*)bp + panels * vnni_panel_bytes(K));
    }
#endif
    job.rows = malloc(M * row_bytes);
    job.rs = (int32_t*)malloc(sizeof(int32_t) * M);
    if (job.rows && job.rs) {
        int nt = nx_team(threads, (double)M * N * K);
        nx_for(nt, M, rows, &job);
        nx_for(nt, panels * job.rblocks, tiles, &job);
    }
    int failed = !job.rows || !job.rs;
    free(job.rows);
    free(job.rs);
    return failed ? -1 : 0;
}

/* MatMulInteger: y (M×N int32, row-major) = (A − a_zero) · (B − b_zero) with A row-major M×K (uint8, or int8 when
 * a_signed), a_zero per row (az[i * az_stride]; az_stride 0: one value; az NULL: none), B packed by
 * nx_qgemm_pack_b, b_zero per column (bz[n], NULL: none). 0, or -1 when scratch could not be allocated. */
NX_EXPORT int nx_qgemm(long M, long N, long K, const void* a, int a_signed, const int32_t* az, long az_stride,
                       const int16_t* bp, const int32_t* bz, int32_t* y, int threads) {
    if (K <= 0 && M > 0 && N > 0) {  /* empty sums */
        memset(y, 0, sizeof(int32_t) * M * N);
        return 0;
    }
    return qgemm(M, N, K, a, a_signed, az, az_stride, bp, bz, y, NULL, NULL, threads);
}

/* MatMulIntegerToFloat / DynamicQuantizeMatMul after the quantization: yf (M×N float32) = act(float((A − a_zero) ·
 * (B − b_zero)) · scale + bias) (scale one value, scale_step 0, or one per column, 1; bias per column or NULL), the
 * arguments otherwise as nx_qgemm's; K ≥ 1. */
NX_EXPORT int nx_qgemm_f32(long M, long N, long K, const void* a, int a_signed, const int32_t* az, long az_stride,
                           const int16_t* bp, const int32_t* bz, const float* scale, long scale_step,
                           const float* bias, int act, float fa, float fb, float* yf, int threads) {
    NX_CHECK(K >= 1 && (scale_step == 0 || scale_step == 1) && act >= 0);
    q_float_out fo = {scale, scale_step, bias, act, fa, fb};
    return qgemm(M, N, K, a, a_signed, az, az_stride, bp, bz, NULL, &fo, yf, threads);
}

/* nx_dynamic_quantize's range pass: per participant the least and greatest value (starting from 0: the range always
 * includes 0) and whether a NaN or an infinity was seen, merged by the caller */
struct dq_range_job {
    const float* x;
    long i0;  /* where the scalar loop starts (past the AVX2 blocks) */
    float lo[NX_POOL_MAX], hi[NX_POOL_MAX];
    int bad[NX_POOL_MAX];
};

#if defined(__AVX2__)
/* blocks [lo, hi) of 8 values */
static void dq_range_blocks_chunks(void* ctx, long lo, long hi, int who) {
    struct dq_range_job* job = (struct dq_range_job*)ctx;
    const float* x = job->x;
    /* (a ?: reduction over floats does not vectorise without -ffinite-math-only) */
    __m256 vlo = _mm256_setzero_ps(), vhi = vlo, vbad = vlo;
    const __m256 big = _mm256_set1_ps(FLT_MAX), sign = _mm256_set1_ps(-0.f);
    for (long bk = lo; bk < hi; bk++) {
        __m256 v = _mm256_loadu_ps(x + bk * 8);
        vbad = _mm256_or_ps(vbad, _mm256_cmp_ps(_mm256_andnot_ps(sign, v), big, _CMP_NLE_UQ));
        vlo = _mm256_min_ps(vlo, v);
        vhi = _mm256_max_ps(vhi, v);
    }
    float l8[8], h8[8];
    _mm256_storeu_ps(l8, vlo);
    _mm256_storeu_ps(h8, vhi);
    float mn = job->lo[who], mx = job->hi[who];
    for (int j = 0; j < 8; j++) {
        mn = l8[j] < mn ? l8[j] : mn;
        mx = h8[j] > mx ? h8[j] : mx;
    }
    job->lo[who] = mn;
    job->hi[who] = mx;
    job->bad[who] |= _mm256_movemask_ps(vbad) != 0;
}
#endif

/* values i0 + [lo, hi) */
static void dq_range_chunks(void* ctx, long lo, long hi, int who) {
    struct dq_range_job* job = (struct dq_range_job*)ctx;
    const float* x = job->x;
    float mn = job->lo[who], mx = job->hi[who];
    int bad = job->bad[who];
    for (long i = job->i0 + lo; i < job->i0 + hi; i++) {
        float v = x[i];
        bad |= !(fabsf(v) <= FLT_MAX);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    job->lo[who] = mn;
    job->hi[who] = mx;
    job->bad[who] = bad;
}

/* nx_dynamic_quantize's output pass: y = clamp(rint(x / s), qlo, qhi) + zf */
struct dq_store_job {
    const float* x;
    uint8_t* y;
    float s, zf, qlo, qhi;
    long i0;  /* where the scalar loop starts (past the AVX2 blocks) */
};

#if defined(__AVX2__)
/* blocks [lo, hi) of 32 values */
static void dq_store_blocks_chunks(void* ctx, long lo, long hi, int who) {
    const struct dq_store_job* job = (const struct dq_store_job*)ctx;
    const float* x = job->x;
    uint8_t* y = job->y;
    __m256 vs = _mm256_set1_ps(job->s), vz = _mm256_set1_ps(job->zf), vlo = _mm256_set1_ps(job->qlo),
           vhi = _mm256_set1_ps(job->qhi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    (void)who;
    for (long bk = lo; bk < hi; bk++) {
        __m256i q[4];
        for (int u = 0; u < 4; u++) {
            __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + bk * 32 + u * 8), vs);
            v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
            v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
            q[u] = _mm256_cvtps_epi32(v);
        }
        __m256i w = _mm256_packus_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256((__m256i*)(y + bk * 32), _mm256_permutevar8x32_epi32(w, order));
    }
}
#endif

/* values i0 + [lo, hi) */
static void dq_store_chunks(void* ctx, long lo, long hi, int who) {
    const struct dq_store_job* job = (const struct dq_store_job*)ctx;
    const float* x = job->x;
    uint8_t* y = job->y;
    float s = job->s, zf = job->zf, qlo = job->qlo, qhi = job->qhi;
    (void)who;
    for (long i = job->i0 + lo; i < job->i0 + hi; i++) {
        float v = x[i] / s;
        v = v < qlo ? qlo : v > qhi ? qhi : v;
        y[i] = (uint8_t)(rintf(v) + zf);
    }
}

/* DynamicQuantizeLinear of n float32 values x into uint8 y, *scale, *zero. 0, or 1 when x holds a NaN or an
 * infinity (nothing written: the caller's reference kernel defines those). */
NX_EXPORT int nx_dynamic_quantize(long n, const float* x, uint8_t* y, float* scale, uint8_t* zero, int threads) {
    int nt = nx_team(threads, (double)n * NX_PASS_WORK);
    int tail_nt = nt;  /* threads for the scalar loop: 1 past AVX2 blocks (fewer values than a block) */
    struct dq_range_job rj = {.x = x, .i0 = 0};  /* lo = hi = 0, bad = 0 */
#if defined(__AVX2__)
    rj.i0 = n / 8 * 8;
    nx_for(nt, n / 8, dq_range_blocks_chunks, &rj);
    tail_nt = 1;
#endif
    nx_for(tail_nt, n - rj.i0, dq_range_chunks, &rj);
    float lo = 0.f, hi = 0.f;  /* the range always includes 0 */
    int bad = 0;
    for (int w = 0; w < NX_POOL_MAX; w++) {
        lo = rj.lo[w] < lo ? rj.lo[w] : lo;
        hi = rj.hi[w] > hi ? rj.hi[w] : hi;
        bad |= rj.bad[w];
    }
    if (bad) return 1;
    float s = hi == lo ? 1.f / 255.f : (hi - lo) / 255.f;
    float z0 = 0.f - lo / s;
    float zf = rintf(z0 < 0.f ? 0.f : z0 > 255.f ? 255.f : z0);
    *scale = s;
    *zero = (uint8_t)zf;
    /* clamp(rint(x / s) + z, 0, 255) == rint(clamp(x / s, −z, 255 − z)) + z: z is a whole number */
    struct dq_store_job sj = {.x = x, .y = y, .s = s, .zf = zf, .qlo = -zf, .qhi = 255.f - zf, .i0 = 0};
#if defined(__AVX2__)
    sj.i0 = n / 32 * 32;
    nx_for(nt, n / 32, dq_store_blocks_chunks, &sj);
#endif
    nx_for(tail_nt, n - sj.i0, dq_store_chunks, &sj);
    return 0;
}
