/* Scaled dot-product attention for the native CPU EP: (batch, head) pairs split over the pool's threads
 * (nx_pool.h); per head Kᵀ and V are packed once (straight from their strided columns), then blocks of query rows
 * go through the scores Q Kᵀ, the softmax with scale and additive bias on each score row, and the output P V — nx_gemm
 * calls on one thread, Q read in place through its row stride — so a block's scores stay in cache between the three
 * (Whisper's 500 × 500 scores per head had made a round trip through memory). Rows are independent in each step:
 * the block size changes no result. */
#include <stdlib.h>
#include "nx_math.h"
#include "nx_pool.h"

int nx_gemm(long M, long N, long K, const float* a, long lda, const float* ap, const float* b, long ldb,
            const float* bp, float* c, long ldc, const float* bias, const float* row_bias, const float* res, long ldr,
            int act, float alpha, float beta, float* scratch, int threads);
long nx_gemm_packed_size(long K, long N);
long nx_gemm_scratch_size(long M, long N, long K, int a_raw, int b_raw);
void nx_gemm_pack_b(long K, long N, const float* b, long sk, long sn, float* bp);

#define SCORE_FLOATS (64L << 10)  /* a block's scores: 256 KB */

/* query rows per block: a multiple of the GEMM tile's rows whose T scores fit SCORE_FLOATS, at least one tile */
static long row_block(long S, long T) {
    long rb = SCORE_FLOATS / T / 16 * 16;
    rb = rb < 16 ? 16 : rb;
    return rb < S ? rb : S;
}

/* heads bn = b * N + n, each participant with its own scratch */
struct attention_job {
    long S, T, N, H, HV, kt_size, vp_size, rb;
    const float* q;
    const float* k;
    const float* v;
    const float* bias;
    int bias_b, bias_h;
    float scale;
    float* out;
    int failed;
    struct nx_scratch buf;  /* Kᵀ, V, a block's scores, nx_gemm's scratch */
};

static void attention_chunks(void* ctx, long lo, long hi, int who) {
    struct attention_job* job = (struct attention_job*)ctx;
    long S = job->S, T = job->T, N = job->N, H = job->H, HV = job->HV, kt_size = job->kt_size, rb = job->rb;
    const float* q = job->q;
    const float* k = job->k;
    const float* v = job->v;
    const float* bias = job->bias;
    int bias_b = job->bias_b, bias_h = job->bias_h;
    float scale = job->scale;
    float* out = job->out;
    float* buf = nx_scratch(&job->buf, who);
    if (!buf) {
        __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (long bn = lo; bn < hi; bn++) {
        long b = bn / N, n = bn % N;
        float *kt = buf, *vp = kt + kt_size, *p = vp + job->vp_size, *scratch = p + rb * T;
        int failed = 0;
        /* Kᵀ (H × T): element (d, j) at k[(b*T + j)*N*H + n*H + d];
         * V (T × HV): element (j, d) at v[(b*T + j)*N*HV + n*HV + d] */
        nx_gemm_pack_b(H, T, k + b * T * N * H + n * H, 1, N * H, kt);
        nx_gemm_pack_b(T, HV, v + b * T * N * HV + n * HV, N * HV, 1, vp);
        const float* bh = bias ? bias + ((bias_b ? b : 0) * (bias_h ? N : 1) + (bias_h ? n : 0)) * S * T : NULL;
        for (long i0 = 0; i0 < S && !failed; i0 += rb) {
            long rows = S - i0 < rb ? S - i0 : rb;
            failed |= nx_gemm(rows, T, H, q + (b * S + i0) * N * H + n * H, N * H, NULL, NULL, 0, kt, p, T, NULL,
                              NULL, NULL, 0, 0, 0.f, 0.f, scratch, 1) != 0;
            for (long i = 0; i < rows; i++)
                nx_softmax_row(p + i * T, p + i * T, T, scale, bh ? bh + (i0 + i) * T : NULL, 0);
            failed |= nx_gemm(rows, HV, T, p, T, NULL, NULL, 0, vp, out + (b * S + i0) * N * HV + n * HV, N * HV,
                              NULL, NULL, NULL, 0, 0, 0.f, 0.f, scratch, 1) != 0;
        }
        if (failed) __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
    }
}

/* out (B, S, N*HV) = softmax(scale · Q Kᵀ + bias) V per head; q (B, S, N*H), k (B, T, N*H), v (B, T, N*HV) row-major;
 * bias (or NULL): (B or 1, N or 1, S, T) as bias_b / bias_h say. Returns 0, or -1 when scratch could not be had. */
NX_EXPORT int nx_attention(long B, long S, long T, long N, long H, long HV, const float* q, const float* k,
                           const float* v, const float* bias, int bias_b, int bias_h, float scale, float* out,
                           int threads) {
    NX_CHECK(B >= 1 && S >= 1 && T >= 1 && N >= 1 && H >= 1 && HV >= 1);
    int nt = B * N > 1 ? nx_team(threads, (double)B * N * S * T * (H + HV)) : 1;
    long kt_size = nx_gemm_packed_size(H, T), vp_size = nx_gemm_packed_size(T, HV), rb = row_block(S, T);
    long g1 = nx_gemm_scratch_size(rb, T, H, 1, 0), g2 = nx_gemm_scratch_size(rb, HV, T, 1, 0);
    long per_thread = kt_size + vp_size + rb * T + (g1 > g2 ? g1 : g2);
    struct attention_job job = {.S = S, .T = T, .N = N, .H = H, .HV = HV, .kt_size = kt_size, .vp_size = vp_size,
                                .rb = rb, .q = q, .k = k, .v = v, .bias = bias, .bias_b = bias_b, .bias_h = bias_h,
                                .scale = scale, .out = out, .failed = 0, .buf = {.bytes = sizeof(float) * per_thread}};
    nx_for(nt, B * N, attention_chunks, &job);
    nx_scratch_free(&job.buf);
    return job.failed ? -1 : 0;
}
