"""The activation table (ops/activations.py) is the one numbering: the C enum headers the two kernel builds generate
from it agree with it, the C sources define no codes of their own and use only the table's, each EP's codes are the
table's, and every activation an EP lists computes what its ai.onnx op's numpy kernel computes."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from onnxide.ops import activations as A
from onnxide.ops import fused, registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "py_engine", "onnxide", "ops", "activations.py")
KERNEL_SETS = {  # prefix: (C sources, the build folder its build.sh writes the header into, header name)
    "NX": (os.path.join(ROOT, "native_eps", "cpu_kernels"),
           os.environ.get("ONNXIDE_NATIVE_DIR") or os.path.join(ROOT, "build", "native"), "nx_act_codes.h"),
    "OX": (os.path.join(ROOT, "wasm_kernels"),
           os.environ.get("OX_WASM_OUT") or os.path.join(ROOT, "build", "wasm"), "ox_act_codes.h"),
}


def _enum_values(header_text, prefix):
    return {m.group(1).lower(): int(m.group(2))
            for m in re.finditer(rf"\b{prefix}_ACT_(\w+)\s*=\s*(\d+)", header_text)}


def test_codes_are_one_numbering():
    assert [a.code for a in A.ACTIVATIONS] == list(range(len(A.ACTIVATIONS)))
    assert len(A.BY_NAME) == len(A.ACTIVATIONS)
    assert A.FUSED[""].name == "none"
    for act in A.ACTIVATIONS:
        assert len(act.params) <= 2, act  # the kernels take two parameters, a and b


@pytest.mark.parametrize("prefix", sorted(KERNEL_SETS))
def test_generator_as_the_builds_run_it(prefix):
    """build.sh runs the table file as a script in isolated mode (no package import, no numpy): its output is the
    table, one enumerator per activation."""
    out = subprocess.run([sys.executable, "-I", TABLE, "--c-enum", prefix], check=True, capture_output=True,
                         text=True).stdout
    assert out == A.c_enum(prefix)
    assert _enum_values(out, prefix) == {a.name: a.code for a in A.ACTIVATIONS}


@pytest.mark.parametrize("prefix", sorted(KERNEL_SETS))
def test_built_header_matches_the_table(prefix):
    """The header the last build compiled against is the table's (a stale build would number differently)."""
    _, build_dir, header = KERNEL_SETS[prefix]
    path = os.path.join(build_dir, header)
    if not os.path.isfile(path):
        pytest.skip(f"{header} not generated here (the kernel build has not run)")
    with open(path) as f:
        assert f.read() == A.c_enum(prefix)


@pytest.mark.parametrize("prefix", sorted(KERNEL_SETS))
def test_c_sources_define_no_codes_and_use_only_the_tables(prefix):
    src_dir, _, header = KERNEL_SETS[prefix]
    names = {f"{prefix}_ACT_{a.name.upper()}" for a in A.ACTIVATIONS}
    used = set()
    for fn in os.listdir(src_dir):
        if not fn.endswith((".c", ".h")):
            continue
        with open(os.path.join(src_dir, fn)) as f:
            text = f.read()
        assert not _enum_values(text, prefix), f"{fn} defines {prefix}_ACT_* values: they come from {header}"
        used |= set(re.findall(rf"\b{prefix}_ACT_\w+", text))
    assert used and used <= names, used - names


def _cases_in(fn_name, src_dir, prefix):
    """The {prefix}_ACT_* names the definition of C function `fn_name` handles (up to its closing '}')."""
    for f in sorted(os.listdir(src_dir)):
        if f.endswith((".c", ".h")):
            with open(os.path.join(src_dir, f)) as fh:
                m = re.search(rf"\b{fn_name}\([^;{{]*\{{(.*?)\n}}", fh.read(), re.S)
            if m:
                return {c.lower() for c in re.findall(rf"case {prefix}_ACT_(\w+)", m.group(1))}
    raise AssertionError(f"no definition of {fn_name} in {src_dir}")


def test_each_eps_codes_are_the_tables():
    from onnxide.eps import wasm_ops
    assert all(wasm_ops.ACT[n] == A.BY_NAME[n].code for n in wasm_ops.ACT)
    assert set(wasm_ops.ACT) - {"none"} == _cases_in("v_act", KERNEL_SETS["OX"][0], "OX")
    pytest.importorskip("onnxide_native")
    from onnxide_native import cpu_ops
    assert all(cpu_ops.ACT[n] == A.BY_NAME[n].code for n in cpu_ops.ACT)
    assert set(cpu_ops.ACT) - {"none"} == _cases_in("nx_act_row", KERNEL_SETS["NX"][0], "NX")


class _OpDef:
    def __init__(self, since, attrs):
        self.since, self.attrs = since, attrs


def test_unary_lookup():
    everything = A.BY_NAME
    assert A.unary_activation("LeakyRelu", _OpDef(6, {"alpha": 0.01}), {"alpha": 0.3}, everything) == ("leaky", 0.3, 0)
    assert A.unary_activation("Gelu", _OpDef(20, {"approximate": "none"}), {}, everything) == ("gelu", 0, 0)
    assert A.unary_activation("Gelu", _OpDef(20, {}), {"approximate": "tanh"}, everything)[0] == "gelu_tanh"
    assert A.unary_activation("Gelu", _OpDef(20, {}), {"approximate": "bogus"}, everything) is None
    assert A.unary_activation("Clip", _OpDef(6, {}), {"min": -1.0}, everything) == ("clip", -1.0, A.FLT_MAX)
    assert A.unary_activation("Clip", _OpDef(11, {}), {}, everything) is None  # limits are inputs from 11
    assert A.unary_activation("HardSwish", _OpDef(6, {}), {}, everything) is None  # not an op before 14
    assert A.unary_activation("Relu", _OpDef(6, {}), {"unknown": 1}, everything) is None
    assert A.unary_activation("Exp", _OpDef(6, {}), {}, {"relu"}) is None  # the EP lacks it


def test_fused_lookup():
    everything = A.BY_NAME
    assert A.fused_activation("FusedConv", {"activation": "LeakyRelu"}, {}, everything) == ("leaky", 0.01, 0)
    assert A.fused_activation("FusedConv", {"activation": "Clip", "activation_params": [-1, 2]}, {},
                              everything) == ("clip", -1.0, 2.0)
    assert A.fused_activation("FusedConv", {}, {}, everything) == ("none", 0, 0)
    assert A.fused_activation("FusedConv", {"activation": "Elu"}, {}, everything) is None
    gemm = {"activation_alpha": 0.01, "activation_beta": 0.5}
    assert A.fused_activation("FusedGemm", {"activation": "HardSigmoid", "activation_alpha": 0.3}, gemm,
                              everything) == ("hardsigmoid", 0.3, 0.5)
    assert A.fused_activation("FusedGemm", {"activation": "Clip"}, gemm, everything) is None  # as onnxruntime


def _numpy_reference(act):
    """The activation at its table defaults through its ai.onnx op's registered kernel."""
    k = registry.lookup("", act.op, act.since).kernel
    return lambda x: k(x, **dict(act.when), **dict(act.params))


def _inputs(act):
    x = np.concatenate([np.linspace(-6, 6, 4999, dtype=np.float32), np.float32([0, -0.0, 1e-6, 20, -20])])
    return np.abs(x) if act.name == "sqrt" else x


@pytest.mark.parametrize("name", [a.name for a in A.ACTIVATIONS if a.op])
def test_fused_activate_is_the_ops_kernel(name):
    act = A.BY_NAME[name]
    x = _inputs(act)
    p = [v for _, v in act.params] + [0.0, 0.0]
    np.testing.assert_array_equal(fused.activate(x, name, p[0], p[1]), _numpy_reference(act)(x))


@pytest.mark.parametrize("name", [a.name for a in A.ACTIVATIONS if a.op])
def test_native_codes_compute_the_activation(name, monkeypatch):
    """Through nx_act with the table's code: a kernel set numbering differently fails here."""
    import onnxide
    if "NativeCPUExecutionProvider" not in onnxide.get_available_providers():
        pytest.skip("native CPU kernels not built")
    from onnxide_native import cpu_ops, lib
    monkeypatch.setattr(cpu_ops, "SMALL_ACT", 1)
    if name not in cpu_ops.ACT:
        pytest.skip(f"the native kernels do not list {name}")
    act = A.BY_NAME[name]
    x = _inputs(act)
    p = [v for _, v in act.params] + [0.0, 0.0]
    got = cpu_ops.act(lib.load(), x, cpu_ops.ACT[name], p[0], p[1])
    assert got is not cpu_ops.FALLBACK
    np.testing.assert_allclose(got, _numpy_reference(act)(x), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", [a.name for a in A.ACTIVATIONS if a.op])
def test_wasm_codes_compute_the_activation(name):
    """Through ox_unary with the table's code (both builds where they are built)."""
    pytest.importorskip("wasmtime")
    from onnxide.eps import wasm_ops, wasm_ops_elem, wasm_runtime
    from onnxide.eps.wasm import _Kernels
    act = A.BY_NAME[name]
    x = _inputs(act)
    p = [v for _, v in act.params] + [0.0, 0.0]
    builds = [b for b in wasm_runtime.BUILDS if wasm_runtime.find_build(b)]
    if not builds:
        pytest.skip("no wasm kernel build")
    for build in builds:
        rt = _Kernels(*wasm_runtime.load(build))
        got = wasm_ops_elem.unary_fast(rt, x, wasm_ops.ACT[name], p[0], p[1])
        np.testing.assert_allclose(got, _numpy_reference(act)(x), rtol=2e-6, atol=2e-6, err_msg=build)
