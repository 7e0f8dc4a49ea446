/* The LSTM recurrence of the wasm kernels (ONNX gate order i, o, f, c; sigmoid / tanh / tanh; no peepholes, clip or
 * coupled gate) over input projections computed beforehand (the WASM EP's GEMM): per step and batch row,
 * z = xw[t] + h @ Rᵀ accumulated row by row of Rᵀ (vectorised over the 4H gate columns), then the gates, c and h. */
#include "ox_kernels.h"

/* xw: [nd][T][B][4H] (each direction's steps in the order it processes them, both biases included); rt: [nd][H][4H]
 * (Rᵀ per direction); h0, c0: [nd][B][H] or NULL (zeros); hs: [T][nd][B][H], each step's h in processing order;
 * hT, cT: [nd][B][H], the last step's h and c (h0 / c0 when T is 0); z: scratch of 4H + 4 floats. */
OX_EXPORT void ox_lstm(int T, int B, int H, int nd, const float* xw, const float* rt, const float* h0, const float* c0,
                       float* hs, float* hT, float* cT, float* z) {
    int G = 4 * H;
    for (int d = 0; d < nd; d++) {
        float* c = cT + d * B * H;
        float* hl = hT + d * B * H;
        for (int k = 0; k < B * H; k++) {
            c[k] = c0 ? c0[d * B * H + k] : 0.f;
            hl[k] = h0 ? h0[d * B * H + k] : 0.f;
        }
        const float* r = rt + d * H * G;
        for (int t = 0; t < T; t++) {
            for (int b = 0; b < B; b++) {
                const float* hp = t ? hs + (((t - 1) * nd + d) * B + b) * H : hl + b * H;
                const float* x = xw + ((d * T + t) * B + b) * G;
                int j = 0;
                for (; j + 4 <= G; j += 4) ST(z + j, LD(x + j));
                for (; j < G; j++) z[j] = x[j];
                for (int k = 0; k < H; k++) {
                    f4 hk = SPLAT(hp[k]);
                    const float* rk = r + k * G;
                    for (j = 0; j + 4 <= G; j += 4) ST(z + j, VFMA(hk, LD(rk + j), LD(z + j)));
                    for (; j < G; j++) z[j] += hp[k] * rk[j];
                }
                float* cb = c + b * H;
                float* hn = hs + ((t * nd + d) * B + b) * H;
                for (j = 0; j < H; j += 4) {  /* (a last partial vector reads z's spare floats and is cut on store) */
                    f4 ig = v_sigmoid(LD(z + j)), og = v_sigmoid(LD(z + H + j)), fg = v_sigmoid(LD(z + 2 * H + j));
                    f4 gc = v_tanh(LD(z + 3 * H + j));
                    if (j + 4 <= H) {
                        f4 cv = wasm_f32x4_add(wasm_f32x4_mul(fg, LD(cb + j)), wasm_f32x4_mul(ig, gc));
                        ST(cb + j, cv);
                        ST(hn + j, wasm_f32x4_mul(og, v_tanh(cv)));
                        continue;
                    }
                    float cl[4] = {0, 0, 0, 0}, hv[4];
                    for (int u = 0; j + u < H; u++) cl[u] = cb[j + u];
                    f4 cv = wasm_f32x4_add(wasm_f32x4_mul(fg, LD(cl)), wasm_f32x4_mul(ig, gc));
                    ST(cl, cv);
                    ST(hv, wasm_f32x4_mul(og, v_tanh(cv)));
                    for (int u = 0; j + u < H; u++) {
                        cb[j + u] = cl[u];
                        hn[j + u] = hv[u];
                    }
                }
            }
        }
        if (T)
            for (int b = 0; b < B; b++)
                for (int k = 0; k < H; k++) hl[b * H + k] = hs[(((T - 1) * nd + d) * B + b) * H + k];
    }
}
