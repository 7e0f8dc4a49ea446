/* Winograd F(2x2, 3x3) convolution for dense 3x3 stride-1 dilation-1 NCHW convolutions: input/weight/output
 * transforms in SIMD (four tiles per vector) around 16 packed GEMMs. Exports ox_conv3x3_wino(+_scratch_floats). */
#include "ox_gemm.h"
#include "ox_kernels.h"

static int pad_w(int tw) { return (tw + 3) / 4 * 8 + 8; }   /* padded plane width: 2 columns per tile + slack */

/* Scratch floats for one call: weight transform, padded plane, input transform, GEMM results, GEMM scratch */
OX_EXPORT int ox_conv3x3_wino_scratch_floats(int C, int M, int OH, int OW) {
    int th = (OH + 1) / 2, tw = (OW + 1) / 2, T = th * tw;
    return 16 * M * C + (2 * th + 2) * pad_w(tw) + 16 * C * T + 16 * M * T + OX_GEMM_SCRATCH + 64;
}

/* U[e][m][c] = (G g G^T)[e] for each 3x3 filter g = Wt[m][c], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] */
static void weight_transform(int M, int C, const float* Wt, float* U) {
    long MC = (long)M * C;
    for (long mc = 0; mc < MC; mc++) {
        const float* g = Wt + mc * 9;
        float t[4][3];
        for (int j = 0; j < 3; j++) {
            t[0][j] = g[j];
            t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
            t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
            t[3][j] = g[6 + j];
        }
        for (int i = 0; i < 4; i++) {
            U[(i * 4 + 0) * MC + mc] = t[i][0];
            U[(i * 4 + 1) * MC + mc] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
            U[(i * 4 + 2) * MC + mc] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
            U[(i * 4 + 3) * MC + mc] = t[i][2];
        }
    }
}

/* B^T d B over one 4-vector row set: r[j] = column j of the 4x4 patch rows (each lane one tile) */
OX_INLINE void bt_cols(const f4* d0, const f4* d1, const f4* d2, const f4* d3, f4* w) {
    /* rows: B^T d (B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]) */
    for (int j = 0; j < 4; j++) {
        w[0 * 4 + j] = wasm_f32x4_sub(d0[j], d2[j]);
        w[1 * 4 + j] = wasm_f32x4_add(d1[j], d2[j]);
        w[2 * 4 + j] = wasm_f32x4_sub(d2[j], d1[j]);
        w[3 * 4 + j] = wasm_f32x4_sub(d1[j], d3[j]);
    }
}

/* V[e][c][t] for one channel plane (padded copy in `pad`, row pitch WP) and every tile t = ty*tw + tx */
static void input_transform(const float* pad, int WP, int th, int tw, long T, float* Vc, long CT) {
    for (int ty = 0; ty < th; ty++) {
        for (int tx = 0; tx < tw; tx += 4) {
            f4 d[4][4];
            for (int r = 0; r < 4; r++) {
                const float* p = pad + (long)(2 * ty + r) * WP + 2 * tx;
                f4 a = LD(p), b = LD(p + 4), c = LD(p + 8);
                d[r][0] = wasm_i32x4_shuffle(a, b, 0, 2, 4, 6);
                d[r][1] = wasm_i32x4_shuffle(a, b, 1, 3, 5, 7);
                f4 a2 = wasm_i32x4_shuffle(a, b, 2, 3, 4, 5), b2 = wasm_i32x4_shuffle(b, c, 2, 3, 4, 5);
                d[r][2] = wasm_i32x4_shuffle(a2, b2, 0, 2, 4, 6);
                d[r][3] = wasm_i32x4_shuffle(a2, b2, 1, 3, 5, 7);
            }
            f4 w[16];
            bt_cols(d[0], d[1], d[2], d[3], w);
            int n = ox_min(4, tw - tx);
            float* v = Vc + (long)ty * tw + tx;
            for (int i = 0; i < 4; i++) {   /* (B^T d) B: columns */
                f4 x0 = w[i * 4 + 0], x1 = w[i * 4 + 1], x2 = w[i * 4 + 2], x3 = w[i * 4 + 3];
                st_part(v + (i * 4 + 0) * CT, wasm_f32x4_sub(x0, x2), n);
                st_part(v + (i * 4 + 1) * CT, wasm_f32x4_add(x1, x2), n);
                st_part(v + (i * 4 + 2) * CT, wasm_f32x4_sub(x2, x1), n);
                st_part(v + (i * 4 + 3) * CT, wasm_f32x4_sub(x1, x3), n);
            }
        }
    }
    (void)T;
}

/* Y tile rows from the 16 GEMM results of one output channel (A^T = [1 1 1 0; 0 1 -1 -1]) */
static void output_transform(const float* Mm, long MT, int th, int tw, float* y, int OH, int OW, float bias, int act,
                             float a0, float a1) {
    f4 vb = SPLAT(bias);
    for (int ty = 0; ty < th; ty++) {
        for (int tx = 0; tx < tw; tx += 4) {
            const float* s = Mm + (long)ty * tw + tx;
            f4 m[16];
            for (int e = 0; e < 16; e++) m[e] = LD(s + e * MT);
            f4 t0[4], t1[4];
            for (int j = 0; j < 4; j++) {
                t0[j] = wasm_f32x4_add(wasm_f32x4_add(m[j], m[4 + j]), m[8 + j]);
                t1[j] = wasm_f32x4_sub(wasm_f32x4_sub(m[4 + j], m[8 + j]), m[12 + j]);
            }
            f4 y00 = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(t0[0], t0[1]), t0[2]), vb);
            f4 y01 = wasm_f32x4_add(wasm_f32x4_sub(wasm_f32x4_sub(t0[1], t0[2]), t0[3]), vb);
            f4 y10 = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(t1[0], t1[1]), t1[2]), vb);
            f4 y11 = wasm_f32x4_add(wasm_f32x4_sub(wasm_f32x4_sub(t1[1], t1[2]), t1[3]), vb);
            if (act) {
                y00 = v_act(y00, act, a0, a1); y01 = v_act(y01, act, a0, a1);
                y10 = v_act(y10, act, a0, a1); y11 = v_act(y11, act, a0, a1);
            }
            int ox = 2 * tx, cols = ox_min(8, OW - ox);
            f4 r0a = wasm_i32x4_shuffle(y00, y01, 0, 4, 1, 5), r0b = wasm_i32x4_shuffle(y00, y01, 2, 6, 3, 7);
            f4 r1a = wasm_i32x4_shuffle(y10, y11, 0, 4, 1, 5), r1b = wasm_i32x4_shuffle(y10, y11, 2, 6, 3, 7);
            float* y0 = y + (long)(2 * ty) * OW + ox;
            st_part(y0, r0a, ox_min(4, cols));
            if (cols > 4) st_part(y0 + 4, r0b, cols - 4);
            if (2 * ty + 1 < OH) {
                st_part(y0 + OW, r1a, ox_min(4, cols));
                if (cols > 4) st_part(y0 + OW + 4, r1b, cols - 4);
            }
        }
    }
}

/* Y[n, m] = act(bias[m] + sum_c conv3x3(X[n, c], Wt[m, c])) with top/left pads PT, PL (bottom/right implied by
 * OH, OW); stride 1, dilation 1, one group. X: N x C x H x W, Wt: M x C x 3 x 3, Y: N x M x OH x OW. */
OX_EXPORT void ox_conv3x3_wino(int N, int C, int H, int W, int M, int PT, int PL, int OH, int OW,
                               const float* X, const float* Wt, const float* bias, float* Y, int act, float a0,
                               float a1, float* scratch) {
    int th = (OH + 1) / 2, tw = (OW + 1) / 2, WP = pad_w(tw), HP = 2 * th + 2;
    long T = (long)th * tw;
    float* U = scratch;
    float* pad = U + 16L * M * C;
    float* V = pad + (long)HP * WP;
    float* Mo = V + 16L * C * T;
    float* gs = (float*)(((unsigned long)(Mo + 16L * M * T) + 63) & ~63UL);
    weight_transform(M, C, Wt, U);
    ox_epi e = {0, 0, 0, 0.f, 0, 0.f, 0.f};
    for (int n = 0; n < N; n++) {
        for (int c = 0; c < C; c++) {
            const float* x = X + ((long)n * C + c) * H * W;
            for (int r = 0; r < HP; r++) {   /* zero-padded plane: the patch of tile (ty, tx) at (2ty, 2tx) */
                float* d = pad + (long)r * WP;
                int ih = r - PT;
                int cnt = (ih < 0 || ih >= H) ? 0 : ox_min(W, WP - PL);
                int q = 0;
                if (cnt <= 0) {
                    for (; q + 4 <= WP; q += 4) ST(d + q, SPLAT(0.f));
                    for (; q < WP; q++) d[q] = 0.f;
                    continue;
                }
                const float* sx = x + (long)ih * W;
                for (; q < PL; q++) d[q] = 0.f;
                int i = 0;
                for (; i + 4 <= cnt; i += 4) ST(d + PL + i, LD(sx + i));
                for (; i < cnt; i++) d[PL + i] = sx[i];
                for (q = PL + cnt; q < WP; q++) d[q] = 0.f;
            }
            input_transform(pad, WP, th, tw, T, V + (long)c * T, (long)C * T);
        }
        for (int k = 0; k < 16; k++) {
            ox_bsrc src = {0};
            src.kind = OX_B_MATRIX;
            src.p = V + (long)k * C * T;
            src.rs = (int)T;
            src.cs = 1;
            ox_gemm_drive(M, (int)T, C, U + (long)k * M * C, C, 1, 1.f, &src, Mo + (long)k * M * T, (int)T, &e, gs);
        }
        for (int m = 0; m < M; m++)
            output_transform(Mo + (long)m * T, (long)M * T, th, tw, Y + ((long)n * M + m) * OH * OW, OH, OW,
                             bias ? bias[m] : 0.f, act, a0, a1);
    }
}
