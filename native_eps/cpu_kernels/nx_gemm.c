/* Packed SGEMM for the native CPU EP: C = A·B (+ bias, activation) with B packed once (constant weights, either
 * orientation) into 32-column panels, A packed per call into 14-row panels, a 14×32 register-blocked micro-kernel
 * (AVX-512 where the build has it, plain vectorisable C otherwise), K blocked to keep a B panel in L1; output
 * tiles split over OpenMP threads. Row-major throughout. */
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "nx_math.h"
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#define MR 14
#define NR 32
#define KC 256
#define B_BLOCK_BYTES (1536L << 10)  /* packed B kept in L2 while row panels pass over it */

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

/* acc (MR×NR, row stride ld) = sum over kc of ap[k][i] * bp[k][j] (+ the tile already in acc when `add`) */
#ifdef __AVX512F__
static void micro(long kc, const float* ap, const float* bp, float* acc, long ld, int add) {
    __m512 c[MR][2];
    for (int i = 0; i < MR; i++) {
        c[i][0] = add ? _mm512_loadu_ps(acc + i * ld) : _mm512_setzero_ps();
        c[i][1] = add ? _mm512_loadu_ps(acc + i * ld + 16) : _mm512_setzero_ps();
    }
    for (long k = 0; k < kc; k++) {
        __m512 b0 = _mm512_loadu_ps(bp + k * NR), b1 = _mm512_loadu_ps(bp + k * NR + 16);
        const float* a = ap + k * MR;
        _mm_prefetch((const char*)(a + 8 * MR), _MM_HINT_T0);  /* A streams (weights from L3): ~8 steps ahead */
#pragma GCC unroll 14
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            c[i][0] = _mm512_fmadd_ps(ai, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(ai, b1, c[i][1]);
        }
    }
    for (int i = 0; i < MR; i++) {
        _mm512_storeu_ps(acc + i * ld, c[i][0]);
        _mm512_storeu_ps(acc + i * ld + 16, c[i][1]);
    }
}
#else
static void micro(long kc, const float* ap, const float* bp, float* acc, long ld, int add) {
    float c[MR * NR];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) c[i * NR + j] = add ? acc[i * ld + j] : 0.f;
    for (long k = 0; k < kc; k++)
        for (int i = 0; i < MR; i++) {
            float ai = ap[k * MR + i];
            for (int j = 0; j < NR; j++) c[i * NR + j] += ai * bp[k * NR + j];
        }
    for (int i = 0; i < MR; i++) memcpy(acc + i * ld, c + i * NR, NR * sizeof(float));
}
#endif

/* one MR×NR tile of C = act(A·B + bias[n] + row_bias[m] + res[m, n]): row panel ip of the packed A times one packed B panel, into rows [ip*MR, min(M, ip*MR + MR)) and columns
 * [n0, n0 + w) of C. A whole tile accumulates straight in C, an edge tile in a scratch tile copied out after. */
static void tile_product(long K, long ip, const float* ap, const float* bpanel, float* c, long ldc,
                         long M, long n0, long w, const float* bias, const float* row_bias, const float* res,
                         long ldr, int act, float alpha, float beta) {
    long i0 = ip * MR, i_end = M - i0 < MR ? M : i0 + MR;
    int whole = i_end - i0 == MR && w == NR;
    float tile[MR * NR];
    float* acc = whole ? c + i0 * ldc + n0 : tile;
    long ld = whole ? ldc : NR;
    for (long k0 = 0; k0 < K; k0 += KC) {
        long kc = K - k0 < KC ? K - k0 : KC;
        micro(kc, ap + ip * MR * K + k0 * MR, bpanel + k0 * NR, acc, ld, k0 > 0);
    }
    for (long i = i0; i < i_end; i++) {
        float* dst = c + i * ldc + n0;
        if (!whole) memcpy(dst, tile + (i - i0) * NR, w * sizeof(float));
        float rb = row_bias ? row_bias[i] : 0.f;
        if (bias) for (long j = 0; j < w; j++) dst[j] += bias[n0 + j] + rb;
        else if (row_bias) for (long j = 0; j < w; j++) dst[j] += rb;
        if (res) {
            const float* r = res + i * ldr + n0;
            for (long j = 0; j < w; j++) dst[j] += r[j];
        }
        if (act) nx_act_row(dst, w, act, alpha, beta);
    }
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
 * A: packed `ap` (nx_gemm_pack_a) or raw `a` (row stride lda, packed here); B: packed `bp` (nx_gemm_pack_b) or
 * raw `b` (K×N, row stride ldb, packed here). bias, row_bias and
 * res (row stride ldr) may be NULL. Returns 0, or -1 when scratch could not be allocated. */
NX_EXPORT long nx_gemm_scratch_size(long M, long N, long K, int a_raw, int b_raw) {
    return (a_raw ? nx_gemm_packed_a_size(M, K) : 0) + (b_raw ? nx_gemm_packed_size(K, N) : 0);
}

NX_EXPORT int nx_gemm(long M, long N, long K, const float* a, long lda, const float* ap, const float* b, long ldb,
                      const float* bp, float* c, long ldc, const float* bias, const float* row_bias, const float* res,
                      long ldr, int act, float alpha, float beta, float* scratch, int threads) {
    long panels = (N + NR - 1) / NR, mpanels = (M + MR - 1) / MR;
    long kblocks = (K + KC - 1) / KC;
    int nt = threads > 1 && M * N * K >= (1L << 20) ? threads : 1;
    float* mine = scratch ? NULL : malloc(sizeof(float) * nx_gemm_scratch_size(M, N, K, !ap, !bp) + 64);
    if (!scratch && !mine) return -1;
    float* a_own = ap ? NULL : (scratch ? scratch : mine);
    float* b_own = bp ? NULL : (scratch ? scratch : mine) + (ap ? 0 : nx_gemm_packed_a_size(M, K));
    /* tiles go B block by B block (as many packed B panels as fit in half of L2), row panel by row panel within a
     * block: a block is read from memory once and re-read from L2, each A panel once per block; a B that fits
     * whole is one block (A streams once: weights), a B panel larger than the budget is a block of its own */
    long nb = B_BLOCK_BYTES / (K * NR * (long)sizeof(float));
    nb = nb < 1 ? 1 : nb > panels ? panels : nb;
#pragma omp parallel num_threads(nt)
    {
        if (a_own) {
            for (long kb = 0; kb < kblocks; kb++) {
                long k0 = kb * KC, kc = K - k0 < KC ? K - k0 : KC;
#pragma omp for schedule(static)
                for (long ip = 0; ip < mpanels; ip++)
                    pack_a(a, lda, M, ip * MR, k0, kc, a_own + ip * MR * K + k0 * MR);
            }
        }
        if (b_own) {
#pragma omp for schedule(static)
            for (long jp = 0; jp < panels; jp++) {
                long n0 = jp * NR, w = N - n0 < NR ? N - n0 : NR;
                for (long k = 0; k < K; k++) {
                    const float* src = b + k * ldb + n0;
                    float* d = b_own + jp * K * NR + k * NR;
                    for (long j = 0; j < w; j++) d[j] = src[j];
                    for (long j = w; j < NR; j++) d[j] = 0.f;
                }
            }
        }
        const float* apk = ap ? ap : a_own;
        const float* bpk = bp ? bp : b_own;
#pragma omp for schedule(static)
        for (long t = 0; t < mpanels * panels; t++) {
            long jb = t / (mpanels * nb), r = t - jb * mpanels * nb;
            long pb = panels - jb * nb < nb ? panels - jb * nb : nb;  /* panels in this (possibly last) block */
            long ip = r / pb, jp = jb * nb + r % pb;
            long n0 = jp * NR, w = N - n0 < NR ? N - n0 : NR;
            tile_product(K, ip, apk, bpk + jp * K * NR, c, ldc, M, n0, w, bias, row_bias, res, ldr, act,
                         alpha, beta);
        }
    }
    free(mine);
    return 0;
}

/* one 32-column B panel of an image's im2col matrix: panel[k][j] for k = (c*KH + kh)*KW + kw and output position
 * p = jp*NR + j (zeros for padding and for positions past OH*OW) */
static void im2col_panel(long C, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW, long PT,
                         long PL, long OH, long OW, const float* x, long jp, float* panel) {
    long P = OH * OW, K = C * KH * KW;
    long q_oh[NR], q_ow[NR], q_j[NR], q_len[NR], nq = 0;  /* the panel's positions as runs along output rows */
    for (long p = jp * NR; p < P && p < (jp + 1) * NR;) {
        long oh = p / OW, ow = p % OW, len = OW - ow;
        if (len > (jp + 1) * NR - p) len = (jp + 1) * NR - p;
        if (len > P - p) len = P - p;
        q_oh[nq] = oh; q_ow[nq] = ow; q_j[nq] = p - jp * NR; q_len[nq] = len; nq++;
        p += len;
    }
    long used = nq ? q_j[nq - 1] + q_len[nq - 1] : 0;
    for (long r = 0; r < K; r++) {
        long c = r / (KH * KW), kh = (r / KW) % KH, kw = r % KW;
        long off_w = kw * DW - PL;
        long lo = off_w >= 0 ? 0 : (-off_w + SW - 1) / SW;   /* outputs whose input column is inside the image */
        long hi = W - off_w <= 0 ? 0 : (W - off_w + SW - 1) / SW;
        if (hi > OW) hi = OW;
        if (lo > hi) lo = hi;
        float* d0 = panel + r * NR;
        for (long q = 0; q < nq; q++) {
            float* d = d0 + q_j[q];
            long ih = q_oh[q] * SH - PT + kh * DH, ow = q_ow[q], seg = q_len[q];
            long a = lo - ow, b = hi - ow;
            if (ih < 0 || ih >= H || a >= seg || b <= 0) {
                for (long s = 0; s < seg; s++) d[s] = 0.f;
                continue;
            }
            if (a < 0) a = 0;
            if (b > seg) b = seg;
            const float* src = x + (c * H + ih) * W + off_w + ow * SW;
            for (long s = 0; s < a; s++) d[s] = 0.f;
            if (SW == 1) for (long s = a; s < b; s++) d[s] = src[s];
            else for (long s = a; s < b; s++) d[s] = src[s * SW];
            for (long s = b; s < seg; s++) d[s] = 0.f;
        }
        for (long j = used; j < NR; j++) d0[j] = 0.f;
    }
}

/* one image's convolution as an implicit GEMM: y (M×OH*OW) = act(W·im2col(x) + row_bias + res), each 32-position
 * im2col panel built in a per-thread buffer (cache-resident) right before its tiles run, so the K×P column matrix
 * never exists; the weights come packed (nx_gemm_pack_a). `scratch`: K*32*threads floats (or NULL: allocated
 * here). Returns 0, or -1 when that allocation failed. */
NX_EXPORT int nx_conv_gemm(long C, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW, long PT,
                           long PL, long OH, long OW, const float* x, long M, const float* ap, float* y,
                           const float* row_bias, const float* res, int act, float alpha, float beta, float* scratch,
                           int threads) {
    long P = OH * OW, K = C * KH * KW, panels = (P + NR - 1) / NR, mpanels = (M + MR - 1) / MR;
    int nt = threads > 1 && M * P * K >= (1L << 20) ? threads : 1;
    float* mine = scratch ? NULL : malloc(sizeof(float) * K * NR * nt + 64);
    float* bufs = scratch ? scratch : mine;
    if (!bufs) return -1;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (long jp = 0; jp < panels; jp++) {
        float* panel = bufs + K * NR * omp_get_thread_num();
        im2col_panel(C, H, W, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW, x, jp, panel);
        long n0 = jp * NR, w = P - n0 < NR ? P - n0 : NR;
        for (long ip = 0; ip < mpanels; ip++)
            tile_product(K, ip, ap, panel, y, P, M, n0, w, NULL, row_bias, res, P, act, alpha, beta);
    }
    free(mine);
    return 0;
}
