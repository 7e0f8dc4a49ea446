/* The worker threads behind nx_for (instead of OpenMP). A loop is cut into a few chunks per participant; each
 * participant has a home range of them, the same part of every loop (its first chunks from the front), and when
 * those are gone takes the others' from their back ends. A worker that is asleep or has lost its core to another
 * process thus delays only a chunk it actually took: the caller never waits for a worker to arrive (with OpenMP's
 * static split and end barrier it did, 40-90 us per region to wake a sleeping worker on the 2-core VM, and a whole
 * scheduler slice under load). And while the participants keep pace, consecutive loops split alike (the kernels
 * order their items by position) leave each core reading what it wrote, which matters most where the two CPUs
 * are far apart (tests/bench/two_dies.py; docs/design.md). Idle workers spin for nx_pool_spin_us, then sleep on a
 * futex. */
#define _GNU_SOURCE
#include "nx_pool.h"
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "nx_math.h"

#define CHUNKS_PER_PARTICIPANT 4
#define NX_POOL_PURE_SPIN_US 50


#define LOAD(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define RELAXED(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

static long nx_pool_spin_us = 2000;  /* how long an idle worker waits awake for the next loop (nx_set_pool_spin) */

/* one loop's fields: written by its caller before its generation is published, read by a worker after it saw it */
struct nx_loop {
    nx_body body;
    void* ctx;
    long n, chunk;
    int team;
};

/* the fields written while a loop runs each have their own cache line (idle workers spin reading `gen`) */
#define NX_LINE __attribute__((aligned(64)))
struct nx_range {
    NX_LINE uint64_t word;  /* (generation << 32) | (front << 16) | back: a participant's chunks [front, back) left */
};

static struct {
    pthread_mutex_t owner;  /* held by the caller whose loop the workers serve */
    int workers;            /* started (ids 1..workers) */
    struct nx_range range[NX_POOL_MAX];  /* claimed from by compare-and-swap: the owner at the front, others at the back */
    NX_LINE uint32_t gen;   /* the generation published last: what idle workers watch and sleep on */
    int sleepers;           /* workers in or entering futex sleep */
    NX_LINE long done;      /* chunks of the current loop finished */
    /* generation g's loop is loop[g & 1]: a worker that saw g but was slow to read its fields must not read the
     * next loop's, being written meanwhile (with one set it could take the next loop's chunk count, claim a chunk
     * past g's last, count it in the next loop's `done`, and let that caller return with a chunk still running) */
    NX_LINE struct nx_loop loop[2];
    int caller_cpu;         /* the CPU the caller published the current loop from (-1: unknown) */
} P = {.owner = PTHREAD_MUTEX_INITIALIZER};

static long futex(uint32_t* addr, int op, uint32_t val) {
    return syscall(SYS_futex, addr, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static long now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

/* run chunks of generation g's loop from participant v's range (its front when v is the runner, else its back)
 * until none is left there (or the loop is another's already) */
static void claim_from(uint32_t g, int v, int who, nx_body body, void* ctx, long n, long chunk) {
    uint64_t* word = &P.range[v].word;
    uint64_t w = LOAD(word);
    for (;;) {
        long front = (long)(w >> 16 & 0xffff), back = (long)(w & 0xffff);
        if ((uint32_t)(w >> 32) != g || front >= back) return;
        uint64_t next = v == who ? w + (1u << 16) : w - 1;
        if (!__atomic_compare_exchange_n(word, &w, next, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        long c = v == who ? front : back - 1;
        long lo = c * chunk, hi = lo + chunk < n ? lo + chunk : n;
        body(ctx, lo, hi, who);
        __atomic_add_fetch(&P.done, 1, __ATOMIC_RELEASE);
        w = LOAD(word);
    }
}

/* participant `who` of a team runs generation g's chunks: its own range, then what the others have left */
static void claim(uint32_t g, int who, int team, nx_body body, void* ctx, long n, long chunk) {
    for (int i = 0; i < team; i++) claim_from(g, (who + i) % team, who, body, ctx, n, chunk);
}

/* the next generation after `seen`: spinning for NX_POOL_PURE_SPIN_US, then spinning with a yield between looks (a
 * process or thread waiting for this core gets it) up to nx_pool_spin_us, then asleep until a caller wakes it */
static uint32_t next_gen(uint32_t seen) {
    long start = now_us();
    for (long i = 1;; i++) {
        uint32_t g = LOAD(&P.gen);
        if (g != seen) return g;
        NX_CPU_RELAX();
        if (i % 64 == 0) {
            long spent = now_us() - start;
            if (spent > RELAXED(&nx_pool_spin_us)) break;
            if (spent > NX_POOL_PURE_SPIN_US) sched_yield();
        }
    }
    for (;;) {
        __atomic_add_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
        uint32_t g = __atomic_load_n(&P.gen, __ATOMIC_SEQ_CST);
        if (g == seen) futex(&P.gen, FUTEX_WAIT, seen);
        __atomic_sub_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
        g = LOAD(&P.gen);
        if (g != seen) return g;
    }
}

/* a worker woken on the CPU its caller runs on moves off it: Linux often wakes a thread that slept on the waker's
 * CPU, and the two then share one core until the load balancer separates them, milliseconds later (measured at the
 * time: after a pause, half the runs of a small 2-thread model had both on one CPU and took 1.35x as long). Allowing every CPU of the
 * thread's own set but that one moves it now; its set is given back at once. Not when the set has too few CPUs for
 * the team (then sharing is unavoidable). */
static void move_off_caller(int team) {
    int cpu = sched_getcpu(), caller = RELAXED(&P.caller_cpu);
    if (cpu < 0 || cpu != caller) return;
    cpu_set_t mine, others;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0 || CPU_COUNT(&mine) < team || !CPU_ISSET(cpu, &mine)) return;
    others = mine;
    CPU_CLR(cpu, &others);
    if (sched_setaffinity(0, sizeof others, &others) == 0) sched_setaffinity(0, sizeof mine, &mine);
}

static void* worker(void* arg) {
    int who = (int)((uintptr_t)arg & 0xff);
    uint32_t seen = (uint32_t)((uintptr_t)arg >> 8);  /* the generation before the loop that started it */
    for (;;) {
        uint32_t g = seen = next_gen(seen);
        /* loop[g & 1] holds g's fields as long as a chunk of g can still be claimed: the caller writes that set
         * again only for loop g + 2, after publishing g + 1, and claim() checks the generation in the same word it
         * claims from */
        const struct nx_loop* L = &P.loop[g & 1];
        int team = RELAXED(&L->team);
        if (who < team) move_off_caller(team);
        nx_body body = RELAXED(&L->body);
        void* ctx = RELAXED(&L->ctx);
        long n = RELAXED(&L->n), chunk = RELAXED(&L->chunk);
        if (who < team) claim(g, who, team, body, ctx, n, chunk);
    }
    return NULL;
}

/* a forked child has none of the parent's workers: start afresh (the parent's lock state is not the child's) */
static void forget_workers(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    P.owner = fresh;
    P.workers = 0;
    P.sleepers = 0;
}

static void start_workers(int want) {
    static int registered;
    if (!registered) registered = pthread_atfork(NULL, NULL, forget_workers) == 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  /* signals stay with the application's threads */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (P.workers < want) {
        pthread_t t;
        uintptr_t arg = ((uintptr_t)P.gen << 8) | (uintptr_t)(P.workers + 1);
        if (pthread_create(&t, &attr, worker, (void*)arg) != 0) break;
        P.workers++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void nx_for(int threads, long n, nx_body body, void* ctx) {
    if (n <= 0) return;
    if (threads <= 1 || n == 1 || pthread_mutex_trylock(&P.owner) != 0) {
        body(ctx, 0, n, 0);
        return;
    }
    int team = threads < NX_POOL_MAX ? threads : NX_POOL_MAX;
    if (P.workers < team - 1) start_workers(team - 1);
    if (team > P.workers + 1) team = P.workers + 1;
    long chunks = (long)team * CHUNKS_PER_PARTICIPANT;
    chunks = chunks < n ? chunks : n;
    long chunk = (n + chunks - 1) / chunks;
    chunks = (n + chunk - 1) / chunk;
    uint32_t g = P.gen + 1;
    struct nx_loop* L = &P.loop[g & 1];
    SET(&L->body, body);
    SET(&L->ctx, ctx);
    SET(&L->n, n);
    SET(&L->chunk, chunk);
    SET(&L->team, team);
    SET(&P.caller_cpu, sched_getcpu());
    SET(&P.done, 0);
    for (int v = 0; v < team; v++) {  /* home ranges: chunks [v·chunks/team, (v+1)·chunks/team) */
        uint64_t front = (uint64_t)(v * chunks / team), back = (uint64_t)((v + 1) * chunks / team);
        __atomic_store_n(&P.range[v].word, (uint64_t)g << 32 | front << 16 | back, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&P.gen, g, __ATOMIC_SEQ_CST);
    if (team > 1 && __atomic_load_n(&P.sleepers, __ATOMIC_SEQ_CST)) futex(&P.gen, FUTEX_WAKE, INT_MAX);
    claim(g, 0, team, body, ctx, n, chunk);
    /* chunks still running on workers: they hold a core, so the wait is short; yield if it is not */
    for (long i = 1; LOAD(&P.done) < chunks; i++) {
        NX_CPU_RELAX();
        if (i % 1024 == 0) sched_yield();
    }
    pthread_mutex_unlock(&P.owner);
}

void* nx_scratch(struct nx_scratch* s, int who) {
    /* (slot `who` is only ever touched by participant who; 64-byte aligned: packed GEMM panels are read in 32-byte
     * vectors, which must not straddle cache lines) */
    if (!s->slot[who] && posix_memalign(&s->slot[who], 64, s->bytes ? s->bytes : 1)) s->slot[who] = NULL;
    return s->slot[who];
}

void nx_scratch_free(struct nx_scratch* s) {
    for (int i = 0; i < NX_POOL_MAX; i++) free(s->slot[i]);
}

/* sets how many microseconds an idle worker stays awake (>= 0; benchmarks and tests); returns the previous value */
NX_EXPORT long nx_set_pool_spin(long us) {
    long old = RELAXED(&nx_pool_spin_us);
    if (us >= 0) SET(&nx_pool_spin_us, us);
    return old;
}
