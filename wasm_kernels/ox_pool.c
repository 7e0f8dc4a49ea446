/* Pooling and nearest upsampling (NCHW float32): 2-D max / average pooling with pads, strides, dilations, ceil-mode
 * windows and count_include_pad, global max / average pooling, nearest upsampling by integer factors.
 * Exports ox_pool2d, ox_global_pool, ox_upsample_nearest. */
#include "ox_common.h"
#include "ox_kernels.h"

#define OX_NEG_INF (-__builtin_inff())

/* taps of a 1-D window at output o that land in [lo, hi) of the unpadded axis */
static int taps_in(int o, int S, int K, int D, int P, int lo, int hi) {
    int n = 0;
    for (int k = 0; k < K; k++) {
        int i = o * S - P + k * D;
        n += (i >= lo && i < hi);
    }
    return n;
}

OX_EXPORT int ox_pool2d_scratch_floats(int OH, int OW, int KH, int KW, int SH, int SW, int DH, int DW) {
    int HP = (OH - 1) * SH + (KH - 1) * DH + 1;
    int WP = (OW + 3) / 4 * 4 * SW + (KW - 1) * DW + 4;
    return HP * WP + OH + OW + 16;
}

/* is_max: Y = max over the window (pads never win); else Y = sum / count where count is the number of taps on
 * the input, or (count_include_pad) on the input plus the explicit pads PT..PB / PL..PR. X: NC planes H x W. */
OX_EXPORT void ox_pool2d(int NC, int H, int W, int KH, int KW, int SH, int SW, int DH, int DW,
                         int PT, int PL, int PB, int PR, int OH, int OW, int is_max, int count_include_pad,
                         const float* X, float* Y, float* scratch) {
    int HP = (OH - 1) * SH + (KH - 1) * DH + 1;
    int WP = (OW + 3) / 4 * 4 * SW + (KW - 1) * DW + 4;
    float* pad = scratch;
    float* hcnt = scratch + (long)HP * WP;
    float* wcnt = hcnt + OH;
    float fill = is_max ? OX_NEG_INF : 0.f;
    if (!is_max) {
        int hlo = count_include_pad ? -PT : 0, hhi = count_include_pad ? H + PB : H;
        int wlo = count_include_pad ? -PL : 0, whi = count_include_pad ? W + PR : W;
        for (int o = 0; o < OH; o++) hcnt[o] = (float)taps_in(o, SH, KH, DH, PT, hlo, hhi);
        for (int o = 0; o < OW; o++) wcnt[o] = (float)taps_in(o, SW, KW, DW, PL, wlo, whi);
    }
    for (int pl = 0; pl < NC; pl++) {
        const float* x = X + (long)pl * H * W;
        float* y = Y + (long)pl * OH * OW;
        for (int r = 0; r < HP; r++) {
            float* d = pad + (long)r * WP;
            int ih = r - PT;
            if (ih < 0 || ih >= H) {
                for (int q = 0; q < WP; q++) d[q] = fill;
                continue;
            }
            const float* s = x + (long)ih * W;
            for (int q = 0; q < WP; q++) {
                int iw = q - PL;
                d[q] = (iw >= 0 && iw < W) ? s[iw] : fill;
            }
        }
        for (int oh = 0; oh < OH; oh++) {
            float* yr = y + (long)oh * OW;
            f4 hc = SPLAT(is_max ? 1.f : hcnt[oh]);
            for (int ow = 0; ow < OW; ow += 4) {
                f4 acc = SPLAT(fill);
                for (int kh = 0; kh < KH; kh++) {
                    const float* row = pad + (long)(oh * SH + kh * DH) * WP + ow * SW;
                    for (int kw = 0; kw < KW; kw++) {
                        const float* s = row + kw * DW;
                        f4 v;
                        if (SW == 1) v = LD(s);
                        else if (SW == 2) v = wasm_i32x4_shuffle(LD(s), LD(s + 4), 0, 2, 4, 6);
                        else v = wasm_f32x4_make(s[0], s[SW], s[2 * SW], s[3 * SW]);
                        acc = is_max ? wasm_f32x4_max(acc, v) : wasm_f32x4_add(acc, v);
                    }
                }
                if (!is_max) {
                    f4 cnt = wasm_f32x4_mul(hc, ld_part(wcnt + ow, OW - ow));
                    acc = wasm_f32x4_div(acc, cnt);
                }
                st_part(yr + ow, acc, OW - ow);
            }
        }
    }
}

/* Y[p] = max or mean of the n values of plane p (X: planes x n, contiguous) */
OX_EXPORT void ox_global_pool(int planes, int n, const float* X, float* Y, int is_max) {
    for (int p = 0; p < planes; p++) {
        const float* x = X + (long)p * n;
        int i = 0;
        float r;
        if (is_max) {
            f4 m0 = SPLAT(OX_NEG_INF), m1 = m0;
            for (; i + 8 <= n; i += 8) {
                m0 = wasm_f32x4_max(m0, LD(x + i));
                m1 = wasm_f32x4_max(m1, LD(x + i + 4));
            }
            m0 = wasm_f32x4_max(m0, m1);
            float t[4];
            ST(t, m0);
            r = t[0];
            for (int q = 1; q < 4; q++) r = (t[q] > r || t[q] != t[q]) ? t[q] : r;
            for (; i < n; i++) r = (x[i] > r || x[i] != x[i]) ? x[i] : r;
        } else {
            f4 s0 = SPLAT(0.f), s1 = s0;
            for (; i + 8 <= n; i += 8) {
                s0 = wasm_f32x4_add(s0, LD(x + i));
                s1 = wasm_f32x4_add(s1, LD(x + i + 4));
            }
            s0 = wasm_f32x4_add(s0, s1);
            float t[4];
            ST(t, s0);
            r = (t[0] + t[1]) + (t[2] + t[3]);
            for (; i < n; i++) r += x[i];
            r /= (float)n;
        }
        Y[p] = r;
    }
}

/* Y (NC x H*FH x W*FW) = X (NC x H x W) with every pixel repeated FH x FW times (Resize nearest by integer factors) */
OX_EXPORT void ox_upsample_nearest(int NC, int H, int W, int FH, int FW, const float* X, float* Y) {
    long OW = (long)W * FW;
    for (long p = 0; p < (long)NC * H; p++) {
        const float* x = X + p * W;
        float* y = Y + p * FH * OW;
        int i = 0;
        if (FW == 1) {
            for (; i + 4 <= W; i += 4) ST(y + i, LD(x + i));
            for (; i < W; i++) y[i] = x[i];
        } else if (FW == 2) {
            for (; i + 4 <= W; i += 4) {
                f4 v = LD(x + i);
                ST(y + 2 * i, wasm_i32x4_shuffle(v, v, 0, 0, 1, 1));
                ST(y + 2 * i + 4, wasm_i32x4_shuffle(v, v, 2, 2, 3, 3));
            }
            for (; i < W; i++) y[2 * i] = y[2 * i + 1] = x[i];
        } else {
            for (; i < W; i++) {
                float v = x[i];
                for (int f = 0; f < FW; f++) y[(long)i * FW + f] = v;
            }
        }
        for (int r = 1; r < FH; r++) {
            float* d = y + r * OW;
            long q = 0;
            for (; q + 4 <= OW; q += 4) ST(d + q, LD(y + q));
            for (; q < OW; q++) d[q] = y[q];
        }
    }
}
