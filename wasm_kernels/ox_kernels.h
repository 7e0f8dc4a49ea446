/* The exported kernels of the onnxide wasm module, declared once: each kernel file includes this header (so the
 * compiler checks its definition against it) and ox_chain.c calls them from one program. The Python side mirrors
 * these signatures in SIGNATURES of py_engine/onnxide/eps/wasm_runtime.py. */
#ifndef OX_KERNELS_H
#define OX_KERNELS_H

#include "ox_common.h"

OX_EXPORT void ox_gemm(int batch, int M, int N, int K, const float* A, int rsa, int csa, int sA, const float* B,
                       int rsb, int csb, int sB, float* C, int ldc, int sC, float alpha, const float* bias, int bsm,
                       int bsn, int sBias, float beta, int act, float a0, float a1, float* scratch);
OX_EXPORT int ox_gemm_scratch_floats(void);
OX_EXPORT int ox_gemm_packed_b_floats(int K, int N);
OX_EXPORT void ox_gemm_pack_b(int K, int N, const float* B, int rsb, int csb, float* dst);
OX_EXPORT void ox_gemm_pb(int batch, int M, int N, int K, const float* A, int rsa, int csa, int sA, const float* PB,
                          float* C, int ldc, int sC, float alpha, const float* bias, int bsm, int bsn, int sBias,
                          float beta, int act, float a0, float a1, float* scratch);
OX_EXPORT int ox_conv2d_scratch_floats(int C, int M, int group, int OH, int OW, int KH, int KW, int SH, int SW,
                                       int DH, int DW);
OX_EXPORT void ox_conv2d(int N, int C, int H, int W, int M, int KH, int KW, int SH, int SW, int DH, int DW,
                         int PT, int PL, int OH, int OW, int group, const float* X, const float* Wt,
                         const float* bias, float* Y, int act, float a0, float a1, float* scratch);
OX_EXPORT int ox_conv3x3_wino_scratch_floats(int C, int M, int OH, int OW);
OX_EXPORT void ox_conv3x3_wino(int N, int C, int H, int W, int M, int PT, int PL, int OH, int OW, const float* X,
                               const float* Wt, const float* bias, float* Y, int act, float a0, float a1,
                               float* scratch);
OX_EXPORT int ox_pool2d_scratch_floats(int OH, int OW, int KH, int KW, int SH, int SW, int DH, int DW);
OX_EXPORT void ox_pool2d(int NC, int H, int W, int KH, int KW, int SH, int SW, int DH, int DW, int PT, int PL,
                         int PB, int PR, int OH, int OW, int is_max, int count_include_pad, const float* X, float* Y,
                         float* scratch);
OX_EXPORT void ox_global_pool(int planes, int n, const float* X, float* Y, int is_max);
OX_EXPORT void ox_upsample_nearest(int NC, int H, int W, int FH, int FW, const float* X, float* Y);
OX_EXPORT void ox_softmax(int rows, int n, const float* X, float* Y, int log_softmax);
OX_EXPORT void ox_rownorm(int rows, int D, const float* X, float* Y, float eps, const float* scale,
                          const float* bias, int per_row, int C, float* mean_out, float* rstd_out);
OX_EXPORT void ox_channel_affine(int N, int C, int HW, const float* X, const float* m, const float* s,
                                 const float* t, float* Y, int act, float a0, float a1);
OX_EXPORT void ox_unary(int n, const float* X, float* Y, int act, float a0, float a1);
OX_EXPORT void ox_binary(int op, const int* p, const float* A, const float* B, float* Y);
OX_EXPORT int ox_qgemm_packed_size(int K, int N);
OX_EXPORT int ox_qgemm_scratch_floats(int M, int K);
OX_EXPORT void ox_qgemm_pack_b(int K, int N, const void* B, int b_signed, short* dst);
OX_EXPORT void ox_qgemm(int M, int N, int K, const void* A, int a_signed, const int* az, int az_stride,
                        const short* PB, const int* bz, int* Y, const float* scale, int scale_step, const float* bias,
                        float* YF, float* scratch);
OX_EXPORT int ox_dynamic_quantize(int n, const float* X, unsigned char* Y, float* scale, unsigned char* zero);
OX_EXPORT int ox_qgemm_f32_scratch_floats(int M, int N, int K);
OX_EXPORT void ox_lstm(int T, int B, int H, int nd, const float* xw, const float* rt, const float* h0, const float* c0,
                       float* hs, float* hT, float* cT, float* z);

#endif
