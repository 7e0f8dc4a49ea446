/* 8-bit integer GEMM and DynamicQuantizeLinear of the wasm kernels: MatMulInteger (uint8 / int8 A × uint8 / int8 B
 * → int32) or its float32 result act-free (MatMulIntegerToFloat / DynamicQuantizeMatMul: float(acc) · scale + bias).
 * B is packed once into 8-column panels of int16 k-pairs; A's rows are widened to int16 (a − a_zero) per call into
 * scratch. The micro-kernel multiplies int16 pairs with i32x4.dot_i16x8_s (plain SIMD128, in both builds: each pair
 * sum ≤ 2·255² fits int32, nothing saturates; relaxed SIMD's i8 dot product is left alone, its result is
 * implementation-defined for the 8-bit values quantized activations take). Sums wrap modulo 2³² as int32 does;
 * B's zero point is applied after the dot products as − b_zero[n] · Σₖ(a − a_zero). The float epilogue is a float32
 * product, then a float32 sum (never fused), as the numpy kernel computes it. DynamicQuantizeLinear follows the ONNX
 * definition in float32 (range widened to include 0, scale = range / 255, zero point and values rounded half to
 * even, saturated to [0, 255]). */
#include "ox_kernels.h"

#pragma STDC FP_CONTRACT OFF

#define QMR 4  /* rows of A per micro-tile */
#define QNR 8  /* columns per packed B panel (two i32x4 vectors) */

OX_INLINE int kpairs(int K) { return (K + 1) / 2; }

OX_EXPORT int ox_qgemm_packed_size(int K, int N) { return ((N + QNR - 1) / QNR) * kpairs(K) * 2 * QNR; }

/* scratch of one ox_qgemm call: A's rows widened to int16 (M rows of 2·kpairs) and their sums (M int32) */
OX_EXPORT int ox_qgemm_scratch_floats(int M, int K) { return (M * 2 * kpairs(K) * 2 + 3) / 4 + M; }

/* row-major K×N B (uint8, or int8 when b_signed) into panels dst[panel][k pair][column 0..QNR)[2], zero past K, N */
OX_EXPORT void ox_qgemm_pack_b(int K, int N, const void* B, int b_signed, short* dst) {
    const unsigned char* bu = (const unsigned char*)B;
    const signed char* bs = (const signed char*)B;
    int panels = (N + QNR - 1) / QNR, kp = kpairs(K);
    for (int p = 0; p < panels; p++) {
        short* d = dst + p * kp * 2 * QNR;
        for (int q = 0; q < kp; q++)
            for (int j = 0; j < QNR; j++)
                for (int h = 0; h < 2; h++) {
                    int k = 2 * q + h, n = p * QNR + j;
                    d[(q * QNR + j) * 2 + h] = (short)(k < K && n < N ? (b_signed ? bs[k * N + n] : bu[k * N + n]) : 0);
                }
    }
}

/* d[0..lda) = a[0..K) − z as int16 (zero past K); returns Σ(a − z), wrapping as int32 does */
static int widen_row(int K, int lda, const void* a, int a_signed, int z, short* d) {
    const unsigned char* au = (const unsigned char*)a;
    const signed char* as = (const signed char*)a;
    v128_t vs = wasm_i32x4_splat(0);
    const v128_t vz = wasm_i16x8_splat((short)z), ones = wasm_i16x8_splat(1);
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        v128_t v = wasm_v128_load(au + k);
        v128_t lo = a_signed ? wasm_i16x8_extend_low_i8x16(v) : wasm_u16x8_extend_low_u8x16(v);
        v128_t hi = a_signed ? wasm_i16x8_extend_high_i8x16(v) : wasm_u16x8_extend_high_u8x16(v);
        lo = wasm_i16x8_sub(lo, vz);
        hi = wasm_i16x8_sub(hi, vz);
        wasm_v128_store(d + k, lo);
        wasm_v128_store(d + k + 8, hi);
        vs = wasm_i32x4_add(vs, wasm_i32x4_add(wasm_i32x4_dot_i16x8(lo, ones), wasm_i32x4_dot_i16x8(hi, ones)));
    }
    unsigned s = (unsigned)wasm_i32x4_extract_lane(vs, 0) + (unsigned)wasm_i32x4_extract_lane(vs, 1) +
                 (unsigned)wasm_i32x4_extract_lane(vs, 2) + (unsigned)wasm_i32x4_extract_lane(vs, 3);
    for (; k < K; k++) {
        int v = (a_signed ? (int)as[k] : (int)au[k]) - z;
        d[k] = (short)v;
        s += (unsigned)v;
    }
    for (; k < lda; k++) d[k] = 0;
    return (int)s;
}

/* c[r][0..1] = Σ over k pairs of row r's pair · the panel's pair, for QMR rows */
OX_INLINE void tile(int kp, const short* const* a, const short* bp, v128_t c[QMR][2]) {
    for (int r = 0; r < QMR; r++) c[r][0] = c[r][1] = wasm_i32x4_splat(0);
    for (int q = 0; q < kp; q++) {
        v128_t b0 = wasm_v128_load(bp + q * 2 * QNR), b1 = wasm_v128_load(bp + q * 2 * QNR + 8);
        for (int r = 0; r < QMR; r++) {
            v128_t av = wasm_v128_load32_splat(a[r] + 2 * q);
            c[r][0] = wasm_i32x4_add(c[r][0], wasm_i32x4_dot_i16x8(av, b0));
            c[r][1] = wasm_i32x4_add(c[r][1], wasm_i32x4_dot_i16x8(av, b1));
        }
    }
}

/* MatMulInteger: (A − a_zero) · (B − b_zero) with A row-major M×K (uint8, or int8 when a_signed), a_zero per row
 * (az[i · az_stride]; az_stride 0: one value; az NULL: none), B packed by ox_qgemm_pack_b, b_zero per column (bz[n],
 * NULL: none). Into int32 Y (M×N row-major) when YF is NULL; else into float32 YF as float(acc) · scale + bias
 * (scale one value, scale_step 0, or one per column, 1; bias per column or NULL). scratch: ox_qgemm_scratch_floats. */
OX_EXPORT void ox_qgemm(int M, int N, int K, const void* A, int a_signed, const int* az, int az_stride,
                        const short* PB, const int* bz, int* Y, const float* scale, int scale_step, const float* bias,
                        float* YF, float* scratch) {
    int kp = kpairs(K), lda = 2 * kp;
    short* a16 = (short*)scratch;
    int* rs = (int*)(scratch + (M * lda * 2 + 3) / 4);
    for (int i = 0; i < M; i++)
        rs[i] = widen_row(K, lda, (const char*)A + i * K, a_signed, az ? az[i * az_stride] : 0,
                          a16 + i * lda);
    for (int n0 = 0; n0 < N; n0 += QNR) {  /* a panel stays in cache while the row blocks pass */
        const short* bp = PB + (n0 / QNR) * kp * 2 * QNR;
        int w = N - n0 < QNR ? N - n0 : QNR;
        v128_t vbz[2], vsc[2], vbias[2];
        for (int v = 0; v < 2; v++) {  /* per-column epilogue operands, zero past N */
            int tmpi[4] = {0, 0, 0, 0};
            float tsc[4] = {0, 0, 0, 0}, tb[4] = {0, 0, 0, 0};
            for (int j = 0; j < 4 && 4 * v + j < w; j++) {
                int n = n0 + 4 * v + j;
                tmpi[j] = bz ? bz[n] : 0;
                tsc[j] = scale ? scale[scale_step ? n : 0] : 0.f;
                tb[j] = bias ? bias[n] : 0.f;
            }
            vbz[v] = wasm_v128_load(tmpi);
            vsc[v] = wasm_v128_load(tsc);
            vbias[v] = wasm_v128_load(tb);
        }
        for (int i0 = 0; i0 < M; i0 += QMR) {
            int mr = M - i0 < QMR ? M - i0 : QMR;
            const short* rows[QMR];
            for (int r = 0; r < QMR; r++) rows[r] = a16 + (i0 + (r < mr ? r : mr - 1)) * lda;
            v128_t c[QMR][2];
            tile(kp, rows, bp, c);
            for (int r = 0; r < mr; r++) {
                v128_t out[2];
                for (int v = 0; v < 2; v++) {
                    v128_t acc = c[r][v];
                    if (bz) acc = wasm_i32x4_sub(acc, wasm_i32x4_mul(vbz[v], wasm_i32x4_splat(rs[i0 + r])));
                    if (YF) {
                        v128_t f = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), vsc[v]);
                        out[v] = bias ? wasm_f32x4_add(f, vbias[v]) : f;
                    } else {
                        out[v] = acc;
                    }
                }
                void* dst = YF ? (void*)(YF + (i0 + r) * N + n0) : (void*)(Y + (i0 + r) * N + n0);
                if (w == QNR) {
                    wasm_v128_store(dst, out[0]);
                    wasm_v128_store((char*)dst + 16, out[1]);
                } else {
                    int lanes[QNR];
                    wasm_v128_store(lanes, out[0]);
                    wasm_v128_store(lanes + 4, out[1]);
                    for (int j = 0; j < w; j++) ((int*)dst)[j] = lanes[j];
                }
            }
        }
    }
}

/* DynamicQuantizeLinear of n float32 X into uint8 Y, *scale, *zero. 0, or 1 when X holds a NaN or an infinity
 * (nothing written: the caller's reference kernel defines those). */
OX_EXPORT int ox_dynamic_quantize(int n, const float* X, unsigned char* Y, float* scale, unsigned char* zero) {
    const f4 big = SPLAT(3.40282347e+38f);
    f4 vlo = SPLAT(0.f), vhi = vlo;
    v128_t ok = wasm_i32x4_splat(-1);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        f4 v = LD(X + i);
        ok = wasm_v128_and(ok, wasm_f32x4_le(wasm_f32x4_abs(v), big));
        vlo = wasm_f32x4_pmin(v, vlo);  /* (ok has caught any NaN) */
        vhi = wasm_f32x4_pmax(v, vhi);
    }
    if (!wasm_i32x4_all_true(ok)) return 1;
    float lo = 0.f, hi = 0.f;  /* the range always includes 0 */
    float l4[4] = {wasm_f32x4_extract_lane(vlo, 0), wasm_f32x4_extract_lane(vlo, 1), wasm_f32x4_extract_lane(vlo, 2),
                   wasm_f32x4_extract_lane(vlo, 3)};
    float h4[4] = {wasm_f32x4_extract_lane(vhi, 0), wasm_f32x4_extract_lane(vhi, 1), wasm_f32x4_extract_lane(vhi, 2),
                   wasm_f32x4_extract_lane(vhi, 3)};
    for (int j = 0; j < 4; j++) {
        lo = l4[j] < lo ? l4[j] : lo;
        hi = h4[j] > hi ? h4[j] : hi;
    }
    for (; i < n; i++) {
        float v = X[i];
        if (!(__builtin_fabsf(v) <= 3.40282347e+38f)) return 1;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    float s = hi == lo ? 1.f / 255.f : (hi - lo) / 255.f;
    float z0 = 0.f - lo / s;
    float zf = __builtin_rintf(z0 < 0.f ? 0.f : z0 > 255.f ? 255.f : z0);
    *scale = s;
    *zero = (unsigned char)zf;
    /* clamp(rint(x / s) + z, 0, 255) == rint(clamp(x / s, −z, 255 − z)) + z: z is a whole number */
    float qlo = -zf, qhi = 255.f - zf;
    const f4 vs = SPLAT(s), vz = SPLAT(zf), vql = SPLAT(qlo), vqh = SPLAT(qhi);
    i = 0;
    for (; i + 16 <= n; i += 16) {
        v128_t q[4];
        for (int u = 0; u < 4; u++) {
            f4 v = wasm_f32x4_div(LD(X + i + 4 * u), vs);
            v = wasm_f32x4_pmin(wasm_f32x4_pmax(v, vql), vqh);
            q[u] = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(wasm_f32x4_nearest(v), vz));
        }
        v128_t w = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(q[0], q[1]), wasm_i16x8_narrow_i32x4(q[2], q[3]));
        wasm_v128_store(Y + i, w);
    }
    for (; i < n; i++) {
        float v = X[i] / s;
        v = v < qlo ? qlo : v > qhi ? qhi : v;
        Y[i] = (unsigned char)(__builtin_rintf(v) + zf);
    }
    return 0;
}
