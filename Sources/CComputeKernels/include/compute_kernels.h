// oneDNN (Debian's libdnnl-dev) behind a small C interface for the reference runtime's fast path:
// convolutions whose kernels oneDNN picks at run time from the CPU's instruction sets (SSE4.1, AVX2,
// AVX-512, AMX, ...; cpuid features, never the CPU's model name), and its single-precision GEMM.
#ifndef COMPUTE_KERNELS_H
#define COMPUTE_KERNELS_H

#include <stddef.h>

/// A 2-D convolution of one `[H, W, C]` image (NHWC with batch 1), created once and run many times.
typedef struct mc_conv mc_conv;

typedef struct {
    int in_h, in_w, in_c;
    int out_h, out_w, out_c;
    int kernel_h, kernel_w;
    int stride_h, stride_w;
    int dilation_h, dilation_w;  // 1 = no dilation
    int pad_top, pad_left, pad_bottom, pad_right;
    int groups;
} mc_conv_shape;

/// Elementwise functions oneDNN applies to the result before it is stored (post-ops), in order.
/// SUM adds what `dst` holds before the run (a residual connection), scaled by alpha.
enum { MC_POST_RELU = 0, MC_POST_CLIP = 1, MC_POST_LINEAR = 2, MC_POST_SUM = 3 };

/// `weights` in Keras' layout `[kernel_h][kernel_w][in_c / groups][out_c]`, `bias` `[out_c]` or NULL.
/// post kinds: RELU(alpha = negative slope), CLIP(alpha = min, beta = max), LINEAR(alpha * x + beta).
/// Returns NULL and a message in `error` when oneDNN refuses the shape.
mc_conv *mc_conv_create(const mc_conv_shape *shape, const float *weights, const float *bias, int post_count, const int *post_kinds,
                        const float *post_alpha, const float *post_beta, char *error, size_t error_size);

/// Runs the convolution: `src` `[in_h][in_w][in_c]`, `dst` `[out_h][out_w][out_c]`, on `threads` threads
/// (of the calling thread's OpenMP team). Safe to call from several threads at once. 0 on success.
int mc_conv_run(const mc_conv *conv, const float *src, float *dst, int threads, char *error, size_t error_size);

void mc_conv_destroy(mc_conv *conv);

/// Bytes the convolution holds for each thread that runs it (its oneDNN scratchpad, kept with the thread's slot).
size_t mc_conv_scratchpad_bytes(const mc_conv *conv);

/// Max or average pooling of one `[H, W, C]` image (NHWC, batch 1); average excludes the padding.
typedef struct mc_pool mc_pool;

typedef struct {
    int in_h, in_w, channels, out_h, out_w;
    int kernel_h, kernel_w, stride_h, stride_w;
    int pad_top, pad_left, pad_bottom, pad_right;
    int is_max;
} mc_pool_shape;

mc_pool *mc_pool_create(const mc_pool_shape *shape, char *error, size_t error_size);
/// Runs on the calling thread; safe to call from several threads at once. 0 on success.
int mc_pool_run(const mc_pool *pool, const float *src, float *dst, char *error, size_t error_size);
void mc_pool_destroy(mc_pool *pool);
/// Bytes the pooling holds for each thread that runs it (its oneDNN scratchpad).
size_t mc_pool_scratchpad_bytes(const mc_pool *pool);

/// Row-major C = A (M x K) B (K x N) + beta C, oneDNN's sgemm on `threads` threads. 0 on success.
int mc_sgemm(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc, int threads);

/// The instruction set oneDNN's kernels use on this CPU (`avx512_core_amx`, `avx2`, ...), after any
/// `ONEDNN_MAX_CPU_ISA` cap, and oneDNN's version.
const char *mc_cpu_isa(void);
const char *mc_dnnl_version(void);

/// Raises glibc's mmap and trim thresholds (to 32 MiB and 256 MiB) so activations freed layer after layer
/// are reused instead of returned to the system and faulted in again; nothing elsewhere.
void mc_reuse_freed_memory(void);

/// Rounds each value to the nearest float16 (ties to even, overflow to infinity) and widens it back, in
/// place: with the F16C instructions when `use_hardware` and the CPU has them, else one value at a time
/// through the compiler's `_Float16` conversion.
void mc_round_to_float16(float *values, size_t count, int use_hardware);
/// Whether this CPU has F16C (and AVX) for `mc_round_to_float16`.
int mc_has_f16c(void);

#endif
