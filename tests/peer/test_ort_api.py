"""onnxruntime Python API behaviours its own tests leave open, checked against onnxruntime itself."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxide

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17, **kw):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], **kw).SerializeToString()


def _mul(w=2.0):
    return _model([helper.make_node("Mul", ["x", "w"], ["y"])], [helper.make_tensor_value_info("x", F, [2, 3])],
                  [helper.make_tensor_value_info("y", F, [2, 3])],
                  [numpy_helper.from_array(np.full((2, 3), w, np.float32), "w")])


def _both(fn):
    """fn(module) for onnxruntime and onnxide: (result or exception type name) each."""
    out = []
    for mod in (onnxruntime, onnxide):
        try:
            out.append(fn(mod))
        except Exception as e:  # noqa: BLE001 - the exception kind is what is compared
            out.append(type(e).__name__)
    return out


@pytest.mark.filterwarnings("ignore:Specified provider")
def test_unknown_provider_falls_back_at_creation_and_raises_in_set_providers(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _both(lambda m: m.InferenceSession(_mul(), providers=["NoSuchProvider"]).get_providers())
        assert got == [["CPUExecutionProvider"]] * 2
        assert capsys.readouterr().out.count("EP Error Unknown Provider Type: NoSuchProvider") == 2
        known = _both(lambda m: m.InferenceSession(_mul(), providers=["CUDAExecutionProvider"]).get_providers())
        assert known == [["CPUExecutionProvider"]] * 2  # known to onnxruntime, not here: skipped with a warning
        got = _both(lambda m: m.InferenceSession(_mul()).set_providers(["NoSuchProvider"]))
    assert got == ["RuntimeError"] * 2
    with pytest.raises(RuntimeError, match="Unknown Provider Type: NoSuchProvider"):
        onnxide.InferenceSession(_mul(), providers=["NoSuchProvider"], enable_fallback=0)
    with pytest.warns(UserWarning, match="Specified provider 'CUDAExecutionProvider' is not in available"):
        onnxide.InferenceSession(_mul(), providers=["CUDAExecutionProvider"])


def test_options_attributes_and_config_entries():
    for cls in ("SessionOptions", "RunOptions"):
        assert _both(lambda m: setattr(getattr(m, cls)(), "no_such_field", 1)) == ["AttributeError"] * 2
    assert _both(lambda m: m.SessionOptions().get_session_config_entry("k")) == ["RuntimeError"] * 2
    assert _both(lambda m: m.RunOptions().get_run_config_entry("k")) == ["RuntimeError"] * 2
    so_names = {n for n in dir(onnxruntime.SessionOptions()) if not n.startswith("_")}
    assert so_names <= {n for n in dir(onnxide.SessionOptions()) if not n.startswith("_")}
    for attr in ("log_severity_level", "use_per_session_threads", "graph_optimization_level", "execution_mode"):
        assert _both(lambda m: getattr(m.SessionOptions(), attr)) == [getattr(onnxruntime.SessionOptions(), attr)] * 2


def test_options_are_copied_by_the_session():
    so = onnxide.SessionOptions()
    sess = onnxide.InferenceSession(_mul(), so)
    so.intra_op_num_threads = 3
    assert sess.get_session_options().intra_op_num_threads == 0


def test_enums_print_like_onnxruntime():
    for enum, member in [("GraphOptimizationLevel", "ORT_ENABLE_ALL"), ("ExecutionMode", "ORT_PARALLEL"),
                         ("ExecutionOrder", "PRIORITY_BASED"), ("OrtMemType", "CPU_INPUT"),
                         ("OrtAllocatorType", "ORT_ARENA_ALLOCATOR"), ("OrtSparseFormat", "ORT_SPARSE_CSRC"),
                         ("OrtCompileApiFlags", "ERROR_IF_OUTPUT_FILE_EXISTS")]:
        ort_v, ide_v = (getattr(getattr(m, enum), member) for m in (onnxruntime, onnxide))
        assert (str(ide_v), repr(ide_v), f"{ide_v}", int(ide_v)) == (str(ort_v), repr(ort_v), f"{ort_v}", int(ort_v))
        assert {k: int(v) for k, v in getattr(onnxide, enum).__members__.items()} == \
               {k: int(v) for k, v in getattr(onnxruntime, enum).__members__.items()}


def test_module_functions():
    for name in ("disable_telemetry_events", "enable_telemetry_events", "preload_dlls"):
        assert _both(lambda m: getattr(m, name)()) == [None, None]
    assert _both(lambda m: m.set_default_logger_severity(7)) == ["RuntimeError"] * 2
    assert _both(lambda m: m.set_default_logger_severity(3)) == [None, None]
    onnxide.set_default_logger_severity(2)
    assert onnxide.get_all_providers()[-1] == "CPUExecutionProvider"
    assert set(onnxruntime.get_all_providers()) <= set(onnxide.get_all_providers())
    assert "Build Info" in onnxide.get_build_info()
    assert [d.ep_name for d in onnxide.get_ep_devices()][-1] == "CPUExecutionProvider"


def test_set_seed_makes_unseeded_random_ops_repeat():
    m = _model([helper.make_node("RandomUniform", [], ["y"], shape=[4])], [],
               [helper.make_tensor_value_info("y", F, [4])])
    sess = onnxide.InferenceSession(m)
    onnxide.set_seed(7)
    a = sess.run(None, {})[0]
    onnxide.set_seed(7)
    np.testing.assert_array_equal(sess.run(None, {})[0], a)


@pytest.mark.parametrize("x", [np.array([["a", "bé"], ["", "d"]]), np.array([[b"a", b"xy"], [b"", b"d"]]),
                               np.array([["a", "b"], ["c", "d"]], object),
                               np.array([[b"ab", b"cd"], [b"ef", b"gh"]], np.void)], ids=["str", "bytes", "object",
                                                                                           "void"])
def test_string_feeds(x):
    m = _model([helper.make_node("Identity", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 2])],
               [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 2])])
    got = _both(lambda mod: mod.InferenceSession(m).run(None, {"x": x})[0].tolist())
    assert got[0] == got[1]


def test_missing_inputs_are_a_value_error_and_optional_ones_are_not_required():
    m = _model([helper.make_node("Add", ["a", "b"], ["y"])], [helper.make_tensor_value_info(n, F, [1]) for n in "ab"],
               [helper.make_tensor_value_info("y", F, [1])])
    assert _both(lambda mod: mod.InferenceSession(m).run(None, {"a": np.ones(1, np.float32)})) == ["ValueError"] * 2
    assert _both(lambda mod: mod.InferenceSession(m).run(None, {"z": np.ones(1, np.float32)})) == ["ValueError"] * 2


def test_map_feed_keys_are_checked():
    model = os.path.join(ROOT, "..", "shared", "peer", "onnxruntime-python-tests", "testdata",
                         "pipeline_vectorize.onnx")
    if not os.path.isfile(model):
        pytest.skip("the shared onnxruntime test data is not here")
    feed = {0: 25.0, "a": 1.0}
    got = _both(lambda m: m.InferenceSession(model).run(None, {"float_input": feed}))
    assert got == ["RuntimeError"] * 2


def test_lora_adapter_files_are_read_and_written_like_onnxruntime(tmp_path):
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    b = np.arange(8, dtype=np.float32).reshape(2, 4) / 10
    for writer, reader in [(onnxide, onnxruntime), (onnxruntime, onnxide)]:
        path = str(tmp_path / f"{writer.__name__}.onnx_adapter")
        fmt = writer.AdapterFormat()
        fmt.set_adapter_version(3)
        fmt.set_model_version(5)
        fmt.set_parameters({"pa": writer.OrtValue.ortvalue_from_numpy(a), "pb": writer.OrtValue.ortvalue_from_numpy(b)})
        fmt.export_adapter(path)
        back = reader.AdapterFormat.read_adapter(path)
        assert (back.get_adapter_version(), back.get_model_version()) == (3, 5)
        params = back.get_parameters()
        np.testing.assert_array_equal(params["pa"].numpy(), a)
        np.testing.assert_array_equal(params["pb"].numpy(), b)
    x = helper.make_tensor_value_info("x", F, [3, 4])
    ins = [x, helper.make_tensor_value_info("pa", F, [4, "r"]), helper.make_tensor_value_info("pb", F, ["r", 4])]
    model = _model([helper.make_node("MatMul", ["x", "pa"], ["t"]), helper.make_node("MatMul", ["t", "pb"], ["d"]),
                    helper.make_node("Add", ["x", "d"], ["y"])], ins, [helper.make_tensor_value_info("y", F, [3, 4])],
                   [numpy_helper.from_array(np.zeros((4, 1), np.float32), "pa"),
                    numpy_helper.from_array(np.zeros((1, 4), np.float32), "pb")])
    feed = {"x": np.ones((3, 4), np.float32)}

    def run(mod):
        adapter = mod.LoraAdapter()
        adapter.Load(str(tmp_path / "onnxruntime.onnx_adapter"))
        ro = mod.RunOptions()
        ro.add_active_adapter(adapter)
        sess = mod.InferenceSession(model)
        return sess.run(None, feed, ro)[0], sess.run(None, feed)[0]

    (ort_lora, ort_base), (ide_lora, ide_base) = run(onnxruntime), run(onnxide)
    np.testing.assert_allclose(ide_lora, ort_lora, rtol=1e-6)
    np.testing.assert_array_equal(ide_base, ort_base)
    assert not np.allclose(ide_lora, ide_base)


def test_sparse_tensors_feed_as_dense():
    shape, values, idx = [3, 3], np.array([1.0, 2.0, 3.0], np.float32), np.array([1, 4, 8], np.int64)
    coo = onnxide.SparseTensor.sparse_coo_from_numpy(shape, values, idx, onnxide.OrtDevice.make("cpu", 0))
    dense = np.zeros(9, np.float32)
    dense[idx] = values
    np.testing.assert_array_equal(coo.dense(), dense.reshape(3, 3))
    csr = onnxide.SparseTensor.sparse_csr_from_numpy(shape, values, np.array([1, 1, 2]), np.array([0, 1, 2, 3]),
                                                     onnxide.OrtDevice.make("cpu", 0))
    np.testing.assert_array_equal(csr.dense(), [[0, 1, 0], [0, 2, 0], [0, 0, 3]])
    assert onnxide.OrtValue.ort_value_from_sparse_tensor(csr).data_type() == "sparse_tensor(float)"
    with pytest.raises(RuntimeError):
        coo.to_cuda(onnxide.OrtDevice.make("cuda", 0))


def test_ortvalues_on_devices_onnxide_lacks_behave_as_a_cpu_build():
    x = np.ones((2, 2), np.float32)
    assert _both(lambda m: m.OrtValue.ortvalue_from_numpy(x, "cuda", 0)) == ["RuntimeError"] * 2
    assert _both(lambda m: m.OrtDevice.make("cuda", 1).device_id()) == [1, 1]
    assert _both(lambda m: m.OrtValue.ortvalue_from_numpy(x).element_type()) == [1, 1]
    assert _both(lambda m: m.OrtValue.ortvalue_from_numpy(np.zeros(5, np.int8)).tensor_size_in_bytes()) == [5, 5]


def test_profile_has_session_events(tmp_path):
    so = onnxide.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "p")
    sess = onnxide.InferenceSession(_mul(), so)
    sess.run(None, {"x": np.ones((2, 3), np.float32)})
    with open(sess.end_profiling()) as f:
        lines = f.read().splitlines()
    events = json.loads("\n".join(lines))
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == len(events) + 2  # one event a line
    assert {"model_loading_array", "session_initialization", "model_run"} <= {e["name"] for e in events}
    assert {e["cat"] for e in events} == {"Session", "Node"}


def test_optimized_model_with_external_initializers_loads_in_onnxruntime(tmp_path):
    so = onnxide.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "w.bin")
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "16")
    onnxide.InferenceSession(_mul(3.0), so)
    assert os.path.getsize(tmp_path / "w.bin") == 24
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(onnxruntime.InferenceSession(so.optimized_model_filepath).run(None, {"x": x})[0],
                                  x * 3)


def test_add_initializer_and_external_initializers_from_memory(tmp_path):
    so = onnxide.SessionOptions()
    so.add_initializer("w", onnxide.OrtValue.ortvalue_from_numpy(np.full((2, 3), 5, np.float32)))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(onnxide.InferenceSession(_mul(), so).run(None, {"x": x})[0], x * 5)
    w = numpy_helper.from_array(np.zeros((2, 3), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in {"location": "not_on_disk.bin", "offset": "8", "length": "24"}.items():
        w.external_data.add(key=k, value=v)
    m = _model([helper.make_node("Mul", ["x", "w"], ["y"])], [helper.make_tensor_value_info("x", F, [2, 3])],
               [helper.make_tensor_value_info("y", F, [2, 3])], [w])
    so = onnxide.SessionOptions()
    so.add_external_initializers_from_files_in_memory(["not_on_disk.bin"], [bytes(8) + np.full(6, 7, np.float32)
                                                                            .tobytes()], [32])
    np.testing.assert_array_equal(onnxide.InferenceSession(m, so).run(None, {"x": x})[0], x * 7)


def test_config_from_the_model(monkeypatch):
    m = _mul()
    from onnx import load_from_string
    proto = load_from_string(m)
    helper.set_model_props(proto, {"ort_config": json.dumps({"session_options": {"intra_op_num_threads": 3,
                                                                                 "graph_optimization_level": 1}})})
    data = proto.SerializeToString()
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    got = _both(lambda mod: (mod.InferenceSession(data).get_session_options().intra_op_num_threads,
                             str(mod.InferenceSession(data).get_session_options().graph_optimization_level)))
    assert got[0] == got[1] == (3, "GraphOptimizationLevel.ORT_ENABLE_BASIC")
    helper.set_model_props(proto, {"ort_config": "{\"session_options\": {}}}"})  # not JSON
    bad = proto.SerializeToString()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _both(lambda mod: mod.InferenceSession(bad)) == ["RuntimeError"] * 2
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "0")
    assert onnxide.InferenceSession(data).get_session_options().intra_op_num_threads == 0


def test_graph_assignment_names_each_node_and_its_ep():
    so = onnxide.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    sess = onnxide.InferenceSession(_mul(), so, providers=["CPUExecutionProvider"])
    (sub,) = sess.get_provider_graph_assignment_info()
    assert sub.ep_name == "CPUExecutionProvider" and [n.op_type for n in sub.get_nodes()] == ["Mul"]
    with pytest.raises(onnxide.Fail, match="record_ep_graph_assignment_info"):
        onnxide.InferenceSession(_mul()).get_provider_graph_assignment_info()


def test_compile_api_writes_the_model_and_reports_no_compiled_nodes(tmp_path):
    out = tmp_path / "c.onnx"
    compiler = onnxide.ModelCompiler(onnxide.SessionOptions(), _mul(), external_initializers_file_path="w.bin",
                                     external_initializers_size_threshold=8)
    compiler.compile_to_file(str(out))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(onnxruntime.InferenceSession(str(out)).run(None, {"x": x})[0], x * 2)
    assert os.path.getsize(tmp_path / "w.bin") == 24
    strict = onnxide.ModelCompiler(onnxide.SessionOptions(), _mul(),
                                   flags=onnxide.OrtCompileApiFlags.ERROR_IF_NO_NODES_COMPILED)
    with pytest.raises(onnxide.Fail, match="Unable to compile any nodes"):
        strict.compile_to_bytes()


def test_alias_maps_onnxruntime_to_onnxide_modules_only():
    code = ("import onnxruntime, onnxide, onnxruntime.capi._pybind_state as C, onnxruntime.backend as b;"
            "from onnxruntime.capi.onnxruntime_pybind11_state import Fail, OrtValueVector;"
            "assert onnxruntime is onnxide and C is onnxide.capi._pybind_state and b is onnxide.backend;"
            "assert Fail is onnxide.Fail and C.OrtValue is onnxide.OrtValue;"
            "assert onnxide.capi.__spec__.name == 'onnxide.capi'")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, "alias"), os.path.join(ROOT, "py_engine")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(HERE, "alias", "onnxruntime", "__init__.py")) as f:
        alias = f.read()
    assert "def " not in alias.split("class _Alias")[0]  # it defines no API name, only the module mapping
