/* 2-D convolution (NCHW): implicit-im2col packing into the packed GEMM for grouped/dense convolutions, a plain
 * GEMM for 1x1 stride-1 convolutions, and a direct SIMD path for depthwise convolutions. Exports ox_conv2d. */
#include "ox_gemm.h"
#include "ox_kernels.h"

/* Zero-padded copy of one input plane (HP x WP, the interior at row PT, column PL): vector copies per row */
static void pad_plane(const float* x, int H, int W, int PT, int PL, int HP, int WP, float* pad) {
    for (int r = 0; r < HP; r++) {
        float* d = pad + (long)r * WP;
        int ih = r - PT;
        int n = (ih < 0 || ih >= H) ? 0 : ox_min(W, WP - PL);
        int q = 0;
        if (n <= 0) {
            for (; q + 4 <= WP; q += 4) ST(d + q, SPLAT(0.f));
            for (; q < WP; q++) d[q] = 0.f;
            continue;
        }
        const float* s = x + (long)ih * W;
        for (; q < PL; q++) d[q] = 0.f;
        float* dd = d + PL;
        int i = 0;
        for (; i + 4 <= n; i += 4) ST(dd + i, LD(s + i));
        for (; i < n; i++) dd[i] = s[i];
        for (q = PL + n; q < WP; q++) d[q] = 0.f;
    }
}

/* input vector of 4 outputs starting at padded column c (stride SW: 1, 2 or other) */
OX_INLINE f4 dw_load(const float* s, int SW) {
    if (SW == 1) return LD(s);
    if (SW == 2) return wasm_i32x4_shuffle(LD(s), LD(s + 4), 0, 2, 4, 6);
    return wasm_f32x4_make(s[0], s[SW], s[2 * SW], s[3 * SW]);
}

/* 3x3 depthwise rows: weights held in registers, 8 outputs (two independent accumulators) per step */
static void dw_rows_3x3(const float* pad, int WP, const float* w, int SH, int SW, int DH, int DW, float* y, int OH,
                        int OW, float bias, int act, float a0, float a1) {
    f4 w0 = SPLAT(w[0]), w1 = SPLAT(w[1]), w2 = SPLAT(w[2]), w3 = SPLAT(w[3]), w4 = SPLAT(w[4]);
    f4 w5 = SPLAT(w[5]), w6 = SPLAT(w[6]), w7 = SPLAT(w[7]), w8 = SPLAT(w[8]), vb = SPLAT(bias);
    for (int oh = 0; oh < OH; oh++) {
        float* yr = y + (long)oh * OW;
        const float* r0 = pad + (long)(oh * SH) * WP;
        const float* r1 = r0 + (long)DH * WP;
        const float* r2 = r1 + (long)DH * WP;
        int ow = 0;
        for (; ow + 8 <= OW; ow += 8) {
            int c = ow * SW, c2 = (ow + 4) * SW;
            f4 a = VFMA(dw_load(r0 + c, SW), w0, vb), b = VFMA(dw_load(r0 + c2, SW), w0, vb);
            a = VFMA(dw_load(r0 + c + DW, SW), w1, a); b = VFMA(dw_load(r0 + c2 + DW, SW), w1, b);
            a = VFMA(dw_load(r0 + c + 2 * DW, SW), w2, a); b = VFMA(dw_load(r0 + c2 + 2 * DW, SW), w2, b);
            a = VFMA(dw_load(r1 + c, SW), w3, a); b = VFMA(dw_load(r1 + c2, SW), w3, b);
            a = VFMA(dw_load(r1 + c + DW, SW), w4, a); b = VFMA(dw_load(r1 + c2 + DW, SW), w4, b);
            a = VFMA(dw_load(r1 + c + 2 * DW, SW), w5, a); b = VFMA(dw_load(r1 + c2 + 2 * DW, SW), w5, b);
            a = VFMA(dw_load(r2 + c, SW), w6, a); b = VFMA(dw_load(r2 + c2, SW), w6, b);
            a = VFMA(dw_load(r2 + c + DW, SW), w7, a); b = VFMA(dw_load(r2 + c2 + DW, SW), w7, b);
            a = VFMA(dw_load(r2 + c + 2 * DW, SW), w8, a); b = VFMA(dw_load(r2 + c2 + 2 * DW, SW), w8, b);
            if (act) { a = v_act(a, act, a0, a1); b = v_act(b, act, a0, a1); }
            ST(yr + ow, a);
            ST(yr + ow + 4, b);
        }
        for (; ow < OW; ow += 4) {
            int c = ow * SW;
            f4 a = VFMA(dw_load(r0 + c, SW), w0, vb);
            a = VFMA(dw_load(r0 + c + DW, SW), w1, a);
            a = VFMA(dw_load(r0 + c + 2 * DW, SW), w2, a);
            a = VFMA(dw_load(r1 + c, SW), w3, a);
            a = VFMA(dw_load(r1 + c + DW, SW), w4, a);
            a = VFMA(dw_load(r1 + c + 2 * DW, SW), w5, a);
            a = VFMA(dw_load(r2 + c, SW), w6, a);
            a = VFMA(dw_load(r2 + c + DW, SW), w7, a);
            a = VFMA(dw_load(r2 + c + 2 * DW, SW), w8, a);
            if (act) a = v_act(a, act, a0, a1);
            st_part(yr + ow, a, OW - ow);
        }
    }
}

/* Direct depthwise convolution of one plane: the input is copied into a zero-padded plane in scratch, then each
 * output row is computed four columns at a time (3x3 kernels: eight, weights in registers). */
static void dw_plane(const float* x, int H, int W, const float* w, int KH, int KW, int SH, int SW, int DH, int DW,
                     int PT, int PL, float* y, int OH, int OW, float bias, int act, float a0, float a1,
                     float* pad) {
    int HP = (OH - 1) * SH + (KH - 1) * DH + 1;
    int WP = (OW + 3) / 4 * 4 * SW + (KW - 1) * DW + 4;   /* room for the last vector's lanes */
    pad_plane(x, H, W, PT, PL, HP, WP, pad);
    if (KH == 3 && KW == 3) {
        dw_rows_3x3(pad, WP, w, SH, SW, DH, DW, y, OH, OW, bias, act, a0, a1);
        return;
    }
    for (int oh = 0; oh < OH; oh++) {
        float* yr = y + (long)oh * OW;
        for (int ow = 0; ow < OW; ow += 4) {
            f4 acc = SPLAT(bias);
            for (int kh = 0; kh < KH; kh++) {
                const float* row = pad + (long)(oh * SH + kh * DH) * WP + ow * SW;
                for (int kw = 0; kw < KW; kw++) acc = VFMA(dw_load(row + kw * DW, SW), SPLAT(w[kh * KW + kw]), acc);
            }
            if (act) acc = v_act(acc, act, a0, a1);
            st_part(yr + ow, acc, OW - ow);
        }
    }
}

/* Scratch floats ox_conv2d needs for these geometries */
OX_EXPORT int ox_conv2d_scratch_floats(int C, int M, int group, int OH, int OW, int KH, int KW, int SH, int SW,
                                       int DH, int DW) {
    if (group == C && M == C) {
        int HP = (OH - 1) * SH + (KH - 1) * DH + 1;
        int WP = (OW + 3) / 4 * 4 * SW + (KW - 1) * DW + 4;
        return HP * WP + 16;
    }
    return OX_GEMM_SCRATCH;
}

/* Y[n, m, oh, ow] = act(bias[m] + sum_{c in group(m), kh, kw} W[m, c, kh, kw] X[n, c, oh*SH - PT + kh*DH, ...]).
 * X: N x C x H x W, Wt: M x (C/group) x KH x KW, Y: N x M x OH x OW, all contiguous; bias may be null. */
OX_EXPORT void ox_conv2d(int N, int C, int H, int W, int M, int KH, int KW, int SH, int SW, int DH, int DW,
                         int PT, int PL, int OH, int OW, int group,
                         const float* X, const float* Wt, const float* bias, float* Y,
                         int act, float a0, float a1, float* scratch) {
    int Cg = C / group, Mg = M / group;
    int K = Cg * KH * KW, P = OH * OW;
    if (group == C && M == C) {
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                dw_plane(X + ((long)n * C + c) * H * W, H, W, Wt + (long)c * KH * KW, KH, KW, SH, SW, DH, DW,
                         PT, PL, Y + ((long)n * M + c) * P, OH, OW, bias ? bias[c] : 0.f, act, a0, a1, scratch);
        return;
    }
    int pointwise = KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT == 0 && PL == 0 && OH == H && OW == W;
    for (int n = 0; n < N; n++) {
        for (int g = 0; g < group; g++) {
            ox_bsrc src = {0};
            src.p = X + ((long)n * C + (long)g * Cg) * H * W;
            if (pointwise) {
                src.kind = OX_B_MATRIX;
                src.rs = H * W;
                src.cs = 1;
            } else {
                src.kind = OX_B_IM2COL;
                src.H = H; src.W = W; src.KH = KH; src.KW = KW; src.SH = SH; src.SW = SW;
                src.DH = DH; src.DW = DW; src.PT = PT; src.PL = PL; src.OW = OW;
            }
            ox_epi e = {bias ? bias + (long)g * Mg : 0, 1, 0, 1.f, act, a0, a1};
            ox_gemm_drive(Mg, P, K, Wt + (long)g * Mg * K, K, 1, 1.f, &src, Y + ((long)n * M + (long)g * Mg) * P,
                          P, &e, scratch);
        }
    }
}
