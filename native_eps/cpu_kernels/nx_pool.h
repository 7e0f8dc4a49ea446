/* The kernels' parallel loop (nx_pool.c): one pool of worker threads shared by every native kernel. */
#ifndef NX_POOL_H
#define NX_POOL_H

#define NX_POOL_MAX 64  /* participants in one loop at most (the caller and 63 workers) */

/* the pause hint of a spin-wait loop */
#if defined(__x86_64__) || defined(__i386__)
#define NX_CPU_RELAX() __builtin_ia32_pause()
#else
#define NX_CPU_RELAX() ((void)0)
#endif

/* one chunk [lo, hi) of a loop, run by participant `who` (0 the caller, < NX_POOL_MAX: an index into per-participant
 * scratch or partial results; a participant runs its chunks one after another) */
typedef void (*nx_body)(void* ctx, long lo, long hi, int who);

/* body over [0, n) in chunks, on the caller and up to threads - 1 workers; returns when every chunk has run. With
 * threads <= 1, n <= 1, or the pool busy (another caller's loop, or a loop inside a chunk) the caller runs it all. */
void nx_for(int threads, long n, nx_body body, void* ctx);

/* A loop over the planes of a map as items of (block of rows, plane), blocks outer: nx_for's home ranges then split
 * it by rows as the GEMM and conv tiles split their positions, so that the next kernel's participant reads the rows
 * it wrote (nx_pool.c). NX_SPATIAL_BLOCKS blocks; one thread: one block, the planes one by one. */
#define NX_SPATIAL_BLOCKS 8
static inline long nx_spatial_block(long rows, int team) {
    return team > 1 ? (rows + NX_SPATIAL_BLOCKS - 1) / NX_SPATIAL_BLOCKS : rows;
}
static inline long nx_spatial_items(long planes, long rows, int team) {
    long block = nx_spatial_block(rows, team);
    return planes * ((rows + block - 1) / block);
}

/* one loop's per-participant scratch: `bytes` each, allocated the first time a participant asks (nx_scratch: NULL
 * when that fails) and freed together after the loop (nx_scratch_free); zero-initialise it with its size set */
struct nx_scratch {
    unsigned long bytes;
    void* slot[NX_POOL_MAX];
};
void* nx_scratch(struct nx_scratch* s, int who);
void nx_scratch_free(struct nx_scratch* s);

#endif
