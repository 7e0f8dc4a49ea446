/* Tree ensembles' walk (ai.onnx.ml TreeEnsemble*, ops/ml_trees.py's forest): for each sample and tree, the leaf it
 * reaches. The forest's flattened nodes come as built there; the leaves' aggregation stays in numpy. */
#include "nx_math.h"
#include "nx_pool.h"

enum { LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF };  /* ml_trees.py's node modes */

struct tree_job {
    long width, n_trees, depth;
    const double *x, *threshold;
    const long *roots, *feature, *mode, *tchild, *fchild;
    const unsigned char* missing_true;
    long* leaf;
};

static void tree_rows(void* ctx, long r0, long r1, int who) {
    (void)who;
    const struct tree_job* j = ctx;
    for (long r = r0; r < r1; r++) {
        const double* xr = j->x + r * j->width;
        for (long t = 0; t < j->n_trees; t++) {
            long c = j->roots[t];
            for (long level = 0; level < j->depth && j->mode[c] != LEAF; level++) {
                double v = xr[j->feature[c]], th = j->threshold[c];
                int go;
                if (v != v) {
                    go = j->missing_true[c];  /* a NaN feature takes the node's missing-value branch */
                } else {
                    switch (j->mode[c]) {
                    case LEQ: go = v <= th; break;
                    case LT: go = v < th; break;
                    case GTE: go = v >= th; break;
                    case GT: go = v > th; break;
                    case EQ: go = v == th; break;
                    default: go = v != th; break;  /* NEQ (the caller sends no MEMBER node) */
                    }
                }
                c = go ? j->tchild[c] : j->fchild[c];
            }
            j->leaf[r * j->n_trees + t] = c;
        }
    }
}

/* leaf[r, t] = the node sample r (row r of x: rows × width) reaches in tree t (from roots[t]), at most `depth` levels
 * down; node ids, features and children were checked by the caller (ids in range, no set-membership node) */
NX_EXPORT void nx_tree_walk(long rows, long width, const double* x, long n_trees, const long* roots,
                            const long* feature, const double* threshold, const long* mode, const long* tchild,
                            const long* fchild, const unsigned char* missing_true, long depth, long* leaf,
                            int threads) {
    NX_CHECK(rows >= 0 && width >= 0 && n_trees >= 0 && depth >= 0);
    struct tree_job job = {.width = width, .n_trees = n_trees, .depth = depth, .x = x, .threshold = threshold,
                           .roots = roots, .feature = feature, .mode = mode, .tchild = tchild, .fchild = fchild,
                           .missing_true = missing_true, .leaf = leaf};
    nx_for(nx_team(threads, (double)rows * n_trees * (depth + 1) * NX_PASS_WORK), rows, tree_rows, &job);
}
