/* A chain of kernel calls run from one call (issue 16 item 1): the native EP lowers consecutive nodes of a plan whose
 * shapes are fixed into instructions over one arena, and nx_chain_run calls each kernel in turn, so Python runs only at
 * the chain's borders. Tensors are indices into a table: a byte offset into the run's arena (>= 0), or -(i + 1) for
 * the run's i-th external pointer (chain inputs and outputs, constants, packed weights). */
#include <string.h>
#include "nx_math.h"
#include "nx_kernels.h"

enum { OP_GEMM = 1, OP_ACT, OP_BIAS_ACT, OP_BINARY, OP_SOFTMAX, OP_LAYERNORM, OP_AFFINE, OP_MAXPOOL, OP_GAVG,
       OP_DWCONV, OP_CONV_SHIFTED, OP_WINOGRAD, OP_COPY, OP_STRIDED, OP_UPSAMPLE, OP_ATTENTION, OP_FILL,
       OP_LSTM, OP_DQ, OP_QGEMM };

/* one instruction: 40 longs (onnxide_native/chain.py writes them) */
typedef struct {
    long op;
    long p[24];      /* sizes and geometry, per op */
    long t[12];      /* tensor indices into the table, -1 for none */
    float f[4];      /* the activation's two parameters, an epsilon */
    long act;        /* activation code (nx_act_codes.h) */
} nx_instr;

typedef struct {
    const long* off;
    char* arena;
    void* const* ext;
} table;

NX_INLINE float* tensor(const table* tb, long t) {
    if (t < 0) return NULL;
    long o = tb->off[t];
    return o >= 0 ? (float*)(tb->arena + o) : (float*)tb->ext[-o - 1];
}

#define T(i) tensor(&tb, in->t[i])

/* y[out_off + sum i_d * ys_d] = x[in_off + sum i_d * xs_d] over dims[0..rank) (up to 6; strides in floats, the last
 * dim's inner loop contiguous on the output side when ys is 1): Transpose, Slice, one input of a Concat */
static void strided_copy(long rank, const long* dims, const long* xs, const long* ys, const float* x, float* y) {
    long idx[6] = {0}, total = 1;
    for (long d = 0; d < rank; d++) total *= dims[d];
    if (!total) return;
    long inner = dims[rank - 1], xi = xs[rank - 1], yi = ys[rank - 1];
    for (long done = 0; done < total; done += inner) {
        long xo = 0, yo = 0;
        for (long d = 0; d < rank - 1; d++) { xo += idx[d] * xs[d]; yo += idx[d] * ys[d]; }
        const float* src = x + xo;
        float* dst = y + yo;
        if (xi == 1 && yi == 1) memcpy(dst, src, (size_t)inner * sizeof(float));
        else for (long j = 0; j < inner; j++) dst[j * yi] = src[j * xi];
        for (long d = rank - 2; d >= 0; d--) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
    }
}

/* A DynamicQuantizeLinear result in the arena (OP_DQ writes it, OP_QGEMM reads it): the scale, the zero point, then
 * the uint8 values from byte 16 */
typedef struct {
    float scale;
    int32_t zero;
    int32_t pad[2];
} dq_head;

/* com.microsoft DynamicQuantizeMatMul's GEMM of quantized x (dq_head and its values) by B packed by
 * nx_qgemm_pack_b: multipliers a_scale · b_scale[n] in float32 into mult, then the int8 GEMM with the float epilogue */
static int dq_gemm(const long* p, const dq_head* xq, const int16_t* bp, const int32_t* bz, const float* b_scale,
                   const float* bias, float* y, float* mult, int threads) {
    long N = p[1], scale_step = p[3];
    for (long j = 0; j < (scale_step ? N : 1); j++) mult[j] = xq->scale * b_scale[j];
    return nx_qgemm_f32(p[0], N, p[2], xq + 1, 0, &xq->zero, 0, bp, bz, mult, scale_step, bias, 0, 0.f, 0.f, y,
                        threads);
}

/* Runs instructions [0, n) over the arena and external pointers. Returns -1 - i when instruction i could not get
 * scratch memory, 1 + i when it found input only the steps' own kernels define (a NaN or an infinity to quantize),
 * else 0. */
NX_EXPORT int nx_chain_run(const nx_instr* prog, long n, const long* off, char* arena, void* const* ext, int threads) {
    table tb = {off, arena, ext};
    for (long i = 0; i < n; i++) {
        const nx_instr* in = prog + i;
        const long* p = in->p;
        int act = (int)in->act, bad = 0;
        float fa = in->f[0], fb = in->f[1];
        switch (in->op) {
        case OP_GEMM: {  /* p: M N K lda ldb ldc ldr batch a_step b_step c_step res_step (floats) */
            const float *a = T(0), *b = T(2), *res = T(7);
            float* c = T(4);
            for (long k = 0; k < p[7] && !bad; k++)
                bad = nx_gemm(p[0], p[1], p[2], a ? a + k * p[8] : NULL, p[3], T(1), b ? b + k * p[9] : NULL, p[4],
                              T(3), c + k * p[10], p[5], T(5), T(6), res ? res + k * p[11] : NULL, p[6], act, fa, fb,
                              T(8), threads);
            break;
        }
        case OP_ACT: nx_act(p[0], T(0), T(1), T(2), act, fa, fb, threads); break;
        case OP_BIAS_ACT: nx_bias_act(p[0], p[1], T(0), T(1), T(2), act, fa, fb, threads); break;
        case OP_BINARY: nx_binary((int)p[0], (int)p[1], p[2], p[3], p[4], (int)p[5], T(0), T(1), T(2), threads); break;
        case OP_SOFTMAX: nx_softmax(p[0], p[1], T(0), T(1), 1.f, NULL, 1, 1, 0, 0, (int)p[2], threads); break;
        case OP_LAYERNORM:  /* t: x gamma beta y skip bias */
            nx_layernorm(p[0], p[1], T(0), T(4), T(5), T(1), T(2), in->f[2], T(3), NULL, NULL, NULL, threads);
            break;
        case OP_AFFINE: nx_channel_affine(p[0], p[1], p[2], T(0), T(1), T(2), T(3), threads); break;
        case OP_MAXPOOL:
            nx_maxpool(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], T(0), T(1),
                       threads);
            break;
        case OP_GAVG: nx_global_avg(p[0], p[1], T(0), T(1), threads); break;
        case OP_DWCONV:
            bad = nx_dwconv(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13],
                            T(0), T(1), T(2), T(3), act, fa, fb, threads);
            break;
        case OP_CONV_SHIFTED: {  /* p: C H W KH KW SH SW DH DW PT PL OH OW M batch x_step y_step pooled_step
                                  * copies (of the planes in the scratch); t: x, packed weights, y, bias, residual,
                                  * scratch, y's 2×2 max pool (or -1) */
            const float *x = T(0), *res = T(4);
            float *y = T(2), *pooled = T(6);
            for (long k = 0; k < p[14] && !bad; k++)
                bad = nx_conv_shifted(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12],
                                      x + k * p[15], p[13], T(1), y + k * p[16], T(3), res ? res + k * p[16] : NULL,
                                      act, fa, fb, T(5), p[18], pooled ? pooled + k * p[17] : NULL, threads);
            break;
        }
        case OP_WINOGRAD:
            bad = nx_winograd_f4(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], T(0), T(1), T(2), T(3), T(4),
                                 T(5), act, fa, fb, threads);
            break;
        case OP_COPY: memcpy(T(1), T(0), (size_t)p[0]); break;
        case OP_STRIDED:  /* p: rank, x offset, y offset, dims[6], x strides[6], y strides[6] (floats) */
            strided_copy(p[0], p + 3, p + 9, p + 15, T(0) + p[1], T(1) + p[2]);
            break;
        case OP_FILL: {  /* p: n; f[2]: the value */
            float* y = T(0);
            for (long k = 0; k < p[0]; k++) y[k] = in->f[2];
            break;
        }
        case OP_UPSAMPLE: nx_upsample_nearest(p[0], p[1], p[2], p[3], p[4], T(0), T(1), threads); break;
        case OP_ATTENTION:  /* p: B S T N H HV bias_b bias_h; t: q k v bias out; f[2]: scale */
            bad = nx_attention(p[0], p[1], p[2], p[3], p[4], p[5], T(0), T(1), T(2), T(3), (int)p[6], (int)p[7],
                               in->f[2], T(4), threads);
            break;
        case OP_LSTM:  /* p: T B H nd; t: xw rt h0 c0 hs hT cT (nx_rnn.c's arguments) */
            bad = nx_lstm(p[0], p[1], p[2], p[3], T(0), T(1), T(2), T(3), T(4), T(5), T(6), threads);
            break;
        case OP_DQ: {  /* p: n; t: x, its dq_head and values */
            dq_head* h = (dq_head*)T(1);
            uint8_t zero;
            if (nx_dynamic_quantize(p[0], T(0), (uint8_t*)(h + 1), &h->scale, &zero, threads)) return 1 + (int)i;
            h->zero = zero;
            break;
        }
        case OP_QGEMM:  /* p: M N K scale_step; t: x's dq_head, B (packed), bz, b_scale, bias, y, multipliers */
            bad = dq_gemm(p, (const dq_head*)T(0), (const int16_t*)T(1), (const int32_t*)T(2), T(3), T(4), T(5), T(6),
                          threads);
            break;
        default: return -1 - (int)i;
        }
        if (bad) return -1 - (int)i;
    }
    return 0;
}
