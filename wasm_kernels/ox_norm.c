/* Row-wise kernels: Softmax / LogSoftmax over contiguous rows, Layer/Instance normalization (row statistics with
 * per-column or per-row affine), and the per-channel affine of inference BatchNormalization. */
#include "ox_common.h"
#include "ox_kernels.h"

OX_INLINE float hsum(f4 v) {
    float t[4];
    ST(t, v);
    return (t[0] + t[1]) + (t[2] + t[3]);
}

OX_INLINE float hmax(f4 v) {
    float t[4];
    ST(t, v);
    float r = t[0];
    for (int q = 1; q < 4; q++) r = (t[q] > r || t[q] != t[q]) ? t[q] : r;
    return r;
}

static float row_max(const float* x, int n) {
    int i = 0;
    f4 m0 = SPLAT(-__builtin_inff()), m1 = m0;
    for (; i + 8 <= n; i += 8) {
        m0 = wasm_f32x4_max(m0, LD(x + i));
        m1 = wasm_f32x4_max(m1, LD(x + i + 4));
    }
    float r = hmax(wasm_f32x4_max(m0, m1));
    for (; i < n; i++) r = (x[i] > r || x[i] != x[i]) ? x[i] : r;
    return r;
}

/* y = softmax(x) (or log-softmax) along each contiguous row of n values; x and y may alias */
OX_EXPORT void ox_softmax(int rows, int n, const float* X, float* Y, int log_softmax) {
    for (int r = 0; r < rows; r++) {
        const float* x = X + (long)r * n;
        float* y = Y + (long)r * n;
        float m = row_max(x, n);
        if (m - m != 0.f) m = 0.f;   /* a row max of +-inf or NaN: subtract nothing, like the numpy kernel */
        f4 mv = SPLAT(m), s0 = SPLAT(0.f), s1 = s0;
        int i = 0;
        if (log_softmax) {
            for (; i + 8 <= n; i += 8) {
                s0 = wasm_f32x4_add(s0, v_exp(wasm_f32x4_sub(LD(x + i), mv)));
                s1 = wasm_f32x4_add(s1, v_exp(wasm_f32x4_sub(LD(x + i + 4), mv)));
            }
            for (; i < n; i += 4) {
                int k = n - i < 4 ? n - i : 4;
                f4 e = v_exp(wasm_f32x4_sub(ld_part(x + i, k), mv));
                if (k < 4) e = wasm_v128_and(e, wasm_i32x4_gt(wasm_i32x4_splat(k), wasm_i32x4_make(0, 1, 2, 3)));
                s0 = wasm_f32x4_add(s0, e);
            }
            float s = hsum(wasm_f32x4_add(s0, s1));
            /* log(s) for s >= 1 (the max term contributes 1): via exponent split and atanh series */
            union { float f; int i; } u = {s};
            int ex = ((u.i >> 23) & 255) - 127;
            u.i = (u.i & 0x007fffff) | 0x3f800000;          /* mantissa in [1, 2) */
            float mant = u.f;
            if (mant > 1.41421356f) { mant *= 0.5f; ex += 1; }
            float t = (mant - 1.f) / (mant + 1.f), t2 = t * t;
            float lg = 2.f * t * (1.f + t2 * (1.f / 3 + t2 * (1.f / 5 + t2 * (1.f / 7 + t2 * (1.f / 9)))));
            float logs = s != s ? s : (s == __builtin_inff() ? s : lg + (float)ex * 0.69314718055994531f);
            if (s == 0.f) logs = -__builtin_inff();
            f4 sub = SPLAT(m + logs);
            for (i = 0; i + 4 <= n; i += 4) ST(y + i, wasm_f32x4_sub(LD(x + i), sub));
            for (; i < n; i++) y[i] = x[i] - (m + logs);
        } else {
            for (; i + 8 <= n; i += 8) {
                f4 e0 = v_exp(wasm_f32x4_sub(LD(x + i), mv)), e1 = v_exp(wasm_f32x4_sub(LD(x + i + 4), mv));
                ST(y + i, e0);
                ST(y + i + 4, e1);
                s0 = wasm_f32x4_add(s0, e0);
                s1 = wasm_f32x4_add(s1, e1);
            }
            float s = hsum(wasm_f32x4_add(s0, s1));
            for (; i < n; i += 4) {
                int k = n - i < 4 ? n - i : 4;
                float t[4];
                ST(t, v_exp(wasm_f32x4_sub(ld_part(x + i, k), mv)));
                for (int q = 0; q < k; q++) { y[i + q] = t[q]; s += t[q]; }
            }
            f4 inv = SPLAT(1.f / s);
            for (i = 0; i + 4 <= n; i += 4) ST(y + i, wasm_f32x4_mul(LD(y + i), inv));
            for (; i < n; i++) y[i] = y[i] * (1.f / s);
        }
    }
}

/* Normalize each contiguous row of D values: y = (x - mean) / sqrt(var + eps) * scale + bias.
 * per_row == 0: scale / bias are D-vectors (LayerNormalization; bias may be null).
 * per_row == 1: row r uses scale[r % C], bias[r % C] (InstanceNormalization).
 * mean_out / rstd_out (per row, may be null) receive the statistics. */
OX_EXPORT void ox_rownorm(int rows, int D, const float* X, float* Y, float eps, const float* scale,
                          const float* bias, int per_row, int C, float* mean_out, float* rstd_out) {
    for (int r = 0; r < rows; r++) {
        const float* x = X + (long)r * D;
        float* y = Y + (long)r * D;
        f4 s0 = SPLAT(0.f), s1 = s0;
        int i = 0;
        for (; i + 8 <= D; i += 8) {
            s0 = wasm_f32x4_add(s0, LD(x + i));
            s1 = wasm_f32x4_add(s1, LD(x + i + 4));
        }
        float s = hsum(wasm_f32x4_add(s0, s1));
        for (; i < D; i++) s += x[i];
        float mean = s / (float)D;
        f4 mv = SPLAT(mean);
        s0 = SPLAT(0.f);
        s1 = s0;
        for (i = 0; i + 8 <= D; i += 8) {
            f4 d0 = wasm_f32x4_sub(LD(x + i), mv), d1 = wasm_f32x4_sub(LD(x + i + 4), mv);
            s0 = VFMA(d0, d0, s0);
            s1 = VFMA(d1, d1, s1);
        }
        float v = hsum(wasm_f32x4_add(s0, s1));
        for (; i < D; i++) { float d = x[i] - mean; v += d * d; }
        float rstd = 1.f / __builtin_sqrtf(v / (float)D + eps);
        if (mean_out) mean_out[r] = mean;
        if (rstd_out) rstd_out[r] = rstd;
        f4 rs = SPLAT(rstd);
        if (per_row) {
            float sc = scale[r % C] * rstd, b = bias ? bias[r % C] : 0.f;
            f4 scv = SPLAT(sc), bv = SPLAT(b);
            for (i = 0; i + 4 <= D; i += 4) ST(y + i, VFMA(wasm_f32x4_sub(LD(x + i), mv), scv, bv));
            for (; i < D; i++) y[i] = (x[i] - mean) * sc + b;
        } else {
            for (i = 0; i + 4 <= D; i += 4) {
                f4 t = wasm_f32x4_mul(wasm_f32x4_mul(wasm_f32x4_sub(LD(x + i), mv), rs), LD(scale + i));
                ST(y + i, bias ? wasm_f32x4_add(t, LD(bias + i)) : t);
            }
            for (; i < D; i++) {
                float t = (x[i] - mean) * rstd * scale[i];
                y[i] = bias ? t + bias[i] : t;
            }
        }
    }
}

/* Y[n, c, :] = act((X[n, c, :] - m[c]) * s[c] + t[c]) for N x C planes of HW values (BatchNormalization
 * inference with s = scale / sqrt(var + eps), m = mean, t = B) */
OX_EXPORT void ox_channel_affine(int N, int C, int HW, const float* X, const float* m, const float* s,
                                 const float* t, float* Y, int act, float a0, float a1) {
    for (int n = 0; n < N; n++) {
        for (int c = 0; c < C; c++) {
            const float* x = X + ((long)n * C + c) * HW;
            float* y = Y + ((long)n * C + c) * HW;
            f4 mv = SPLAT(m[c]), sv = SPLAT(s[c]), tv = SPLAT(t[c]);
            int i = 0;
            for (; i + 4 <= HW; i += 4) {
                f4 v = VFMA(wasm_f32x4_sub(LD(x + i), mv), sv, tv);
                ST(y + i, act ? v_act(v, act, a0, a1) : v);
            }
            if (i < HW) {
                f4 v = VFMA(wasm_f32x4_sub(ld_part(x + i, HW - i), mv), sv, tv);
                st_part(y + i, act ? v_act(v, act, a0, a1) : v, HW - i);
            }
        }
    }
}
