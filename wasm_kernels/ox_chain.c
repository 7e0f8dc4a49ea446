/* A chain of kernel calls run from one call (issue 16 item 1): the WASM EP lowers consecutive nodes of a plan whose
 * shapes are fixed into instructions over one arena (py_engine/onnxide/eps/wasm_chain.py), and ox_chain_run calls
 * the module's kernels in turn, so Python runs only at the chain's borders. Tensors are indices into a table: a byte
 * offset into the run's arena (>= 0), or -(i + 1) for the run's i-th external pointer (chain inputs read in place,
 * constants, packed weights). Scratch lives in the arena too: nothing is allocated here. */
#include "ox_kernels.h"

enum { OP_GEMM = 1, OP_GEMM_PB, OP_CONV, OP_WINOGRAD, OP_POOL, OP_GPOOL, OP_UPSAMPLE, OP_SOFTMAX, OP_ROWNORM,
       OP_AFFINE, OP_UNARY, OP_BINARY, OP_STRIDED, OP_FILL, OP_ATTENTION, OP_DQ, OP_QGEMM,
       OP_LSTM };

/* one instruction: 42 int32 words (onnxide.plan.chains.Layout with an int32 word writes them) */
typedef struct {
    int op;
    int p[24];       /* sizes and geometry, per op */
    int t[12];       /* tensor indices into the table, -1 for none */
    float f[4];      /* alpha, beta / the activation's parameters, an epsilon or a value at f[2] */
    int act;         /* activation code (ox_act_codes.h) */
} ox_instr;

typedef struct {
    const int* off;
    char* arena;
    float* const* ext;
} table;

OX_INLINE float* tensor(const table* tb, int t) {
    if (t < 0) return 0;
    int o = tb->off[t];
    return o >= 0 ? (float*)(tb->arena + o) : tb->ext[-o - 1];
}

#define T(i) tensor(&tb, in->t[i])

/* y[y_off + sum i_d * ys_d] = x[x_off + sum i_d * xs_d] over dims[0..rank) (up to 6, strides in floats): Transpose,
 * Slice, Expand, one input of a Concat, a Pad's interior */
static void strided_copy(int rank, const int* dims, const int* xs, const int* ys, const float* x, float* y) {
    int idx[6] = {0, 0, 0, 0, 0, 0};
    long total = 1;
    for (int d = 0; d < rank; d++) total *= dims[d];
    if (!total) return;
    int inner = dims[rank - 1], xi = xs[rank - 1], yi = ys[rank - 1];
    for (long done = 0; done < total; done += inner) {
        long xo = 0, yo = 0;
        for (int d = 0; d < rank - 1; d++) { xo += (long)idx[d] * xs[d]; yo += (long)idx[d] * ys[d]; }
        const float* src = x + xo;
        float* dst = y + yo;
        if (xi == 1 && yi == 1) __builtin_memcpy(dst, src, (unsigned long)inner * sizeof(float));
        else for (int j = 0; j < inner; j++) dst[(long)j * yi] = src[(long)j * xi];
        for (int d = rank - 2; d >= 0; d--) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
    }
}

/* MultiHeadAttention of 3-D q (B, S, N*H), k (B, T, N*H), v (B, T, N*HV), an optional bias (b, n, S, T) with
 * b in {1, B}, n in {1, N}: per batch entry, the scores of every head (one batched GEMM over strided views, scale
 * and bias in the epilogue), a row softmax, the context written into the merged (B, S, N*HV) output */
static void attention(const int* p, const float* q, const float* k, const float* v, const float* bias, float* y,
                      float* scores, float* scratch, float scale) {
    int B = p[0], S = p[1], T = p[2], N = p[3], H = p[4], HV = p[5], bias_b = p[6], bias_h = p[7];
    int D = N * H, DV = N * HV;
    for (int i = 0; i < B; i++) {
        const float* bi = bias ? bias + (bias_b ? (long)i * (bias_h ? N : 1) * S * T : 0) : 0;
        ox_gemm(N, S, T, H, q + (long)i * S * D, D, 1, H, k + (long)i * T * D, 1, D, H, scores, T, S * T, scale, bi,
                T, 1, bias_h ? S * T : 0, 1.f, 0, 0.f, 0.f, scratch);
        ox_softmax(N * S, T, scores, scores, 0);
        ox_gemm(N, S, HV, T, scores, T, 1, S * T, v + (long)i * T * DV, DV, 1, HV, y + (long)i * S * DV, DV, HV, 1.f,
                0, 0, 0, 0, 1.f, 0, 0.f, 0.f, scratch);
    }
}

/* A DynamicQuantizeLinear result in the arena (OP_DQ writes it, OP_QGEMM reads it): the scale, the zero point, then
 * the uint8 values from byte 16 */
typedef struct {
    float scale;
    int zero;
    int pad[2];
} dq_head;

/* com.microsoft DynamicQuantizeMatMul's GEMM of quantized x (dq_head and its M·K values) by B packed by
 * ox_qgemm_pack_b: multipliers a_scale · b_scale[n] in float32, then the int8 GEMM with the float epilogue. scratch
 * (ox_qgemm_f32_scratch_floats): the N multipliers, then ox_qgemm's scratch. */
OX_EXPORT int ox_qgemm_f32_scratch_floats(int M, int N, int K) { return N + ox_qgemm_scratch_floats(M, K); }

static void dq_gemm(const int* p, const dq_head* xq, const short* pb, const int* bz, const float* b_scale,
                    const float* bias, float* y, float* scratch) {
    int M = p[0], N = p[1], K = p[2], scale_step = p[3];
    float* mult = scratch;
    for (int j = 0; j < (scale_step ? N : 1); j++) mult[j] = xq->scale * b_scale[j];
    ox_qgemm(M, N, K, xq + 1, 0, &xq->zero, 0, pb, bz, 0, mult, scale_step, bias, y, mult + N);
}

/* Runs instructions [0, n) over the arena and external pointers. Returns -1 - i for an unknown op at instruction
 * i, 1 + i when instruction i found input only the steps' own kernels define (a NaN or an infinity to quantize),
 * else 0. */
OX_EXPORT int ox_chain_run(const ox_instr* prog, int n, const int* off, char* arena, float* const* ext) {
    table tb = {off, arena, ext};
    for (int i = 0; i < n; i++) {
        const ox_instr* in = prog + i;
        const int* p = in->p;
        const float* f = in->f;
        switch (in->op) {
        case OP_GEMM:  /* p: batch M N K rsa csa sA rsb csb sB ldc sC bsm bsn sBias; t: A B C bias scratch */
            ox_gemm(p[0], p[1], p[2], p[3], T(0), p[4], p[5], p[6], T(1), p[7], p[8], p[9], T(2), p[10], p[11], f[0],
                    T(3), p[12], p[13], p[14], f[1], in->act, f[2], f[3], T(4));
            break;
        case OP_GEMM_PB:  /* as OP_GEMM, B packed by ox_gemm_pack_b (p[7..9] unused) */
            ox_gemm_pb(p[0], p[1], p[2], p[3], T(0), p[4], p[5], p[6], T(1), T(2), p[10], p[11], f[0], T(3), p[12],
                       p[13], p[14], f[1], in->act, f[2], f[3], T(4));
            break;
        case OP_CONV:  /* p: N C H W M KH KW SH SW DH DW PT PL OH OW group; t: X W bias Y scratch */
            ox_conv2d(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14],
                      p[15], T(0), T(1), T(2), T(3), in->act, f[0], f[1], T(4));
            break;
        case OP_WINOGRAD:  /* p: N C H W M PT PL OH OW; t: X W bias Y scratch */
            ox_conv3x3_wino(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], T(0), T(1), T(2), T(3), in->act,
                            f[0], f[1], T(4));
            break;
        case OP_POOL:  /* p: NC H W KH KW SH SW DH DW PT PL PB PR OH OW is_max count_include_pad; t: X Y scratch */
            ox_pool2d(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14],
                      p[15], p[16], T(0), T(1), T(2));
            break;
        case OP_GPOOL: ox_global_pool(p[0], p[1], T(0), T(1), p[2]); break;
        case OP_UPSAMPLE: ox_upsample_nearest(p[0], p[1], p[2], p[3], p[4], T(0), T(1)); break;
        case OP_SOFTMAX: ox_softmax(p[0], p[1], T(0), T(1), p[2]); break;
        case OP_ROWNORM:  /* p: rows D per_row C; t: X Y scale bias; f[2]: epsilon */
            ox_rownorm(p[0], p[1], T(0), T(1), f[2], T(2), T(3), p[2], p[3], 0, 0);
            break;
        case OP_AFFINE:  /* p: N C HW; t: X m s t Y */
            ox_channel_affine(p[0], p[1], p[2], T(0), T(1), T(2), T(3), T(4), in->act, f[0], f[1]);
            break;
        case OP_UNARY: ox_unary(p[0], T(0), T(1), in->act, f[0], f[1]); break;
        case OP_BINARY: ox_binary(p[0], p + 1, T(0), T(1), T(2)); break;  /* p: op, dims[4] sa[4] sb[4] */
        case OP_STRIDED:  /* p: rank, x offset, y offset, dims[6], x strides[6], y strides[6] (floats) */
            strided_copy(p[0], p + 3, p + 9, p + 15, T(0) + p[1], T(1) + p[2]);
            break;
        case OP_FILL: {  /* p: n; f[2]: the value */
            float* y = T(0);
            for (int k = 0; k < p[0]; k++) y[k] = f[2];
            break;
        }
        case OP_ATTENTION:  /* p: B S T N H HV bias_b bias_h; t: q k v bias out scores scratch; f[2]: scale */
            attention(p, T(0), T(1), T(2), T(3), T(4), T(5), T(6), f[2]);
            break;
        case OP_DQ: {  /* p: n; t: x, its dq_head and values */
            dq_head* h = (dq_head*)T(1);
            unsigned char zero;
            if (ox_dynamic_quantize(p[0], T(0), (unsigned char*)(h + 1), &h->scale, &zero)) return 1 + i;
            h->zero = zero;
            break;
        }
        case OP_QGEMM:  /* p: M N K scale_step; t: x's dq_head, B (packed), bz, b_scale, bias, y, scratch */
            dq_gemm(p, (const dq_head*)T(0), (const short*)T(1), (const int*)T(2), T(3), T(4), T(5), T(6));
            break;
        case OP_LSTM:  /* p: T B H nd; t: xw rt h0 c0 Y Y_h Y_c scratch (4H + 4 floats) */
            ox_lstm(p[0], p[1], p[2], p[3], T(0), T(1), T(2), T(3), T(4), T(5), T(6), T(7));
            break;
        default: return -1 - i;
        }
    }
    return 0;
}
