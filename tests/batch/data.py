"""Models and datasets for the Ray batch tests: an MLP built with onnx.helper, Parquet rows of features + id."""
import numpy as np


def mlp(features=64, hidden=256, classes=10, layers=2, seed=0):
    """Serialized MLP float32 [N, features] -> logits [N, classes], probs [N, classes] (MatMul/Add/Relu, Softmax)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits, prev, width = [], [], "x", features
    for i, out in enumerate([hidden] * layers + [classes]):
        w = (rng.standard_normal((width, out)) / np.sqrt(width)).astype(np.float32)
        b = (rng.standard_normal(out) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        prev, width = f"a{i}", out
        if i < layers:
            nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
            prev = f"r{i}"
    nodes += [helper.make_node("Identity", [prev], ["logits"]),
              helper.make_node("Softmax", [prev], ["probs"], axis=-1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes]),
         helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def features(rows, width=64, seed=1):
    return np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)


def write_parquet(path, x, files=4):
    """Rows id + features (a list<float> column) in `files` Parquet files under path."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    for k, part in enumerate(np.array_split(np.arange(len(x)), files)):
        flat = pa.array(x[part].reshape(-1))
        col = pa.FixedSizeListArray.from_arrays(flat, x.shape[1])
        table = pa.table({"id": pa.array(part, pa.int64()), "features": col})
        pq.write_table(table, os.path.join(path, f"part-{k}.parquet"))
    return path


def reference(model, x, chunk=1024, **columns):
    """The single-process result: onnxide over x in order, chunk rows per run -> {output: array}."""
    import onnxide

    sess = onnxide.InferenceSession(model)
    names = [o.name for o in sess.get_outputs()]
    parts = [sess.run(names, {"x": x[i:i + chunk]}) for i in range(0, len(x), chunk)]
    return {n: np.concatenate([p[k] for p in parts]) for k, n in enumerate(names)}


def read_scored(path, key="id"):
    """The scored Parquet output as {column: numpy array} sorted by key (tensor columns stacked)."""
    import pyarrow.parquet as pq
    import ray.data  # noqa: F401  (registers Ray's tensor extension type for reading)

    table = pq.read_table(path).sort_by(key)
    out = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        out[name] = col.to_numpy_ndarray() if hasattr(col, "to_numpy_ndarray") else col.to_numpy(zero_copy_only=False)
    return out


def mean_rgb():
    """Serialized model input [N, 3, H, W] float32 -> mean [N, 3] (ReduceMean over H, W)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["input"], ["mean"], axes=[2, 3], keepdims=0)], "mean_rgb",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["N", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()
