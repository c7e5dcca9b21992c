#define _GNU_SOURCE
#include "compute_kernels.h"

#include <dlfcn.h>
#include <malloc.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libgomp's omp_set_num_threads, which oneDNN's OpenMP build loads; found at run time (libgomp has no
// development link on Debian and omp.h is not on clang's path).
static void (*set_num_threads)(int);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;
static void find_omp(void) { set_num_threads = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads"); }
static void omp_set_num_threads(int n) {
    pthread_once(&omp_once, find_omp);
    if (set_num_threads) set_num_threads(n);
}

// Memory objects of one convolution for one thread, made on its first run there: a run then only points
// the source and destination at the caller's buffers (oneDNN memory objects are not shared by threads).
#define MC_THREAD_SLOTS 64
typedef struct {
    dnnl_memory_t src, dst, weights, bias, scratchpad;
    void *scratchpad_buffer;
} mc_conv_slot;

struct mc_conv {
    mc_conv_slot slots[MC_THREAD_SLOTS];
    dnnl_primitive_t primitive;
    dnnl_memory_desc_t src_md, dst_md, weights_md, bias_md, scratchpad_md;
    void *weights;  // in the primitive's preferred layout
    float *bias;
    size_t scratchpad_size;
};

static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_success;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void make_engine(void) { engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0); }

static void set_error(char *error, size_t size, const char *what, dnnl_status_t status) {
    if (error && size) snprintf(error, size, "oneDNN: %s failed (status %d)", what, (int)status);
}

// Makes the engine once; every primitive below runs on the calling thread alone (an OpenMP team left
// idle spins on a core). Returns 0 with `error` set when oneDNN has no engine.
static int engine_ready(char *error, size_t error_size) {
    pthread_once(&engine_once, make_engine);
    if (engine_status != dnnl_success) {
        set_error(error, error_size, "engine creation", engine_status);
        return 0;
    }
    omp_set_num_threads(1);
    return 1;
}

// Each thread that runs convolutions gets a slot number, once (threads beyond MC_THREAD_SLOTS make
// their memory objects on every run).
static int next_slot;
static __thread int thread_slot = -1;

static int slot_for_thread(void) {
    if (thread_slot < 0) thread_slot = __atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED);
    return thread_slot;
}

// One stream and one scratchpad per thread: oneDNN streams are not shared between threads.
static __thread dnnl_stream_t thread_stream;

static dnnl_stream_t stream_for_thread(void) {
    if (!thread_stream && dnnl_stream_create(&thread_stream, engine, dnnl_stream_default_flags) != dnnl_success) thread_stream = NULL;
    return thread_stream;
}

#define CHECK(call, what)                     \
    do {                                      \
        dnnl_status_t s_ = (call);            \
        if (s_ != dnnl_success) {             \
            set_error(error, error_size, what, s_); \
            goto fail;                        \
        }                                     \
    } while (0)

mc_conv *mc_conv_create(const mc_conv_shape *s, const float *weights, const float *bias, int post_count, const int *post_kinds,
                        const float *post_alpha, const float *post_beta, char *error, size_t error_size) {
    if (!engine_ready(error, error_size)) return NULL;
    mc_conv *conv = calloc(1, sizeof(mc_conv));
    if (!conv) return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post_ops = NULL;
    dnnl_primitive_desc_t pd = NULL, reorder_pd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t user_weights = NULL, weights_memory = NULL;
    dnnl_stream_t stream = NULL;

    const int g = s->groups, ic_g = s->in_c / g, oc = s->out_c, oc_g = oc / g;
    dnnl_dims_t src_dims = {1, s->in_c, s->in_h, s->in_w};
    dnnl_dims_t dst_dims = {1, oc, s->out_h, s->out_w};
    CHECK(dnnl_memory_desc_init_by_tag(&conv->src_md, 4, src_dims, dnnl_f32, dnnl_nhwc), "source description");
    CHECK(dnnl_memory_desc_init_by_tag(&conv->dst_md, 4, dst_dims, dnnl_f32, dnnl_nhwc), "destination description");
    // Keras' [kh][kw][ic/g][oc] with oc = group * oc_g + o, described by strides (no copy).
    dnnl_memory_desc_t user_md, any_md;
    const dnnl_dim_t w_stride = (dnnl_dim_t)ic_g * oc, h_stride = (dnnl_dim_t)s->kernel_w * w_stride;
    if (g == 1) {
        dnnl_dims_t dims = {oc, ic_g, s->kernel_h, s->kernel_w};
        dnnl_dims_t strides = {1, oc, h_stride, w_stride};
        CHECK(dnnl_memory_desc_init_by_strides(&user_md, 4, dims, dnnl_f32, strides), "weight description");
        CHECK(dnnl_memory_desc_init_by_tag(&any_md, 4, dims, dnnl_f32, dnnl_format_tag_any), "weight description");
    } else {
        dnnl_dims_t dims = {g, oc_g, ic_g, s->kernel_h, s->kernel_w};
        dnnl_dims_t strides = {oc_g, 1, oc, h_stride, w_stride};
        CHECK(dnnl_memory_desc_init_by_strides(&user_md, 5, dims, dnnl_f32, strides), "weight description");
        CHECK(dnnl_memory_desc_init_by_tag(&any_md, 5, dims, dnnl_f32, dnnl_format_tag_any), "weight description");
    }
    dnnl_dims_t bias_dims = {oc};
    CHECK(dnnl_memory_desc_init_by_tag(&conv->bias_md, 1, bias_dims, dnnl_f32, dnnl_x), "bias description");

    dnnl_dims_t strides = {s->stride_h, s->stride_w};
    dnnl_dims_t dilates = {s->dilation_h - 1, s->dilation_w - 1};
    dnnl_dims_t pad_l = {s->pad_top, s->pad_left}, pad_r = {s->pad_bottom, s->pad_right};
    dnnl_convolution_desc_t desc;
    CHECK(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &conv->src_md, &any_md,
                                                     &conv->bias_md, &conv->dst_md, strides, dilates, pad_l, pad_r),
          "convolution description");

    CHECK(dnnl_primitive_attr_create(&attr), "attributes");
    CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "scratchpad mode");
    if (post_count > 0) {
        CHECK(dnnl_post_ops_create(&post_ops), "post-ops");
        for (int i = 0; i < post_count; i++) {
            if (post_kinds[i] == MC_POST_SUM) {
                CHECK(dnnl_post_ops_append_sum(post_ops, post_alpha[i]), "sum post-op");
                continue;
            }
            dnnl_alg_kind_t alg = post_kinds[i] == MC_POST_RELU ? dnnl_eltwise_relu : post_kinds[i] == MC_POST_CLIP ? dnnl_eltwise_clip : dnnl_eltwise_linear;
            CHECK(dnnl_post_ops_append_eltwise(post_ops, 1.0f, alg, post_alpha[i], post_beta[i]), "post-op");
        }
        CHECK(dnnl_primitive_attr_set_post_ops(attr, post_ops), "post-ops");
    }
    CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL), "convolution primitive description");
    conv->weights_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    conv->scratchpad_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    conv->scratchpad_size = dnnl_memory_desc_get_size(&conv->scratchpad_md);
    CHECK(dnnl_primitive_create(&conv->primitive, pd), "convolution primitive");

    // The weights, once, into the layout the chosen kernel reads.
    size_t weights_size = dnnl_memory_desc_get_size(&conv->weights_md);
    if (posix_memalign(&conv->weights, 64, weights_size ? weights_size : 64) != 0) goto fail;
    CHECK(dnnl_memory_create(&user_weights, &user_md, engine, (void *)weights), "weight memory");
    CHECK(dnnl_memory_create(&weights_memory, &conv->weights_md, engine, conv->weights), "weight memory");
    CHECK(dnnl_reorder_primitive_desc_create(&reorder_pd, &user_md, engine, &conv->weights_md, engine, NULL), "weight reorder");
    CHECK(dnnl_primitive_create(&reorder, reorder_pd), "weight reorder");
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "stream");
    dnnl_exec_arg_t reorder_args[2] = {{DNNL_ARG_FROM, user_weights}, {DNNL_ARG_TO, weights_memory}};
    omp_set_num_threads(1);
    CHECK(dnnl_primitive_execute(reorder, stream, 2, reorder_args), "weight reorder");
    CHECK(dnnl_stream_wait(stream), "weight reorder");

    conv->bias = calloc((size_t)oc, sizeof(float));
    if (!conv->bias) goto fail;
    if (bias) memcpy(conv->bias, bias, sizeof(float) * (size_t)oc);

    dnnl_stream_destroy(stream);
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(reorder_pd);
    dnnl_memory_destroy(user_weights);
    dnnl_memory_destroy(weights_memory);
    dnnl_primitive_desc_destroy(pd);
    if (post_ops) dnnl_post_ops_destroy(post_ops);
    dnnl_primitive_attr_destroy(attr);
    return conv;

fail:
    if (stream) dnnl_stream_destroy(stream);
    if (reorder) dnnl_primitive_destroy(reorder);
    if (reorder_pd) dnnl_primitive_desc_destroy(reorder_pd);
    if (user_weights) dnnl_memory_destroy(user_weights);
    if (weights_memory) dnnl_memory_destroy(weights_memory);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (post_ops) dnnl_post_ops_destroy(post_ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    mc_conv_destroy(conv);
    return NULL;
}

static void release_slot(mc_conv_slot *slot) {
    if (slot->src) dnnl_memory_destroy(slot->src);
    if (slot->dst) dnnl_memory_destroy(slot->dst);
    if (slot->weights) dnnl_memory_destroy(slot->weights);
    if (slot->bias) dnnl_memory_destroy(slot->bias);
    if (slot->scratchpad) dnnl_memory_destroy(slot->scratchpad);
    free(slot->scratchpad_buffer);
    memset(slot, 0, sizeof *slot);
}

static dnnl_status_t fill_slot(const mc_conv *conv, mc_conv_slot *slot) {
    dnnl_status_t status;
    if (conv->scratchpad_size && posix_memalign(&slot->scratchpad_buffer, 64, conv->scratchpad_size) != 0) return dnnl_out_of_memory;
    if ((status = dnnl_memory_create(&slot->src, &conv->src_md, engine, DNNL_MEMORY_NONE)) != dnnl_success) return status;
    if ((status = dnnl_memory_create(&slot->dst, &conv->dst_md, engine, DNNL_MEMORY_NONE)) != dnnl_success) return status;
    if ((status = dnnl_memory_create(&slot->weights, &conv->weights_md, engine, conv->weights)) != dnnl_success) return status;
    if ((status = dnnl_memory_create(&slot->bias, &conv->bias_md, engine, conv->bias)) != dnnl_success) return status;
    return dnnl_memory_create(&slot->scratchpad, &conv->scratchpad_md, engine, slot->scratchpad_buffer);
}

int mc_conv_run(const mc_conv *conv, const float *src, float *dst, int threads, char *error, size_t error_size) {
    dnnl_stream_t stream = stream_for_thread();
    if (!stream) {
        set_error(error, error_size, "stream creation", dnnl_out_of_memory);
        return -1;
    }
    omp_set_num_threads(threads > 0 ? threads : 1);
    int index = slot_for_thread();
    mc_conv_slot local = {0};
    // The slot is this thread's alone; the const is the caller's promise not to destroy the convolution meanwhile.
    mc_conv_slot *slot = index < MC_THREAD_SLOTS ? (mc_conv_slot *)&conv->slots[index] : &local;
    int result = -1;
    if (!slot->src) {
        dnnl_status_t status = fill_slot(conv, slot);
        if (status != dnnl_success) {
            release_slot(slot);
            set_error(error, error_size, "memory creation", status);
            return -1;
        }
    }
    CHECK(dnnl_memory_set_data_handle(slot->src, (void *)src), "source memory");
    CHECK(dnnl_memory_set_data_handle(slot->dst, dst), "destination memory");
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, slot->src}, {DNNL_ARG_WEIGHTS, slot->weights}, {DNNL_ARG_BIAS, slot->bias}, {DNNL_ARG_DST, slot->dst},
        {DNNL_ARG_SCRATCHPAD, slot->scratchpad}};
    CHECK(dnnl_primitive_execute(conv->primitive, stream, 5, args), "convolution");
    CHECK(dnnl_stream_wait(stream), "convolution");
    result = 0;
fail:
    if (slot == &local) release_slot(&local);
    return result;
}

void mc_conv_destroy(mc_conv *conv) {
    if (!conv) return;
    for (int i = 0; i < MC_THREAD_SLOTS; i++) release_slot(&conv->slots[i]);
    if (conv->primitive) dnnl_primitive_destroy(conv->primitive);
    free(conv->weights);
    free(conv->bias);
    free(conv);
}

int mc_sgemm(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc, int threads) {
    omp_set_num_threads(threads > 0 ? threads : 1);
    return dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) == dnnl_success ? 0 : -1;
}

const char *mc_cpu_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_all: return "all";
    default: return "generic (no JIT kernels)";
    }
}

const char *mc_dnnl_version(void) {
    static char text[32];
    const dnnl_version_t *v = dnnl_version();
    snprintf(text, sizeof text, "%d.%d.%d", v->major, v->minor, v->patch);
    return text;
}

void mc_reuse_freed_memory(void) {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

size_t mc_conv_scratchpad_bytes(const mc_conv *conv) { return conv->scratchpad_size; }

// ---------------------------------------------------------------- pooling

typedef struct {
    dnnl_memory_t src, dst, scratchpad;
    void *scratchpad_buffer;
} mc_pool_slot;

struct mc_pool {
    mc_pool_slot slots[MC_THREAD_SLOTS];
    dnnl_primitive_t primitive;
    dnnl_memory_desc_t src_md, dst_md, scratchpad_md;
    size_t scratchpad_size;
};

static void release_pool_slot(mc_pool_slot *slot) {
    if (slot->src) dnnl_memory_destroy(slot->src);
    if (slot->dst) dnnl_memory_destroy(slot->dst);
    if (slot->scratchpad) dnnl_memory_destroy(slot->scratchpad);
    free(slot->scratchpad_buffer);
    memset(slot, 0, sizeof *slot);
}

void mc_pool_destroy(mc_pool *pool) {
    if (!pool) return;
    for (int i = 0; i < MC_THREAD_SLOTS; i++) release_pool_slot(&pool->slots[i]);
    if (pool->primitive) dnnl_primitive_destroy(pool->primitive);
    free(pool);
}

mc_pool *mc_pool_create(const mc_pool_shape *s, char *error, size_t error_size) {
    if (!engine_ready(error, error_size)) return NULL;
    mc_pool *pool = calloc(1, sizeof(mc_pool));
    if (!pool) return NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_dims_t src_dims = {1, s->channels, s->in_h, s->in_w};
    dnnl_dims_t dst_dims = {1, s->channels, s->out_h, s->out_w};
    CHECK(dnnl_memory_desc_init_by_tag(&pool->src_md, 4, src_dims, dnnl_f32, dnnl_nhwc), "source description");
    CHECK(dnnl_memory_desc_init_by_tag(&pool->dst_md, 4, dst_dims, dnnl_f32, dnnl_nhwc), "destination description");
    dnnl_dims_t strides = {s->stride_h, s->stride_w}, kernel = {s->kernel_h, s->kernel_w};
    dnnl_dims_t pad_l = {s->pad_top, s->pad_left}, pad_r = {s->pad_bottom, s->pad_right};
    dnnl_pooling_desc_t desc;
    // Average over the taps inside the input (TensorFlow's), max ignoring the padding.
    CHECK(dnnl_pooling_forward_desc_init(&desc, dnnl_forward_inference, s->is_max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding,
                                         &pool->src_md, &pool->dst_md, strides, kernel, pad_l, pad_r),
          "pooling description");
    CHECK(dnnl_primitive_attr_create(&attr), "attributes");
    CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "scratchpad mode");
    CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL), "pooling primitive description");
    pool->scratchpad_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    pool->scratchpad_size = dnnl_memory_desc_get_size(&pool->scratchpad_md);
    CHECK(dnnl_primitive_create(&pool->primitive, pd), "pooling primitive");
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return pool;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    mc_pool_destroy(pool);
    return NULL;
}

int mc_pool_run(const mc_pool *pool, const float *src, float *dst, char *error, size_t error_size) {
    dnnl_stream_t stream = stream_for_thread();
    if (!stream) {
        set_error(error, error_size, "stream creation", dnnl_out_of_memory);
        return -1;
    }
    omp_set_num_threads(1);
    int index = slot_for_thread();
    mc_pool_slot local = {0};
    mc_pool_slot *slot = index < MC_THREAD_SLOTS ? (mc_pool_slot *)&pool->slots[index] : &local;
    int result = -1;
    if (!slot->src) {
        dnnl_status_t status = dnnl_success;
        if (pool->scratchpad_size && posix_memalign(&slot->scratchpad_buffer, 64, pool->scratchpad_size) != 0) status = dnnl_out_of_memory;
        if (status == dnnl_success) status = dnnl_memory_create(&slot->src, &pool->src_md, engine, DNNL_MEMORY_NONE);
        if (status == dnnl_success) status = dnnl_memory_create(&slot->dst, &pool->dst_md, engine, DNNL_MEMORY_NONE);
        if (status == dnnl_success) status = dnnl_memory_create(&slot->scratchpad, &pool->scratchpad_md, engine, slot->scratchpad_buffer);
        if (status != dnnl_success) {
            release_pool_slot(slot);
            set_error(error, error_size, "memory creation", status);
            return -1;
        }
    }
    CHECK(dnnl_memory_set_data_handle(slot->src, (void *)src), "source memory");
    CHECK(dnnl_memory_set_data_handle(slot->dst, dst), "destination memory");
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, slot->src}, {DNNL_ARG_DST, slot->dst}, {DNNL_ARG_SCRATCHPAD, slot->scratchpad}};
    CHECK(dnnl_primitive_execute(pool->primitive, stream, 3, args), "pooling");
    CHECK(dnnl_stream_wait(stream), "pooling");
    result = 0;
fail:
    if (slot == &local) release_pool_slot(&local);
    return result;
}

size_t mc_pool_scratchpad_bytes(const mc_pool *pool) { return pool->scratchpad_size; }

// MARK: - float16 rounding

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

int mc_has_f16c(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
}

__attribute__((target("avx,f16c"))) static size_t round_f16c(float *values, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 x = _mm256_loadu_ps(values + i);
    __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(values + i, _mm256_cvtph_ps(h));
  }
  return i;
}
#else
int mc_has_f16c(void) { return 0; }
static size_t round_f16c(float *values, size_t count) {
  (void)values;
  (void)count;
  return 0;
}
#endif

void mc_round_to_float16(float *values, size_t count, int use_hardware) {
  size_t i = use_hardware && mc_has_f16c() ? round_f16c(values, count) : 0;
  for (; i < count; i++) values[i] = (float)(_Float16)values[i];
}
