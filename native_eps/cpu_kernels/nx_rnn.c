/* The LSTM recurrence (ONNX gate order i, o, f, c; sigmoid / tanh / tanh, no peepholes, clip or coupled gate) over
 * input projections computed beforehand: per step, z = xw[t] + h @ Rᵀ accumulated row by row of Rᵀ (vectorised over
 * the 4H gate columns), the gates, c and h, in place. The directions run on separate threads when there are two. */
#include <stdlib.h>
#include <string.h>
#include "nx_math.h"
#include "nx_pool.h"

/* the recurrence of direction d, one per chunk index */
struct lstm_job {
    long T, B, H, nd, G;
    const float* xw;
    const float* rt;
    const float* h0;
    const float* c0;
    float* hs;
    float* hT;
    float* cT;
    int failed;
};

static void lstm_chunks(void* ctx, long lo, long hi, int who) {
    struct lstm_job* job = (struct lstm_job*)ctx;
    long T = job->T, B = job->B, H = job->H, nd = job->nd, G = job->G;
    const float* xw = job->xw;
    const float* rt = job->rt;
    const float* h0 = job->h0;
    const float* c0 = job->c0;
    float* hs = job->hs;
    float* hT = job->hT;
    float* cT = job->cT;
    (void)who;
    for (long d = lo; d < hi; d++) {
        float* z = malloc(G * sizeof(float));
        if (!z) { __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED); continue; }
        float* c = cT + d * B * H;
        float* hl = hT + d * B * H;
        if (c0) memcpy(c, c0 + d * B * H, B * H * sizeof(float)); else memset(c, 0, B * H * sizeof(float));
        if (h0) memcpy(hl, h0 + d * B * H, B * H * sizeof(float)); else memset(hl, 0, B * H * sizeof(float));
        const float* r = rt + d * H * G;
        for (long t = 0; t < T; t++) {
            for (long b = 0; b < B; b++) {
                const float* hp = t ? hs + (((t - 1) * nd + d) * B + b) * H : hl + b * H;
                const float* x = xw + ((d * T + t) * B + b) * G;
                for (long j = 0; j < G; j++) z[j] = x[j];
                for (long k = 0; k < H; k++) {
                    float hk = hp[k];
                    const float* rk = r + k * G;
                    for (long j = 0; j < G; j++) z[j] = fmaf(hk, rk[j], z[j]);
                }
                float* cb = c + b * H;
                float* hn = hs + ((t * nd + d) * B + b) * H;
                for (long j = 0; j < H; j++) {
                    float ig = nx_sigmoid(z[j]), og = nx_sigmoid(z[H + j]), fg = nx_sigmoid(z[2 * H + j]);
                    float cv = fg * cb[j] + ig * nx_tanh(z[3 * H + j]);
                    cb[j] = cv;
                    hn[j] = og * nx_tanh(cv);
                }
            }
        }
        if (T)
            for (long b = 0; b < B; b++)
                memcpy(hl + b * H, hs + (((T - 1) * nd + d) * B + b) * H, H * sizeof(float));
        free(z);
    }
}

/* xw: [nd][T][B][4H] (each direction's steps in the order it processes them, both biases included); rt: [nd][H][4H]
 * (Rᵀ per direction); h0, c0: [nd][B][H] or NULL (zeros); hs: [T][nd][B][H], each step's h in processing order;
 * hT, cT: [nd][B][H], the last step's h and c (h0 / c0 when T is 0). Returns 0, or -1 without scratch memory. */
NX_EXPORT int nx_lstm(long T, long B, long H, long nd, const float* xw, const float* rt, const float* h0,
                      const float* c0, float* hs, float* hT, float* cT, int threads) {
    NX_CHECK(T >= 0 && B >= 0 && H >= 1 && (nd == 1 || nd == 2));
    long G = 4 * H;
    int nt = nd == 2 && nx_team(threads, (double)T * B * G * H * 2) > 1 ? 2 : 1;
    struct lstm_job job = {.T = T, .B = B, .H = H, .nd = nd, .G = G, .xw = xw, .rt = rt, .h0 = h0, .c0 = c0,
                           .hs = hs, .hT = hT, .cT = cT, .failed = 0};
    nx_for(nt, nd, lstm_chunks, &job);
    return job.failed ? -1 : 0;
}
