/* Prototypes of the exported kernels that other translation units call (nx_chain.c runs them as one program). */
#ifndef NX_KERNELS_H
#define NX_KERNELS_H

#include <stdint.h>

int nx_gemm(long M, long N, long K, const float* a, long lda, const float* ap, const float* b, long ldb,
            const float* bp, float* c, long ldc, const float* bias, const float* row_bias, const float* res, long ldr,
            int act, float alpha, float beta, float* scratch, int threads);
void nx_act(long n, const float* x, float* y, const float* residual, int act, float a, float b, int threads);
void nx_bias_act(long rows, long cols, const float* x, float* y, const float* bias, int act, float a, float b,
                 int threads);
void nx_layernorm(long rows, long cols, const float* x, const float* skip, const float* bias, const float* gamma,
                  const float* beta, float eps, float* y, float* sum_out, float* mean_out, float* inv_std_out,
                  int threads);
void nx_softmax(long rows, long cols, const float* x, float* y, float scale, const float* bias, long heads, long seq,
                int bias_b, int bias_h, int log, int threads);
void nx_binary(int op, int b_first, long outer, long mid, long inner, int b_full, const float* a, const float* b,
               float* y, int threads);
void nx_channel_affine(long n, long c, long hw, const float* x, const float* scale, const float* shift, float* y,
                       int threads);
int nx_dwconv(long N, long C, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW, long PT, long PL,
              long OH, long OW, const float* x, const float* w, const float* bias, float* y, int act, float a, float b,
              int threads);
void nx_maxpool(long planes, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW, long PT, long PL,
                long OH, long OW, const float* x, float* y, int threads);
/* o[0, n) = the 2×2 stride-2 max windows over rows a and b (NaN propagates): nx_maxpool's row of such a pool */
void nx_max_2x2_row(const float* a, const float* b, float* o, long n);
void nx_global_avg(long planes, long hw, const float* x, float* y, int threads);
int nx_conv_shifted(long C, long H, long W, long KH, long KW, long SH, long SW, long DH, long DW, long PT, long PL,
                    long OH, long OW, const float* x, long M, const float* ap, float* y, const float* bias,
                    const float* res, int act, float alpha, float beta, float* scratch, long copies, float* pooled,
                    int threads);
int nx_winograd_f4(long N, long C, long H, long W, long M, long PT, long PL, long OH, long OW, const float* x,
                   const float* up, const float* bias, const float* z, float* y, float* scratch, int act, float a,
                   float b, int threads);
void nx_upsample_nearest(long planes, long H, long W, long fh, long fw, const float* x, float* y, int threads);
int nx_attention(long B, long S, long T, long N, long H, long HV, const float* q, const float* k, const float* v,
                 const float* bias, int bias_b, int bias_h, float scale, float* out, int threads);
int nx_dynamic_quantize(long n, const float* x, uint8_t* y, float* scale, uint8_t* zero, int threads);
int nx_qgemm_f32(long M, long N, long K, const void* a, int a_signed, const int32_t* az, long az_stride,
                 const int16_t* bp, const int32_t* bz, const float* scale, long scale_step, const float* bias, int act,
                 float fa, float fb, float* yf, int threads);
int nx_lstm(long T, long B, long H, long nd, const float* xw, const float* rt, const float* h0, const float* c0,
            float* hs, float* hT, float* cT, int threads);

#endif
