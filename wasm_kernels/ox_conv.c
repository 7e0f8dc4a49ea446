/* 2-D convolution (NCHW): implicit-im2col packing into the packed GEMM for grouped/dense convolutions, a plain
 * GEMM for 1x1 stride-1 convolutions, and a direct SIMD path for depthwise convolutions. Exports ox_conv2d. */
#include "ox_gemm.h"

/* Direct depthwise convolution of one plane: the input is copied into a zero-padded plane in scratch, then each
 * output row is computed four columns at a time. */
static void dw_plane(const float* x, int H, int W, const float* w, int KH, int KW, int SH, int SW, int DH, int DW,
                     int PT, int PL, float* y, int OH, int OW, float bias, int act, float a0, float a1,
                     float* pad) {
    int HP = (OH - 1) * SH + (KH - 1) * DH + 1;
    int WP = (OW + 3) / 4 * 4 * SW + (KW - 1) * DW + 4;   /* room for the last vector's lanes */
    for (int r = 0; r < HP; r++) {
        float* d = pad + (long)r * WP;
        int ih = r - PT;
        if (ih < 0 || ih >= H) {
            for (int q = 0; q < WP; q++) d[q] = 0.f;
            continue;
        }
        const float* s = x + (long)ih * W;
        for (int q = 0; q < WP; q++) {
            int iw = q - PL;
            d[q] = (iw >= 0 && iw < W) ? s[iw] : 0.f;
        }
    }
    for (int oh = 0; oh < OH; oh++) {
        float* yr = y + (long)oh * OW;
        for (int ow = 0; ow < OW; ow += 4) {
            f4 acc = SPLAT(bias);
            for (int kh = 0; kh < KH; kh++) {
                const float* row = pad + (long)(oh * SH + kh * DH) * WP + ow * SW;
                for (int kw = 0; kw < KW; kw++) {
                    const float* s = row + kw * DW;
                    f4 v;
                    if (SW == 1) v = LD(s);
                    else if (SW == 2) v = wasm_i32x4_shuffle(LD(s), LD(s + 4), 0, 2, 4, 6);
                    else v = wasm_f32x4_make(s[0], s[SW], s[2 * SW], s[3 * SW]);
                    acc = VFMA(v, SPLAT(w[kh * KW + kw]), acc);
                }
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
