"""ai.onnx.ml tree ensembles: TreeEnsemble (ml opset 5), TreeEnsembleRegressor and TreeEnsembleClassifier. An EP
may run the trees' walk faster (with_walk); the rest is these kernels'."""
import contextvars

import numpy as np

from ..errors import InvalidArgument
from .math import via_float32
from .ml import _labels_out, _rows, built, post_transform_scores
from .registry import ML_DOMAIN, op

LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
_LEGACY_MODES = {"BRANCH_LEQ": LEQ, "BRANCH_LT": LT, "BRANCH_GTE": GTE, "BRANCH_GT": GT, "BRANCH_EQ": EQ,
                 "BRANCH_NEQ": NEQ, "LEAF": LEAF}
_AGG = {"AVERAGE": 0, "SUM": 1, "MIN": 2, "MAX": 3}
_POST = {0: "NONE", 1: "SOFTMAX", 2: "LOGISTIC", 3: "SOFTMAX_ZERO", 4: "PROBIT"}
_WALK = contextvars.ContextVar("onnxide_tree_walk", default=None)  # an EP's walk for the kernel running (with_walk)


def with_walk(kernel, walk):
    """`kernel` (a tree ensemble op's) with `walk(forest, rows)` doing its trees' walk: an EP's faster one, which
    gives the leaves as _Forest.leaves does, or None where it cannot (then the numpy walk runs)."""

    def run(*args, **kwargs):
        token = _WALK.set(walk)
        try:
            return kernel(*args, **kwargs)
        finally:
            _WALK.reset(token)

    return run


class _Forest:
    """Flattened trees: per node its feature, threshold, mode, children (global indices), missing flag. Built once
    per node (ml.built); leaves() walks every tree of every sample together, one level per step."""

    def __init__(self, feature, threshold, mode, tchild, fchild, missing_true, roots, member_sets=None):
        self.feature = np.ascontiguousarray(feature, np.int64)  # (contiguous: an EP's walk reads them as C arrays)
        self.threshold = np.ascontiguousarray(threshold, np.float64)
        self.mode = np.ascontiguousarray(mode, np.int64)
        self.tchild = np.ascontiguousarray(tchild, np.int64)
        self.fchild = np.ascontiguousarray(fchild, np.int64)
        self.missing_true = np.ascontiguousarray(missing_true, bool)
        self.roots = np.ascontiguousarray(roots, np.int64)
        self.member_sets = member_sets or {}
        n = self.mode.size
        inner = self.mode != LEAF
        for arr, what in ((self.tchild, "true"), (self.fchild, "false")):
            bad = inner & ((arr < 0) | (arr >= n))
            if bad.any():
                raise InvalidArgument(f"tree ensemble: a {what} child id is out of range")
        if self.roots.size and (self.roots.min() < 0 or self.roots.max() >= n):
            raise InvalidArgument("tree ensemble: a tree root is out of range")
        if inner.any() and self.feature[inner].min() < 0:
            raise InvalidArgument("tree ensemble: a feature id is negative")
        # the walk: a leaf is its own two children (a sample that reached one stays), reading feature 0
        here = np.arange(n)
        self.tnext, self.fnext = np.where(inner, self.tchild, here), np.where(inner, self.fchild, here)
        self.walk_feature = np.where(inner, self.feature, 0)
        self.max_feature = int(self.feature[inner].max()) if inner.any() else -1
        modes = set(self.mode[inner].tolist())
        self.one_mode = modes.pop() if len(modes) == 1 and not self.member_sets else None
        # a NaN feature takes the node's missing_true branch; comparisons other than != are false on NaN already
        self.nan_branch = bool(self.missing_true[inner].any()) or self.one_mode not in (LEQ, LT, GTE, GT, EQ)
        self.depth = 0  # levels below the roots (a cycle never ends: refused here)
        level = np.unique(self.roots)
        while level.size and inner[level].any():
            level = np.unique(np.concatenate([self.tchild[level[inner[level]]], self.fchild[level[inner[level]]]]))
            self.depth += 1
            if self.depth > n:
                raise InvalidArgument("tree ensemble: trees contain a cycle")

    def leaves(self, x):
        """Global index of the leaf each sample reaches in each tree: shape (N, n_trees)."""
        r = _rows(x).astype(np.float64)
        n, width = r.shape[0], r.shape[1]
        if self.max_feature >= width:
            raise InvalidArgument(f"tree ensemble: a feature id is out of range for {width} features")
        walk = _WALK.get()
        leaves = walk(self, r) if walk is not None else None
        if leaves is not None:
            return leaves
        cur = np.repeat(self.roots[None, :], n, axis=0)
        flat, base = r.reshape(-1), (np.arange(n) * width)[:, None]
        for _ in range(self.depth):
            xv = flat[base + self.walk_feature[cur]]
            t = self.threshold[cur]
            with np.errstate(invalid="ignore"):
                cond = _COMPARE[self.one_mode](xv, t) if self.one_mode is not None else self._compare(cur, xv, t)
            if self.nan_branch:
                cond = np.where(np.isnan(xv), self.missing_true[cur], cond)
            cur = np.where(cond, self.tnext[cur], self.fnext[cur])
        return cur

    def _compare(self, cur, xv, t):
        """Each node's own test, where the trees mix modes (or test set membership)."""
        m = self.mode[cur]
        cond = np.select([m == k for k in _COMPARE], [f(xv, t) for f in _COMPARE.values()], False)
        for node, values in self.member_sets.items():
            hit = cur == node
            if hit.any():
                cond[hit] = np.isin(xv[hit], values)
        return cond


_COMPARE = {LEQ: np.less_equal, LT: np.less, GTE: np.greater_equal, GT: np.greater, EQ: np.equal,
            NEQ: np.not_equal}


def _aggregate(forest, leaves, weight_table, has_table, agg, n_out):
    """Combine per-leaf target weights over trees. weight_table/has_table: (n_nodes, n_out)."""
    w = weight_table[leaves]  # (N, T, n_out)
    h = has_table[leaves]
    if agg in (0, 1):
        out = w.sum(axis=1)
        if agg == 0:
            out = out / max(forest.roots.size, 1)
    elif agg == 2:
        out = np.where(h, w, np.inf).min(axis=1)
        out = np.where(np.isinf(out) & ~h.any(axis=1), 0.0, out)
    elif agg == 3:
        out = np.where(h, w, -np.inf).max(axis=1)
        out = np.where(np.isinf(out) & ~h.any(axis=1), 0.0, out)
    else:
        raise InvalidArgument(f"tree ensemble: unsupported aggregate_function {agg}")
    return out.reshape(leaves.shape[0], n_out)


def _tables(n_nodes, n_out, nodes, targets, weights, agg):
    wt = np.zeros((n_nodes, n_out))
    ht = np.zeros((n_nodes, n_out), bool)
    nodes, targets = np.asarray(nodes, np.int64), np.asarray(targets, np.int64)
    if targets.size and (targets.min() < 0 or targets.max() >= n_out):
        raise InvalidArgument("tree ensemble: a target/class id is out of range")
    weights = np.asarray(weights, np.float64)
    if agg == 2:
        wt[:] = np.inf
        np.minimum.at(wt, (nodes, targets), weights)
    elif agg == 3:
        wt[:] = -np.inf
        np.maximum.at(wt, (nodes, targets), weights)
    else:
        np.add.at(wt, (nodes, targets), weights)
    ht[nodes, targets] = True
    wt[~ht] = 0.0
    return wt, ht


# ------------------------------------------------------------------------------------------- TreeEnsemble (5)
@op("TreeEnsemble", since=5, domain=ML_DOMAIN)
@via_float32
def tree_ensemble(x, *, leaf_targetids, leaf_weights, nodes_falseleafs, nodes_falsenodeids, nodes_featureids,
                  nodes_modes, nodes_splits, nodes_trueleafs, nodes_truenodeids, tree_roots, aggregate_function=1,
                  membership_values=None, n_targets=None, nodes_hitrates=None, nodes_missing_value_tracks_true=None,
                  post_transform=0):
    attrs = dict(locals())
    del attrs["x"]  # (the attributes alone: what the model is built from)
    forest, wt, ht, n_out = built(_tree_ensemble_5, attrs)
    y = _aggregate(forest, forest.leaves(x), wt, ht, int(aggregate_function), n_out)
    y = post_transform_scores(y, _POST.get(int(post_transform), post_transform))
    return y.astype(x.dtype if x.dtype.kind == "f" else np.float32)


def _tree_ensemble_5(*, leaf_targetids, leaf_weights, nodes_falseleafs, nodes_falsenodeids, nodes_featureids,
                     nodes_modes, nodes_splits, nodes_trueleafs, nodes_truenodeids, tree_roots, aggregate_function,
                     membership_values, n_targets, nodes_missing_value_tracks_true, **_):
    """TreeEnsemble's (forest, weight table, has-weight table, outputs) from its attributes."""
    modes = np.asarray(nodes_modes).astype(np.int64).ravel()
    nn = modes.size
    nl = len(leaf_targetids)
    if not (len(nodes_featureids) == len(nodes_truenodeids) == len(nodes_falsenodeids) == nn
            == np.asarray(nodes_splits).size):
        raise InvalidArgument("TreeEnsemble: nodes_* attributes have different lengths")
    if (modes < 0).any() or (modes > MEMBER).any():
        raise InvalidArgument("TreeEnsemble: invalid nodes_modes value")
    if len(leaf_weights if not isinstance(leaf_weights, np.ndarray) else leaf_weights.ravel()) != nl or \
            len(nodes_trueleafs) != nn or len(nodes_falseleafs) != nn:
        raise InvalidArgument(f"TreeEnsemble: leaf_targetids ({nl}) and leaf_weights, or nodes_trueleafs / "
                              f"nodes_falseleafs and the {nn} nodes, differ in length")
    tleaf = np.asarray(nodes_trueleafs, bool)
    fleaf = np.asarray(nodes_falseleafs, bool)
    tchild = np.where(tleaf, nn + np.asarray(nodes_truenodeids, np.int64), nodes_truenodeids)
    fchild = np.where(fleaf, nn + np.asarray(nodes_falsenodeids, np.int64), nodes_falsenodeids)
    missing = np.zeros(nn, bool) if not nodes_missing_value_tracks_true \
        else np.asarray(nodes_missing_value_tracks_true, bool)
    member_sets = {}
    if (modes == MEMBER).any():
        mv = np.asarray(membership_values if membership_values is not None else [], np.float64).ravel()
        cuts = np.nonzero(np.isnan(mv))[0]
        groups = np.split(mv, cuts)
        groups = [g[~np.isnan(g)] for g in groups]
        for k, node in enumerate(np.nonzero(modes == MEMBER)[0]):
            member_sets[int(node)] = groups[k] if k < len(groups) else np.zeros(0)
    splits = np.asarray(nodes_splits, np.float64).ravel()
    forest = _Forest(np.concatenate([np.asarray(nodes_featureids, np.int64), np.zeros(nl, np.int64)]),
                     np.concatenate([splits, np.zeros(nl)]),
                     np.concatenate([modes, np.full(nl, LEAF)]),
                     np.concatenate([tchild, np.zeros(nl, np.int64)]),
                     np.concatenate([fchild, np.zeros(nl, np.int64)]),
                     np.concatenate([missing, np.zeros(nl, bool)]), tree_roots, member_sets)
    n_out = int(n_targets) if n_targets is not None else (max(leaf_targetids) + 1 if nl else 1)
    wt, ht = _tables(nn + nl, n_out, nn + np.arange(nl), leaf_targetids, np.asarray(leaf_weights).ravel(),
                     int(aggregate_function))
    return forest, wt, ht, n_out


# ------------------------------------------------------------------------------------------- legacy format
def _legacy_forest(nodes_treeids, nodes_nodeids, nodes_featureids, nodes_values, nodes_modes, nodes_truenodeids,
                   nodes_falsenodeids, nodes_missing_value_tracks_true):
    n = len(nodes_nodeids)
    if not (len(nodes_treeids) == len(nodes_featureids) == len(nodes_modes) == n):
        raise InvalidArgument("tree ensemble: nodes_* attributes have different lengths")
    index = {(int(t), int(i)): k for k, (t, i) in enumerate(zip(nodes_treeids, nodes_nodeids))}
    try:
        modes = [_LEGACY_MODES[m] for m in nodes_modes]
    except KeyError as e:
        raise InvalidArgument(f"tree ensemble: unknown node mode {e}") from None
    tchild = np.zeros(n, np.int64)
    fchild = np.zeros(n, np.int64)
    referenced = set()
    for k in range(n):
        if modes[k] == LEAF:
            continue
        t = int(nodes_treeids[k])
        try:
            tchild[k] = index[(t, int(nodes_truenodeids[k]))]
            fchild[k] = index[(t, int(nodes_falsenodeids[k]))]
        except KeyError:
            raise InvalidArgument(f"tree ensemble: node {nodes_nodeids[k]} of tree {t} has a missing child") from None
        referenced.update((tchild[k], fchild[k]))
    roots, seen = [], set()
    for k in range(n):
        t = int(nodes_treeids[k])
        if t not in seen and k not in referenced:
            seen.add(t)
            roots.append(k)
    missing = np.zeros(n, bool) if not nodes_missing_value_tracks_true \
        else np.asarray(nodes_missing_value_tracks_true, bool)
    vals = np.asarray(nodes_values if nodes_values is not None else np.zeros(n), np.float64).ravel()
    return _Forest(nodes_featureids, vals, modes, tchild, fchild, missing, roots), index


def _leaf_nodes(index, treeids, nodeids):
    try:
        return [index[(int(t), int(i))] for t, i in zip(treeids, nodeids)]
    except KeyError as e:
        raise InvalidArgument(f"tree ensemble: a leaf refers to unknown node {e}") from None


def _pick(plain, as_tensor):
    if as_tensor is not None:
        return np.asarray(as_tensor, np.float64).ravel()
    return None if plain is None else np.asarray(plain, np.float64)


def _regressor(x, a):
    forest, wt, ht, agg, n_out, base = built(_regressor_model, a)
    y = _aggregate(forest, forest.leaves(x), wt, ht, agg, n_out)
    if base is not None and base.size:
        y = y + base
    return post_transform_scores(y, a["post_transform"]).astype(np.float32)


def _regressor_model(**a):
    """TreeEnsembleRegressor's (forest, weight tables, aggregate, outputs, base values) from its attributes."""
    forest, index = _legacy_forest(a["nodes_treeids"], a["nodes_nodeids"], a["nodes_featureids"],
                                   _pick(a["nodes_values"], a.get("nodes_values_as_tensor")), a["nodes_modes"],
                                   a["nodes_truenodeids"], a["nodes_falsenodeids"],
                                   a["nodes_missing_value_tracks_true"])
    agg = _AGG.get(a["aggregate_function"])
    if agg is None:
        raise InvalidArgument(f"TreeEnsembleRegressor: unknown aggregate_function '{a['aggregate_function']}'")
    n_out = int(a["n_targets"]) if a["n_targets"] is not None else max(a["target_ids"] or [0]) + 1
    nodes = _leaf_nodes(index, a["target_treeids"] or [], a["target_nodeids"] or [])
    weights = _pick(a["target_weights"], a.get("target_weights_as_tensor"))
    wt, ht = _tables(forest.mode.size, n_out, nodes, a["target_ids"] or [], weights if weights is not None else [],
                     agg)
    return forest, wt, ht, agg, n_out, _pick(a["base_values"], a.get("base_values_as_tensor"))


def _classifier(x, a):
    forest, wt, ht, width, n_classes, one_class, base = built(_classifier_model, a)
    ints, strings = a["classlabels_int64s"], a["classlabels_strings"]
    res = _aggregate(forest, forest.leaves(x), wt, ht, 1, width)[:, :max(n_classes, 1)]
    if base is not None and base.size:
        res = res + base[: res.shape[1]]
    post = a["post_transform"]
    if one_class is not None:
        # binary model scoring one class: second column is the score, the first its complement
        col = res[:, one_class:one_class + 1] if one_class < res.shape[1] else res[:, :1]
        other = 1 - col if post in ("NONE", "PROBIT") else -col
        res = np.concatenate([other, col], axis=1)
    scores = post_transform_scores(res, post)
    best = np.argmax(scores, axis=1)
    if n_classes == 1:
        labels = np.where(best == 1, (ints or [1])[0], 0).astype(np.int64) if ints \
            else _labels_out(np.zeros_like(best), ints, strings)
    else:
        labels = _labels_out(best, ints, strings)
    return labels, scores.astype(np.float32)


def _classifier_model(**a):
    """TreeEnsembleClassifier's (forest, weight tables, their width, classes, the one class a binary model scores
    or None, base values) from its attributes."""
    forest, index = _legacy_forest(a["nodes_treeids"], a["nodes_nodeids"], a["nodes_featureids"],
                                   _pick(a["nodes_values"], a.get("nodes_values_as_tensor")), a["nodes_modes"],
                                   a["nodes_truenodeids"], a["nodes_falsenodeids"],
                                   a["nodes_missing_value_tracks_true"])
    ints, strings = a["classlabels_int64s"], a["classlabels_strings"]
    n_classes = len(strings or ints or [])
    if n_classes == 0:
        raise InvalidArgument("TreeEnsembleClassifier: class labels are required")
    class_ids = list(a["class_ids"] or [])
    nodes = _leaf_nodes(index, a["class_treeids"] or [], a["class_nodeids"] or [])
    weights = _pick(a["class_weights"], a.get("class_weights_as_tensor"))
    width = max(n_classes, max(class_ids) + 1 if class_ids else 1)
    wt, ht = _tables(forest.mode.size, width, nodes, class_ids, weights if weights is not None else [], 1)
    one_class = class_ids[0] if len(set(class_ids)) == 1 and n_classes <= 2 else None
    return forest, wt, ht, width, n_classes, one_class, _pick(a["base_values"], a.get("base_values_as_tensor"))


_COMMON = ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
           "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true", "base_values",
           "post_transform")


@op("TreeEnsembleRegressor", since=1, domain=ML_DOMAIN)
@via_float32
def tree_ensemble_regressor_1(x, *, aggregate_function="SUM", base_values=None, n_targets=None,
                              nodes_falsenodeids=None, nodes_featureids=None, nodes_hitrates=None,
                              nodes_missing_value_tracks_true=None, nodes_modes=None, nodes_nodeids=None,
                              nodes_treeids=None, nodes_truenodeids=None, nodes_values=None, post_transform="NONE",
                              target_ids=None, target_nodeids=None, target_treeids=None, target_weights=None):
    attrs = dict(locals())
    return _regressor(attrs.pop("x"), attrs)


@op("TreeEnsembleRegressor", since=3, domain=ML_DOMAIN)
@via_float32
def tree_ensemble_regressor_3(x, *, aggregate_function="SUM", base_values=None, base_values_as_tensor=None,
                              n_targets=None, nodes_falsenodeids=None, nodes_featureids=None, nodes_hitrates=None,
                              nodes_hitrates_as_tensor=None, nodes_missing_value_tracks_true=None, nodes_modes=None,
                              nodes_nodeids=None, nodes_treeids=None, nodes_truenodeids=None, nodes_values=None,
                              nodes_values_as_tensor=None, post_transform="NONE", target_ids=None,
                              target_nodeids=None, target_treeids=None, target_weights=None,
                              target_weights_as_tensor=None):
    attrs = dict(locals())
    return _regressor(attrs.pop("x"), attrs)


@op("TreeEnsembleClassifier", since=1, domain=ML_DOMAIN)
@via_float32
def tree_ensemble_classifier_1(x, *, base_values=None, class_ids=None, class_nodeids=None, class_treeids=None,
                               class_weights=None, classlabels_int64s=None, classlabels_strings=None,
                               nodes_falsenodeids=None, nodes_featureids=None, nodes_hitrates=None,
                               nodes_missing_value_tracks_true=None, nodes_modes=None, nodes_nodeids=None,
                               nodes_treeids=None, nodes_truenodeids=None, nodes_values=None,
                               post_transform="NONE"):
    attrs = dict(locals())
    return _classifier(attrs.pop("x"), attrs)


@op("TreeEnsembleClassifier", since=3, domain=ML_DOMAIN)
@via_float32
def tree_ensemble_classifier_3(x, *, base_values=None, base_values_as_tensor=None, class_ids=None,
                               class_nodeids=None, class_treeids=None, class_weights=None,
                               class_weights_as_tensor=None, classlabels_int64s=None, classlabels_strings=None,
                               nodes_falsenodeids=None, nodes_featureids=None, nodes_hitrates=None,
                               nodes_hitrates_as_tensor=None, nodes_missing_value_tracks_true=None, nodes_modes=None,
                               nodes_nodeids=None, nodes_treeids=None, nodes_truenodeids=None, nodes_values=None,
                               nodes_values_as_tensor=None, post_transform="NONE"):
    attrs = dict(locals())
    return _classifier(attrs.pop("x"), attrs)
