/* Scalar float32 math written so that GCC vectorises it inside loops (no branches, no libm calls but rintf/fmaf):
 * exp, expm1, sigmoid, tanh, erf, GELU and the activation codes every onnxide native kernel shares. */
#ifndef NX_MATH_H
#define NX_MATH_H

#include <math.h>
#include <stdint.h>

#define NX_EXPORT __attribute__((visibility("default")))
#define NX_INLINE static inline __attribute__((always_inline))

enum {
    NX_ACT_NONE = 0, NX_ACT_RELU = 1, NX_ACT_LEAKY = 2, NX_ACT_SIGMOID = 3, NX_ACT_TANH = 4,
    NX_ACT_HARDSIGMOID = 5, NX_ACT_HARDSWISH = 6, NX_ACT_CLIP = 7, NX_ACT_ERF = 8, NX_ACT_GELU = 9,
    NX_ACT_GELU_TANH = 10
};

NX_INLINE float nx_pow2i(int n) {
    union { int32_t i; float f; } u;
    u.i = (n + 127) << 23;
    return u.f;
}

/* e^r - 1 for |r| <= ~0.35 (Taylor to r^7; rel. error < 1e-7) */
NX_INLINE float nx_expm1_small(float r) {
    float p = 1.f / 5040.f;
    p = fmaf(p, r, 1.f / 720.f);
    p = fmaf(p, r, 1.f / 120.f);
    p = fmaf(p, r, 1.f / 24.f);
    p = fmaf(p, r, 1.f / 6.f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.f);
    return p * r;
}

/* e^x: x = n ln2 + r, |r| <= ln2/2; NaN propagates, overflow -> inf */
NX_INLINE float nx_exp(float x) {
    x = x < -104.f ? -104.f : x;
    x = x > 89.f ? 89.f : x;
    float n = rintf(x * 1.44269504088896341f);
    float r = fmaf(n, -0.693145751953125f, x);
    r = fmaf(n, -1.428606765330187045e-06f, r);
    float p = nx_expm1_small(r) + 1.f;
    int ni = (int)n;
    int n1 = ni >> 1;
    return p * nx_pow2i(n1) * nx_pow2i(ni - n1);  /* two factors: denormal results and 2^128 come out right */
}

/* e^x - 1, accurate near 0 (the Taylor form below |x| 0.34) */
NX_INLINE float nx_expm1(float x) {
    return fabsf(x) < 0.34f ? nx_expm1_small(x) : nx_exp(x) - 1.f;
}

/* min(max(v, 0), 1), NaN propagating */
NX_INLINE float nx_unit_clamp(float v) { v = v < 0.f ? 0.f : v; return v > 1.f ? 1.f : v; }

NX_INLINE float nx_sigmoid(float x) { return 1.f / (1.f + nx_exp(-x)); }

NX_INLINE float nx_tanh(float x) {
    float ax = fabsf(x);
    ax = ax > 20.f ? 20.f : ax;
    float e = nx_expm1(ax + ax);
    return copysignf(e / (e + 2.f), x);  /* NaN stays NaN */
}

/* erfc(a) for a >= 0.5 (Abramowitz-Stegun 7.1.26, abs. error < 2e-7), no cancellation for large a */
NX_INLINE float nx_erfc_big(float a) {
    float t = 1.f / fmaf(a, 0.3275911f, 1.f);
    float q = 1.061405429f;
    q = fmaf(q, t, -1.453152027f);
    q = fmaf(q, t, 1.421413741f);
    q = fmaf(q, t, -0.284496736f);
    q = fmaf(q, t, 0.254829592f);
    return q * t * nx_exp(-a * a);
}

/* erf(x) for |x| < 0.5: odd Taylor series 2/sqrt(pi) sum (-x^2)^n / (n! (2n+1)) */
NX_INLINE float nx_erf_small(float x) {
    float x2 = x * x;
    float p = 1.f / 9360.f;
    p = fmaf(p, x2, -1.f / 1320.f);
    p = fmaf(p, x2, 1.f / 216.f);
    p = fmaf(p, x2, -1.f / 42.f);
    p = fmaf(p, x2, 1.f / 10.f);
    p = fmaf(p, x2, -1.f / 3.f);
    p = fmaf(p, x2, 1.f);
    return p * x * 1.1283791670955126f;
}

NX_INLINE float nx_erf(float x) {
    float ax = fabsf(x);
    float big = copysignf(1.f - nx_erfc_big(ax), x);
    return ax < 0.5f ? nx_erf_small(x) : big;
}

/* x Phi(x) = x/2 (1 + erf(x/sqrt2)); for x < 0 the factor is erfc(|z|) itself, so no cancellation */
NX_INLINE float nx_gelu(float x) {
    float z = x * 0.70710678118654752f;
    float az = fabsf(z);
    float tail = nx_erfc_big(az);
    float big = z < 0.f ? tail : 2.f - tail;
    float g = az < 0.5f ? 1.f + nx_erf_small(z) : big;
    return 0.5f * x * g;
}

NX_INLINE float nx_gelu_tanh(float x) {
    float in = (x + 0.044715f * x * x * x) * 0.79788456080286536f;
    return 0.5f * x * (1.f + nx_tanh(in));
}

/* reductions in 16 lanes, so that they vectorise without reassociation flags */
NX_INLINE float nx_sum(const float* x, long n) {
    float acc[16] = {0.f};
    long i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += x[i + j];
    float s = 0.f;
    for (; i < n; i++) s += x[i];
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

NX_INLINE float nx_sum_sq_dev(const float* x, long n, float mean) {
    float acc[16] = {0.f};
    long i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) { float d = x[i + j] - mean; acc[j] += d * d; }
    float s = 0.f;
    for (; i < n; i++) { float d = x[i] - mean; s += d * d; }
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

/* the maximum, ignoring NaNs (a NaN reaches the result through the arithmetic that follows) */
NX_INLINE float nx_max(const float* x, long n) {
    float acc[16];
    for (int j = 0; j < 16; j++) acc[j] = -INFINITY;
    long i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    float m = -INFINITY;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int j = 0; j < 16; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

/* one row of y = softmax(scale * x + bias) (or log-softmax with `log`: then y must not alias x, and bias must be
 * NULL); y may alias x otherwise; bias (or NULL) is the row's additive bias */
NX_INLINE void nx_softmax_row(const float* xr, float* yr, long cols, float scale, const float* br, int log) {
    float sc = scale;
    if (br) {
        for (long c = 0; c < cols; c++) yr[c] = xr[c] * scale + br[c];
        xr = yr;
        sc = 1.f;
    }
    float m = nx_max(xr, cols);
    if (!(m > -INFINITY && m < INFINITY)) {  /* an inf maximum (or all -inf): NaN, as max-subtraction gives */
        for (long c = 0; c < cols; c++) yr[c] = NAN;
        return;
    }
    if (log) {
        for (long c = 0; c < cols; c++) yr[c] = nx_exp((xr[c] - m) * sc);
        float ls = logf(nx_sum(yr, cols));
        for (long c = 0; c < cols; c++) yr[c] = (xr[c] - m) * sc - ls;
    } else {
        for (long c = 0; c < cols; c++) yr[c] = nx_exp((xr[c] - m) * sc);
        float inv = 1.f / nx_sum(yr, cols);
        for (long c = 0; c < cols; c++) yr[c] *= inv;
    }
}

#endif
