/* Element-wise and row kernels: activations with bias / residual epilogues, LayerNorm (with skip and bias),
 * softmax. Rows (or flat chunks) are split over the pool's threads (nx_pool.h); every loop body vectorises. */
#include <stddef.h>
#include "nx_math.h"
#include "nx_pool.h"

#define CHUNK 16384  /* flat element chunk per thread task */

/* y[0:n] = act(y[0:n]) in place; one loop per activation so the switch stays out of the vector loop */
#define ACT_LOOP(expr) for (long i = 0; i < n; i++) { float v = y[i]; y[i] = (expr); } break;
void nx_act_row(float* restrict y, long n, int act, float a, float b) {
    switch (act) {
    case NX_ACT_RELU: ACT_LOOP(v < 0.f ? 0.f : v)  /* NaN stays NaN */
    case NX_ACT_LEAKY: ACT_LOOP(v < 0.f ? v * a : v)
    case NX_ACT_SIGMOID: ACT_LOOP(nx_sigmoid(v))
    case NX_ACT_TANH: ACT_LOOP(nx_tanh(v))
    case NX_ACT_HARDSIGMOID: ACT_LOOP(nx_unit_clamp(fmaf(v, a, b)))
    case NX_ACT_HARDSWISH: ACT_LOOP(nx_hardswish(v))
    case NX_ACT_CLIP: ACT_LOOP(v < a ? a : (v > b ? b : v))
    case NX_ACT_SQRT: ACT_LOOP(sqrtf(v))  /* (vsqrtps: correctly rounded, as numpy's) */
    case NX_ACT_ERF: ACT_LOOP(nx_erf(v))
    case NX_ACT_LOG: ACT_LOOP(logf(v))  /* (glibc's: within an ulp of numpy's; -inf at ±0, NaN below 0) */
    case NX_ACT_GELU: ACT_LOOP(nx_gelu(v))
    case NX_ACT_GELU_TANH: ACT_LOOP(nx_gelu_tanh(v))
    case NX_ACT_SWISH: ACT_LOOP(v * nx_sigmoid(v * a))  /* (QuickGelu: x · sigmoid(alpha · x)) */
    default: break;
    }
}

static int use_threads(int threads, long elements) { return nx_team(threads, (double)elements * NX_PASS_WORK); }

struct act_job {
    long n;
    const float* x;
    float* y;
    const float* residual;
    int act;
    float a, b;
};

/* flat chunks c0 .. c1 - 1 of CHUNK elements */
static void act_chunks(void* ctx, long c0, long c1, int who) {
    (void)who;
    const struct act_job* job = ctx;
    long n = job->n;
    const float *x = job->x, *residual = job->residual;
    float* y = job->y;
    int act = job->act;
    float a = job->a, b = job->b;
    for (long c = c0; c < c1; c++) {
        long lo = c * CHUNK, len = n - lo < CHUNK ? n - lo : CHUNK;
        const float* xs = x + lo;
        float* ys = y + lo;
        if (residual) {
            const float* rs = residual + lo;
            for (long i = 0; i < len; i++) ys[i] = xs[i] + rs[i];
        } else if (ys != xs) {
            for (long i = 0; i < len; i++) ys[i] = xs[i];
        }
        nx_act_row(ys, len, act, a, b);
    }
}

/* y = act(x + residual) over n flat elements (residual may be NULL; y may alias x) */
NX_EXPORT void nx_act(long n, const float* x, float* y, const float* residual, int act, float a, float b,
                      int threads) {
    NX_CHECK(n >= 0 && act >= 0);
    long chunks = (n + CHUNK - 1) / CHUNK;
    struct act_job job = {.n = n, .x = x, .y = y, .residual = residual, .act = act, .a = a, .b = b};
    nx_for(use_threads(threads, n), chunks, act_chunks, &job);
}

struct bias_act_job {
    long cols;
    const float* x;
    float* y;
    const float* bias;
    int act;
    float a, b;
};

static void bias_act_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct bias_act_job* job = ctx;
    long cols = job->cols;
    const float *x = job->x, *bias = job->bias;
    float* y = job->y;
    int act = job->act;
    float a = job->a, b = job->b;
    for (long r = lo; r < hi; r++) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        for (long c = 0; c < cols; c++) yr[c] = xr[c] + bias[c];
        nx_act_row(yr, cols, act, a, b);
    }
}

/* y[r, c] = act(x[r, c] + bias[c]) (BiasGelu, FastGelu); y may alias x */
NX_EXPORT void nx_bias_act(long rows, long cols, const float* x, float* y, const float* bias, int act, float a,
                           float b, int threads) {
    NX_CHECK(rows >= 0 && cols >= 1 && act >= 0);
    struct bias_act_job job = {.cols = cols, .x = x, .y = y, .bias = bias, .act = act, .a = a, .b = b};
    nx_for(use_threads(threads, rows * cols), rows, bias_act_chunks, &job);
}

struct layernorm_job {
    long cols;
    const float *x, *skip, *bias, *gamma, *beta;
    float eps;
    float *y, *sum_out, *mean_out, *inv_std_out;
};

static void layernorm_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct layernorm_job* job = ctx;
    long cols = job->cols;
    const float *x = job->x, *skip = job->skip, *bias = job->bias, *gamma = job->gamma, *beta = job->beta;
    float eps = job->eps;
    float *y = job->y, *sum_out = job->sum_out, *mean_out = job->mean_out, *inv_std_out = job->inv_std_out;
    for (long r = lo; r < hi; r++) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        const float* v = xr;
        if (skip || bias) {
            float* s = sum_out ? sum_out + r * cols : yr;
            const float* sk = skip ? skip + r * cols : NULL;
            if (sk && bias) for (long c = 0; c < cols; c++) s[c] = xr[c] + sk[c] + bias[c];
            else if (sk) for (long c = 0; c < cols; c++) s[c] = xr[c] + sk[c];
            else for (long c = 0; c < cols; c++) s[c] = xr[c] + bias[c];
            v = s;
        } else if (sum_out) {
            for (long c = 0; c < cols; c++) sum_out[r * cols + c] = xr[c];
        }
        float mean = nx_sum(v, cols) / (float)cols;
        float var = nx_sum_sq_dev(v, cols, mean) / (float)cols;
        float inv = 1.f / sqrtf(var + eps);
        if (beta) for (long c = 0; c < cols; c++) yr[c] = (v[c] - mean) * inv * gamma[c] + beta[c];
        else for (long c = 0; c < cols; c++) yr[c] = (v[c] - mean) * inv * gamma[c];
        if (mean_out) mean_out[r] = mean;
        if (inv_std_out) inv_std_out[r] = inv;
    }
}

/* LayerNorm over rows of `cols`: v = x + skip + bias (skip / bias may be NULL; v stored in sum_out if given),
 * y = (v - mean) / sqrt(var + eps) * gamma + beta (beta may be NULL); mean / inv_std per row if asked. */
NX_EXPORT void nx_layernorm(long rows, long cols, const float* x, const float* skip, const float* bias,
                            const float* gamma, const float* beta, float eps, float* y, float* sum_out,
                            float* mean_out, float* inv_std_out, int threads) {
    NX_CHECK(rows >= 0 && cols >= 1);
    struct layernorm_job job = {.cols = cols, .x = x, .skip = skip, .bias = bias, .gamma = gamma, .beta = beta,
                                .eps = eps, .y = y, .sum_out = sum_out, .mean_out = mean_out,
                                .inv_std_out = inv_std_out};
    nx_for(use_threads(threads, rows * cols), rows, layernorm_chunks, &job);
}

struct softmax_job {
    long cols;
    const float* x;
    float* y;
    float scale;
    const float* bias;
    long heads, seq;
    int bias_b, bias_h, log;
};

static void softmax_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct softmax_job* job = ctx;
    long cols = job->cols, heads = job->heads, seq = job->seq;
    const float *x = job->x, *bias = job->bias;
    float* y = job->y;
    float scale = job->scale;
    int bias_b = job->bias_b, bias_h = job->bias_h, log = job->log;
    for (long r = lo; r < hi; r++) {
        const float* br = NULL;
        if (bias) {
            long b = r / (heads * seq), h = (r / seq) % heads, q = r % seq;
            br = bias + (((bias_b ? b : 0) * (bias_h ? heads : 1) + (bias_h ? h : 0)) * seq + q) * cols;
        }
        nx_softmax_row(x + r * cols, y + r * cols, cols, scale, br, log);
    }
}

/* y = softmax(scale * x + bias) along rows of `cols`, or log-softmax with `log` (then y must not alias x and bias
 * must be NULL); y may alias x otherwise. `bias` (or NULL) is
 * an attention bias: rows are (batch, head, query) with `heads` heads of `seq` queries, and the bias has one row
 * per query, per head only if bias_h, per batch only if bias_b. */
NX_EXPORT void nx_softmax(long rows, long cols, const float* x, float* y, float scale, const float* bias, long heads,
                          long seq, int bias_b, int bias_h, int log, int threads) {
    NX_CHECK(rows >= 0 && cols >= 1 && (!bias || (heads >= 1 && seq >= 1 && rows % (heads * seq) == 0)));
    struct softmax_job job = {.cols = cols, .x = x, .y = y, .scale = scale, .bias = bias, .heads = heads,
                              .seq = seq, .bias_b = bias_b, .bias_h = bias_h, .log = log};
    nx_for(use_threads(threads, rows * cols), rows, softmax_chunks, &job);
}

/* y = a op b over a (outer, mid, inner) with b (mid,) broadcast along outer and inner (b_first: y = b op a);
 * op 0 add, 1 sub, 2 mul, 3 div, 4 max, 5 min. A full-shape b is mid = everything, inner = 1, outer = 1 with b_full
 * set. Max / min of (p, q) are numpy's maximum / minimum: p where p is NaN or wins, else q (q on a tie of ±0). */
#define BIN_LOOPS(OP)                                                                                         \
    if (b_full) {                                                                                             \
        for (long i = 0; i < len; i++) { float u = a[lo + i], v = b[lo + i]; y[lo + i] = OP; }                \
    } else if (mid == 1) {                                                                                    \
        float v = b[0];                                                                                       \
        for (long i = 0; i < len; i++) { float u = a[lo + i]; y[lo + i] = OP; }                               \
    } else if (inner == 1) {                                                                                  \
        for (long r = lo / mid; r * mid < lo + len; r++) {                                                    \
            const float* ar = a + r * mid; float* yr = y + r * mid;                                           \
            for (long m = 0; m < mid; m++) { float u = ar[m], v = b[m]; yr[m] = OP; }                         \
        }                                                                                                     \
    } else {                                                                                                  \
        for (long r = lo / inner; r * inner < lo + len; r++) {                                                \
            const float* ar = a + r * inner; float* yr = y + r * inner; float v = b[r % mid];                 \
            for (long k = 0; k < inner; k++) { float u = ar[k]; yr[k] = OP; }                                 \
        }                                                                                                     \
    }

struct binary_job {
    int op, b_first;
    long mid, inner;
    int b_full;
    const float *a, *b;
    float* y;
    long n, per;
};

/* chunks c0 .. c1 - 1 of `per` elements */
static void binary_chunks(void* ctx, long c0, long c1, int who) {
    (void)who;
    const struct binary_job* job = ctx;
    int op = job->op, b_first = job->b_first, b_full = job->b_full;
    long mid = job->mid, inner = job->inner, n = job->n, per = job->per;
    const float *a = job->a, *b = job->b;
    float* y = job->y;
    for (long c = c0; c < c1; c++) {
        long lo = c * per, len = n - lo < per ? n - lo : per;
        switch (op * 2 + (b_first ? 1 : 0)) {
        case 0: case 1: BIN_LOOPS(u + v) break;
        case 2: BIN_LOOPS(u - v) break;
        case 3: BIN_LOOPS(v - u) break;
        case 4: case 5: BIN_LOOPS(u * v) break;
        case 6: BIN_LOOPS(u / v) break;
        case 7: BIN_LOOPS(v / u) break;
        case 8: BIN_LOOPS(u != u || u > v ? u : v) break;
        case 9: BIN_LOOPS(v != v || v > u ? v : u) break;
        case 10: BIN_LOOPS(u != u || u < v ? u : v) break;
        case 11: BIN_LOOPS(v != v || v < u ? v : u) break;
        default: break;
        }
    }
}

NX_EXPORT void nx_binary(int op, int b_first, long outer, long mid, long inner, int b_full, const float* a,
                         const float* b, float* y, int threads) {
    NX_CHECK(op >= 0 && op <= 5 && outer >= 0 && mid >= 0 && inner >= 0);
    long n = outer * mid * inner;
    long step = inner == 1 && !b_full ? mid : inner;            /* chunks hold whole broadcast rows */
    long per = step >= CHUNK ? step : (CHUNK / step) * step;
    if (b_full || mid == 1) per = CHUNK;  /* flat: any chunking works */
    long chunks = (n + per - 1) / per;
    struct binary_job job = {.op = op, .b_first = b_first, .mid = mid, .inner = inner, .b_full = b_full, .a = a,
                             .b = b, .y = y, .n = n, .per = per};
    nx_for(use_threads(threads, n), chunks, binary_chunks, &job);
}

struct channel_affine_job {
    long c, hw;
    const float *x, *scale, *shift;
    float* y;
};

static void channel_affine_chunks(void* ctx, long lo, long hi, int who) {
    (void)who;
    const struct channel_affine_job* job = ctx;
    long c = job->c, hw = job->hw;
    const float *x = job->x, *scale = job->scale, *shift = job->shift;
    float* y = job->y;
    for (long p = lo; p < hi; p++) {
        const float* xs = x + p * hw;
        float* ys = y + p * hw;
        float a = scale[p % c], b = shift[p % c];
        for (long i = 0; i < hw; i++) ys[i] = xs[i] * a + b;
    }
}

/* y = x * scale[c] + shift[c] over N×C planes of hw values (inference BatchNormalization: one pass) */
NX_EXPORT void nx_channel_affine(long n, long c, long hw, const float* x, const float* scale, const float* shift,
                                 float* y, int threads) {
    NX_CHECK(n >= 0 && c >= 0 && hw >= 0);
    struct channel_affine_job job = {.c = c, .hw = hw, .x = x, .scale = scale, .shift = shift, .y = y};
    nx_for(use_threads(threads, n * c * hw), n * c, channel_affine_chunks, &job);
}
