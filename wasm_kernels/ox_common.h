/* Shared helpers of the onnxide wasm kernels: export macro, FMA selection, vector math (exp, tanh, erf, ...),
 * and the activation epilogue every kernel family uses. Header only; includes nothing but wasm_simd128.h
 * and the generated ox_act_codes.h. */
#ifndef OX_COMMON_H
#define OX_COMMON_H

#include <wasm_simd128.h>

#define OX_EXPORT __attribute__((visibility("default")))
#define OX_INLINE static inline __attribute__((always_inline))

typedef v128_t f4;

/* a*b + c: fused (or not, the engine chooses) in the relaxed build, separate mul+add in the SIMD128 build */
#ifdef __wasm_relaxed_simd__
#define VFMA(a, b, c) wasm_f32x4_relaxed_madd((a), (b), (c))
#else
#define VFMA(a, b, c) wasm_f32x4_add(wasm_f32x4_mul((a), (b)), (c))
#endif

#define SPLAT(x) wasm_f32x4_splat(x)
#define LD(p) wasm_v128_load(p)
#define ST(p, v) wasm_v128_store((p), (v))

OX_INLINE int ox_min(int a, int b) { return a < b ? a : b; }
OX_INLINE int ox_max(int a, int b) { return a > b ? a : b; }

/* ---- vector math ------------------------------------------------------------------------------------------- */

/* 2^n for integer-valued float vector n in [-150, 130]: two exact power-of-two factors so that results that
 * are denormal or overflow come out right when multiplied in. */
OX_INLINE f4 v_mul_pow2(f4 p, f4 n) {
    v128_t ni = wasm_i32x4_trunc_sat_f32x4(n);
    v128_t n1 = wasm_i32x4_shr(ni, 1);
    v128_t n2 = wasm_i32x4_sub(ni, n1);
    v128_t s1 = wasm_i32x4_shl(wasm_i32x4_add(n1, wasm_i32x4_splat(127)), 23);
    v128_t s2 = wasm_i32x4_shl(wasm_i32x4_add(n2, wasm_i32x4_splat(127)), 23);
    return wasm_f32x4_mul(wasm_f32x4_mul(p, s1), s2);
}

/* e^r - 1 for |r| <= ~0.35 (Taylor to r^7; rel. error < 1e-7) */
OX_INLINE f4 v_expm1_small(f4 r) {
    f4 p = SPLAT(1.f / 5040.f);
    p = VFMA(p, r, SPLAT(1.f / 720.f));
    p = VFMA(p, r, SPLAT(1.f / 120.f));
    p = VFMA(p, r, SPLAT(1.f / 24.f));
    p = VFMA(p, r, SPLAT(1.f / 6.f));
    p = VFMA(p, r, SPLAT(0.5f));
    p = VFMA(p, r, SPLAT(1.f));
    return wasm_f32x4_mul(p, r);
}

/* e^x with range reduction x = n ln2 + r; NaN propagates, overflow -> inf, underflow -> denormals / 0 */
OX_INLINE f4 v_exp(f4 x) {
    x = wasm_f32x4_min(wasm_f32x4_max(x, SPLAT(-104.f)), SPLAT(89.f));
    f4 n = wasm_f32x4_nearest(wasm_f32x4_mul(x, SPLAT(1.44269504088896341f)));
    f4 r = VFMA(n, SPLAT(-0.693145751953125f), x);
    r = VFMA(n, SPLAT(-1.428606765330187045e-06f), r);
    f4 p = wasm_f32x4_add(v_expm1_small(r), SPLAT(1.f));
    return v_mul_pow2(p, n);
}

/* e^x - 1, accurate near 0 */
OX_INLINE f4 v_expm1(f4 x) {
    f4 big = wasm_f32x4_sub(v_exp(x), SPLAT(1.f));
    f4 small = v_expm1_small(x);
    v128_t use_small = wasm_f32x4_lt(wasm_f32x4_abs(x), SPLAT(0.34f));
    return wasm_v128_bitselect(small, big, use_small);
}

OX_INLINE f4 v_sigmoid(f4 x) {
    return wasm_f32x4_div(SPLAT(1.f), wasm_f32x4_add(SPLAT(1.f), v_exp(wasm_f32x4_neg(x))));
}

OX_INLINE f4 v_tanh(f4 x) {
    f4 ax = wasm_f32x4_min(wasm_f32x4_abs(x), SPLAT(20.f));
    f4 e = v_expm1(wasm_f32x4_add(ax, ax));
    f4 t = wasm_f32x4_div(e, wasm_f32x4_add(e, SPLAT(2.f)));
    v128_t sign = wasm_v128_and(x, wasm_i32x4_splat((int)0x80000000));
    return wasm_v128_or(t, sign);  /* NaN stays NaN */
}

/* erf: odd Taylor series below 0.5, Abramowitz-Stegun 7.1.26 above (abs. error < 2e-7) */
OX_INLINE f4 v_erf(f4 x) {
    f4 ax = wasm_f32x4_abs(x);
    f4 x2 = wasm_f32x4_mul(x, x);
    f4 p = SPLAT(1.f / 9360.f);                 /* erf(x) = 2/sqrt(pi) x sum (-x^2)^n / (n! (2n+1)) */
    p = VFMA(p, x2, SPLAT(-1.f / 1320.f));
    p = VFMA(p, x2, SPLAT(1.f / 216.f));
    p = VFMA(p, x2, SPLAT(-1.f / 42.f));
    p = VFMA(p, x2, SPLAT(1.f / 10.f));
    p = VFMA(p, x2, SPLAT(-1.f / 3.f));
    p = VFMA(p, x2, SPLAT(1.f));
    f4 small = wasm_f32x4_mul(wasm_f32x4_mul(p, x), SPLAT(1.1283791670955126f));
    f4 t = wasm_f32x4_div(SPLAT(1.f), VFMA(ax, SPLAT(0.3275911f), SPLAT(1.f)));
    f4 q = SPLAT(1.061405429f);
    q = VFMA(q, t, SPLAT(-1.453152027f));
    q = VFMA(q, t, SPLAT(1.421413741f));
    q = VFMA(q, t, SPLAT(-0.284496736f));
    q = VFMA(q, t, SPLAT(0.254829592f));
    q = wasm_f32x4_mul(q, t);
    f4 big = wasm_f32x4_sub(SPLAT(1.f), wasm_f32x4_mul(q, v_exp(wasm_f32x4_neg(x2))));
    big = wasm_v128_or(big, wasm_v128_and(x, wasm_i32x4_splat((int)0x80000000)));
    v128_t use_small = wasm_f32x4_lt(ax, SPLAT(0.5f));
    return wasm_v128_bitselect(small, big, use_small);
}

/* ln x: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (a subnormal x scaled by 2^23 first), ln m = 2 atanh(s) with
 * s = (m - 1) / (m + 1), |s| <= 0.1716 (odd series to s^9: truncation < 1e-8 relative); -inf at ±0, NaN below 0
 * and for NaN, inf at inf. Not inlined: v_act is, into every GEMM / conv epilogue, and Log is never one there
 * (inlined, it grew the module by 18 KB, and the README CNN and ResNet-18 ran ~5-10 % slower in Chromium in
 * alternating runs, measured at the time) */
static __attribute__((noinline)) f4 v_log(f4 x) {
    v128_t sub = wasm_f32x4_lt(x, SPLAT(1.17549435e-38f));
    v128_t bits = wasm_v128_bitselect(wasm_f32x4_mul(x, SPLAT(8388608.f)), x, sub);
    v128_t e = wasm_i32x4_sub(wasm_u32x4_shr(bits, 23), wasm_i32x4_splat(127));
    e = wasm_i32x4_sub(e, wasm_v128_and(sub, wasm_i32x4_splat(23)));
    f4 m = wasm_v128_or(wasm_v128_and(bits, wasm_i32x4_splat(0x007fffff)), wasm_i32x4_splat(0x3f800000));
    v128_t big = wasm_f32x4_gt(m, SPLAT(1.41421356f));
    m = wasm_v128_bitselect(wasm_f32x4_mul(m, SPLAT(0.5f)), m, big);
    e = wasm_i32x4_sub(e, big);  /* (big is -1 where set) */
    f4 s = wasm_f32x4_div(wasm_f32x4_sub(m, SPLAT(1.f)), wasm_f32x4_add(m, SPLAT(1.f)));
    f4 s2 = wasm_f32x4_mul(s, s);
    f4 p = SPLAT(2.f / 9.f);
    p = VFMA(p, s2, SPLAT(2.f / 7.f));
    p = VFMA(p, s2, SPLAT(2.f / 5.f));
    p = VFMA(p, s2, SPLAT(2.f / 3.f));
    p = VFMA(p, s2, SPLAT(2.f));
    f4 ef = wasm_f32x4_convert_i32x4(e);
    f4 r = VFMA(ef, SPLAT(0.693145751953125f), VFMA(ef, SPLAT(1.428606765330187045e-06f), wasm_f32x4_mul(p, s)));
    r = wasm_v128_bitselect(SPLAT(-__builtin_inff()), r, wasm_f32x4_eq(x, SPLAT(0.f)));
    r = wasm_v128_bitselect(SPLAT(__builtin_nanf("")), r, wasm_f32x4_lt(x, SPLAT(0.f)));
    return wasm_v128_bitselect(x, r, wasm_v128_or(wasm_f32x4_ne(x, x), wasm_f32x4_eq(x, SPLAT(__builtin_inff()))));
}

/* ---- activations (shared by GEMM/conv epilogues and the unary kernel) ------------------------------------ */
/* OX_ACT_* codes: generated by build.sh from py_engine/onnxide/ops/activations.py into the build folder */
#include "ox_act_codes.h"

OX_INLINE f4 v_act(f4 v, int act, float a, float b) {
    switch (act) {
    case OX_ACT_RELU: return wasm_f32x4_max(v, SPLAT(0.f));
    case OX_ACT_LEAKY: {
        v128_t neg = wasm_f32x4_lt(v, SPLAT(0.f));
        return wasm_v128_bitselect(wasm_f32x4_mul(v, SPLAT(a)), v, neg);
    }
    case OX_ACT_SIGMOID: return v_sigmoid(v);
    case OX_ACT_TANH: return v_tanh(v);
    case OX_ACT_HARDSIGMOID:
        return wasm_f32x4_min(wasm_f32x4_max(VFMA(v, SPLAT(a), SPLAT(b)), SPLAT(0.f)), SPLAT(1.f));
    case OX_ACT_HARDSWISH: {
        f4 h = wasm_f32x4_min(wasm_f32x4_max(VFMA(v, SPLAT(1.f / 6.f), SPLAT(0.5f)), SPLAT(0.f)), SPLAT(1.f));
        return wasm_f32x4_mul(v, h);
    }
    case OX_ACT_CLIP: return wasm_f32x4_min(wasm_f32x4_max(v, SPLAT(a)), SPLAT(b));
    case OX_ACT_EXP: return v_exp(v);
    case OX_ACT_SQRT: return wasm_f32x4_sqrt(v);
    case OX_ACT_ERF: return v_erf(v);
    case OX_ACT_LOG: return v_log(v);
    case OX_ACT_GELU: {
        f4 e = v_erf(wasm_f32x4_mul(v, SPLAT(0.70710678118654752f)));
        return wasm_f32x4_mul(wasm_f32x4_mul(v, SPLAT(0.5f)), wasm_f32x4_add(e, SPLAT(1.f)));
    }
    case OX_ACT_GELU_TANH: {
        f4 v3 = wasm_f32x4_mul(wasm_f32x4_mul(v, v), v);
        f4 in = wasm_f32x4_mul(VFMA(v3, SPLAT(0.044715f), v), SPLAT(0.79788456080286536f));
        return wasm_f32x4_mul(wasm_f32x4_mul(v, SPLAT(0.5f)), wasm_f32x4_add(v_tanh(in), SPLAT(1.f)));
    }
    case OX_ACT_ELU: {
        v128_t neg = wasm_f32x4_lt(v, SPLAT(0.f));
        return wasm_v128_bitselect(wasm_f32x4_mul(v_expm1(v), SPLAT(a)), v, neg);
    }
    case OX_ACT_ABS: return wasm_f32x4_abs(v);
    case OX_ACT_NEG: return wasm_f32x4_neg(v);
    case OX_ACT_SWISH: return wasm_f32x4_mul(v, v_sigmoid(wasm_f32x4_mul(v, SPLAT(a))));
    case OX_ACT_SELU: {
        /* gamma * (x <= 0 ? alpha*(e^x - 1) : x) */
        v128_t le = wasm_f32x4_le(v, SPLAT(0.f));
        f4 neg = wasm_f32x4_mul(v_expm1(v), SPLAT(a));
        return wasm_f32x4_mul(wasm_v128_bitselect(neg, v, le), SPLAT(b));
    }
    default: return v;
    }
}

/* load / store n (< 4 allowed) floats without touching memory beyond them */
OX_INLINE f4 ld_part(const float* p, int n) {
    if (n >= 4) return LD(p);
    float t[4] = {0.f, 0.f, 0.f, 0.f};
    for (int i = 0; i < n; i++) t[i] = p[i];
    return LD(t);
}

OX_INLINE void st_part(float* p, f4 v, int n) {
    if (n >= 4) { ST(p, v); return; }
    float t[4];
    ST(t, v);
    for (int i = 0; i < n; i++) p[i] = t[i];
}

#endif
