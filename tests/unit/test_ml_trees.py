"""ai.onnx.ml TreeEnsembleRegressor: the level-by-level walk of every tree against a per-sample walk written here
(modes, NaN features and their missing_true branch, trees of uneven depth), the model built once per node, and a
cycle refused."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxide
from onnxide.ops import ml, ml_trees

MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
TESTS = {"BRANCH_LEQ": lambda v, t: v <= t, "BRANCH_LT": lambda v, t: v < t, "BRANCH_GTE": lambda v, t: v >= t,
         "BRANCH_GT": lambda v, t: v > t, "BRANCH_EQ": lambda v, t: v == t, "BRANCH_NEQ": lambda v, t: v != t}


def _forest(rng, n_trees, modes, missing):
    """Random trees of uneven depth as TreeEnsembleRegressor attributes, and per tree {node id: node} to walk."""
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                             "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    trees = []
    for t in range(n_trees):
        nodes, todo, next_id = {}, [(0, 0)], 1
        while todo:
            nid, depth = todo.pop()
            if depth >= rng.integers(1, 7):  # a leaf
                nodes[nid] = ("LEAF", float(rng.standard_normal()))
                continue
            mode = modes[rng.integers(len(modes))]
            node = (mode, int(rng.integers(3)), float(rng.integers(-2, 3)) / 2, next_id, next_id + 1,
                    int(rng.integers(2)) if missing else 0)
            nodes[nid] = node
            todo += [(next_id, depth + 1), (next_id + 1, depth + 1)]
            next_id += 2
        for nid, node in nodes.items():
            attrs["nodes_treeids"].append(t)
            attrs["nodes_nodeids"].append(nid)
            if node[0] == "LEAF":
                attrs["nodes_modes"].append("LEAF")
                for k in ("nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids",
                          "nodes_missing_value_tracks_true"):
                    attrs[k].append(0)
                attrs["nodes_values"].append(0.0)
                attrs["target_treeids"].append(t)
                attrs["target_nodeids"].append(nid)
                attrs["target_ids"].append(0)
                attrs["target_weights"].append(node[1])
            else:
                mode, feature, value, true, false, miss = node
                attrs["nodes_modes"].append(mode)
                attrs["nodes_featureids"].append(feature)
                attrs["nodes_values"].append(value)
                attrs["nodes_truenodeids"].append(true)
                attrs["nodes_falsenodeids"].append(false)
                attrs["nodes_missing_value_tracks_true"].append(miss)
        trees.append(nodes)
    return attrs, trees


def _walk(trees, row):
    """The ONNX rule, one sample at a time: a NaN feature takes the node's missing_true branch."""
    total = 0.0
    for nodes in trees:
        node = nodes[0]
        while node[0] != "LEAF":
            mode, feature, value, true, false, miss = node
            v = row[feature]
            go = bool(miss) if np.isnan(v) else TESTS[mode](v, value)
            node = nodes[true if go else false]
        total += node[1]
    return total


def _model(attrs):
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", n_targets=1, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
                             ir_version=9).SerializeToString()


EPS = ["CPUExecutionProvider"] + [ep for ep in ["NativeCPUExecutionProvider"]
                                  if ep in onnxide.get_available_providers()]


@pytest.mark.parametrize("modes", [["BRANCH_LEQ"], ["BRANCH_NEQ"], MODES])
@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("ep", EPS)
@pytest.mark.parametrize("threads", [1, 2])
def test_walk_matches_a_per_sample_walk(modes, missing, ep, threads):
    rng = np.random.default_rng(len(modes) * 2 + missing)
    attrs, trees = _forest(rng, 12, modes, missing)
    x = rng.integers(-2, 3, (40, 3)).astype(np.float32) / 2  # (on the thresholds' grid: ties and equalities)
    x[rng.random(x.shape) < 0.2] = np.nan
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = threads
    sess = onnxide.InferenceSession(_model(attrs), so, providers=list(dict.fromkeys([ep, "CPUExecutionProvider"])))
    assert sess._executor.main_plan.steps[0].ep.name == ep
    got = sess.run(None, {"x": x})[0][:, 0]
    want = np.array([_walk(trees, row) for row in x.astype(np.float64)], np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_the_forest_is_built_once_per_node(monkeypatch):
    rng = np.random.default_rng(7)
    (a1, t1), (a2, t2) = _forest(rng, 5, ["BRANCH_LEQ"], False), _forest(rng, 7, MODES, True)
    built = []
    original = ml_trees._regressor_model
    monkeypatch.setattr(ml_trees, "_regressor_model", lambda **a: built.append(1) or original(**a))
    monkeypatch.setattr(ml, "_BUILT", {})
    x = rng.standard_normal((6, 3)).astype(np.float32)
    sessions = [onnxide.InferenceSession(_model(a), providers=["CPUExecutionProvider"]) for a in (a1, a2)]
    for _ in range(3):
        for sess, trees in zip(sessions, (t1, t2)):  # (two nodes in turn: each keeps its own model)
            got = sess.run(None, {"x": x})[0][:, 0]
            np.testing.assert_allclose(got, [_walk(trees, r) for r in x.astype(np.float64)], rtol=1e-6, atol=1e-6)
    assert len(built) == 2


def test_a_cycle_is_refused():
    attrs = {"nodes_treeids": [0, 0, 0], "nodes_nodeids": [0, 1, 2], "nodes_featureids": [0, 0, 0],
             "nodes_values": [0.0, 0.0, 0.0], "nodes_modes": ["BRANCH_LEQ"] * 3, "nodes_truenodeids": [1, 2, 1],
             "nodes_falsenodeids": [1, 2, 1], "target_treeids": [0], "target_nodeids": [1], "target_ids": [0],
             "target_weights": [1.0]}  # (node 0 leads into 1 -> 2 -> 1 ...)
    sess = onnxide.InferenceSession(_model(attrs), providers=["CPUExecutionProvider"])
    with pytest.raises(onnxide.InvalidArgument, match="cycle"):
        sess.run(None, {"x": np.zeros((1, 3), np.float32)})


def test_more_nodes_than_the_cache_from_several_threads():
    """70 tree nodes (past the 64 models kept) run from 4 threads at once: each still gives its own trees' sums."""
    import concurrent.futures
    rng = np.random.default_rng(11)
    forests = [_forest(rng, 3, ["BRANCH_LEQ"], False) for _ in range(70)]
    sessions = [onnxide.InferenceSession(_model(a), providers=["CPUExecutionProvider"]) for a, _ in forests]
    x = rng.standard_normal((5, 3)).astype(np.float32)
    want = [np.array([_walk(t, r) for r in x.astype(np.float64)], np.float32) for _, t in forests]

    def run(i):
        return sessions[i].run(None, {"x": x})[0][:, 0]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            for i, got in enumerate(pool.map(run, range(70))):
                np.testing.assert_allclose(got, want[i], rtol=1e-6, atol=1e-6)
