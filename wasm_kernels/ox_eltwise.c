/* Elementwise kernels: unary activations (the OX_ACT_* codes of ox_common.h) and binary arithmetic with up to
 * 4-D broadcasting given as element strides (0 = broadcast). Exports ox_unary, ox_binary. */
#include "ox_common.h"
#include "ox_kernels.h"

enum { OX_ADD = 0, OX_SUB = 1, OX_MUL = 2, OX_DIV = 3, OX_MAX = 4, OX_MIN = 5, OX_PRELU = 6 };

/* the unary loop for one activation; always inlined with a constant act so v_act's switch folds away */
OX_INLINE void unary_loop(int n, const float* X, float* Y, int act, float a0, float a1) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        f4 v0 = v_act(LD(X + i), act, a0, a1), v1 = v_act(LD(X + i + 4), act, a0, a1);
        ST(Y + i, v0);
        ST(Y + i + 4, v1);
    }
    for (; i < n; i += 4) st_part(Y + i, v_act(ld_part(X + i, n - i), act, a0, a1), n - i);
}

#define OX_UNARY_CASE(A) \
    case A: unary_loop(n, X, Y, A, a0, a1); break;

/* Y[i] = act(X[i]) for n values; X and Y may alias */
OX_EXPORT void ox_unary(int n, const float* X, float* Y, int act, float a0, float a1) {
    switch (act) {
    OX_UNARY_CASE(OX_ACT_NONE) OX_UNARY_CASE(OX_ACT_RELU) OX_UNARY_CASE(OX_ACT_LEAKY) OX_UNARY_CASE(OX_ACT_SIGMOID)
    OX_UNARY_CASE(OX_ACT_TANH) OX_UNARY_CASE(OX_ACT_HARDSIGMOID) OX_UNARY_CASE(OX_ACT_HARDSWISH)
    OX_UNARY_CASE(OX_ACT_CLIP) OX_UNARY_CASE(OX_ACT_EXP) OX_UNARY_CASE(OX_ACT_SQRT) OX_UNARY_CASE(OX_ACT_ERF)
    OX_UNARY_CASE(OX_ACT_GELU) OX_UNARY_CASE(OX_ACT_GELU_TANH) OX_UNARY_CASE(OX_ACT_ELU) OX_UNARY_CASE(OX_ACT_ABS)
    OX_UNARY_CASE(OX_ACT_NEG) OX_UNARY_CASE(OX_ACT_SWISH) OX_UNARY_CASE(OX_ACT_SELU) OX_UNARY_CASE(OX_ACT_LOG)
    default: unary_loop(n, X, Y, act, a0, a1); break;
    }
}

OX_INLINE f4 bin(int op, f4 a, f4 b) {
    switch (op) {
    case OX_ADD: return wasm_f32x4_add(a, b);
    case OX_SUB: return wasm_f32x4_sub(a, b);
    case OX_MUL: return wasm_f32x4_mul(a, b);
    case OX_DIV: return wasm_f32x4_div(a, b);
    case OX_MAX: return wasm_f32x4_max(a, b);
    case OX_MIN: return wasm_f32x4_min(a, b);
    case OX_PRELU: return wasm_v128_bitselect(wasm_f32x4_mul(a, b), a, wasm_f32x4_lt(a, SPLAT(0.f)));
    default: return a;
    }
}

/* one innermost run of n outputs; sa / sb are the element strides of the run (0, 1 or other). Always inlined
 * with a constant op (see ox_binary), so the op switch folds away out of the vector loops. */
OX_INLINE void bin_run(int op, int n, const float* a, int sa, const float* b, int sb, float* y) {
    int i = 0;
    if (sa == 1 && sb == 1) {
        for (; i + 8 <= n; i += 8) {
            f4 r0 = bin(op, LD(a + i), LD(b + i)), r1 = bin(op, LD(a + i + 4), LD(b + i + 4));
            ST(y + i, r0);
            ST(y + i + 4, r1);
        }
        for (; i + 4 <= n; i += 4) ST(y + i, bin(op, LD(a + i), LD(b + i)));
    } else if (sa == 1 && sb == 0) {
        f4 bv = SPLAT(b[0]);
        for (; i + 8 <= n; i += 8) {
            f4 r0 = bin(op, LD(a + i), bv), r1 = bin(op, LD(a + i + 4), bv);
            ST(y + i, r0);
            ST(y + i + 4, r1);
        }
        for (; i + 4 <= n; i += 4) ST(y + i, bin(op, LD(a + i), bv));
    } else if (sa == 0 && sb == 1) {
        f4 av = SPLAT(a[0]);
        for (; i + 4 <= n; i += 4) ST(y + i, bin(op, av, LD(b + i)));
    }
    for (; i < n; i += 4) {
        int k = n - i < 4 ? n - i : 4;
        float ta[4] = {0.f, 0.f, 0.f, 0.f}, tb[4] = {0.f, 0.f, 0.f, 0.f};
        for (int q = 0; q < k; q++) {
            ta[q] = a[(long)(i + q) * sa];
            tb[q] = b[(long)(i + q) * sb];
        }
        st_part(y + i, bin(op, LD(ta), LD(tb)), k);
    }
}

/* Y (contiguous, shape dims[0..3]) = A op B, A element at sum(idx[d] * sa[d]), likewise B.
 * p: int32[12] = dims[4], sa[4], sb[4] (pad leading dims with 1 / 0). */
OX_INLINE void bin_all(int op, const int* p, const float* A, const float* B, float* Y) {
    const int *d = p, *sa = p + 4, *sb = p + 8;
    for (int i0 = 0; i0 < d[0]; i0++)
        for (int i1 = 0; i1 < d[1]; i1++)
            for (int i2 = 0; i2 < d[2]; i2++) {
                long oa = (long)i0 * sa[0] + (long)i1 * sa[1] + (long)i2 * sa[2];
                long ob = (long)i0 * sb[0] + (long)i1 * sb[1] + (long)i2 * sb[2];
                long oy = (((long)i0 * d[1] + i1) * d[2] + i2) * d[3];
                bin_run(op, d[3], A + oa, sa[3], B + ob, sb[3], Y + oy);
            }
}

/* one specialised loop nest per op */
static void bin_add(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_ADD, p, A, B, Y); }
static void bin_sub(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_SUB, p, A, B, Y); }
static void bin_mul(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_MUL, p, A, B, Y); }
static void bin_div(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_DIV, p, A, B, Y); }
static void bin_max(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_MAX, p, A, B, Y); }
static void bin_min(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_MIN, p, A, B, Y); }
static void bin_prelu(const int* p, const float* A, const float* B, float* Y) { bin_all(OX_PRELU, p, A, B, Y); }

OX_EXPORT void ox_binary(int op, const int* p, const float* A, const float* B, float* Y) {
    switch (op) {
    case OX_ADD: bin_add(p, A, B, Y); break;
    case OX_SUB: bin_sub(p, A, B, Y); break;
    case OX_MUL: bin_mul(p, A, B, Y); break;
    case OX_DIV: bin_div(p, A, B, Y); break;
    case OX_MAX: bin_max(p, A, B, Y); break;
    case OX_MIN: bin_min(p, A, B, Y); break;
    case OX_PRELU: bin_prelu(p, A, B, Y); break;
    default: break;
    }
}
