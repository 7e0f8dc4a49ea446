/* Which x86-64 micro-architecture level (psABI x86-64-v1..v4) this CPU and OS run, and which one this library was
 * compiled for: onnxide_native/lib.py asks the baseline build first, then loads the best build the CPU runs. And the
 * work from which a kernel's loop runs on several threads (nx_team, nx_math.h). */
#include "nx_math.h"

long nx_parallel_work = 1L << 18;

/* sets nx_parallel_work (>= 0: 0 runs every kernel on the session's threads); returns the previous value */
NX_EXPORT long nx_set_parallel_work(long work) {
    long old = nx_parallel_work;
    if (work >= 0) nx_parallel_work = work;
    return old;
}

/* 4: x86-64-v4 (AVX-512 F/BW/CD/DQ/VL), 3: x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE), 2: x86-64-v2
 * (SSE4.2, POPCNT), 1: the baseline (SSE2); 0 off x86-64. libgcc's probe also checks that the OS saves the vector
 * state (XGETBV), so a CPU with AVX-512 under an OS that does not enable it reports a lower level. */
NX_EXPORT int nx_cpu_level(void) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return 4;
    if (__builtin_cpu_supports("x86-64-v3")) return 3;
    if (__builtin_cpu_supports("x86-64-v2")) return 2;
    return 1;
#elif defined(__x86_64__)
    __builtin_cpu_init();  /* compilers without the level names: the features each level adds to the one below */
    if (!(__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt"))) return 1;
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
          __builtin_cpu_supports("bmi2"))) return 2;
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vl"))) return 3;
    return 4;
#else
    return 0;
#endif
}

/* The level the compiler targeted for this build (the same numbering) */
NX_EXPORT int nx_build_level(void) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
    return 4;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__BMI2__)
    return 3;
#elif defined(__SSE4_2__) && defined(__POPCNT__)
    return 2;
#elif defined(__x86_64__)
    return 1;
#else
    return 0;
#endif
}
