"""What every WGSL kernel is built from: the templates in webgpu_shaders/ (shipped in the wheel as the
onnxide_wgsl package), bindings and typed accessors per tensor (bool stored as u32, int64 as two i32 words), the
meta uniform (shapes, strides and parameters as u32 words, so a new shape never recompiles) and the workgroup
layout. Kernels are keyed by (family, parameters, dtypes, ranks) in WebGpuDevice.pipeline."""
import string
from functools import lru_cache
from importlib import resources

import numpy as np

WORKGROUP = 64
MAX_GROUPS = 65535
META_WORDS = 256  # the meta uniform: 1 KiB, words read with m(i)
LINEAR = f"(gid.x + gid.y * {MAX_GROUPS * WORKGROUP}u)"

# numpy dtype -> (WGSL compute type, storage element type)
TYPES = {np.dtype(np.float32): ("f32", "f32"), np.dtype(np.float16): ("f16", "f16"), np.dtype(np.int32): ("i32", "i32"),
         np.dtype(np.uint32): ("u32", "u32"), np.dtype(np.int64): ("i32", "i32"), np.dtype(np.bool_): ("bool", "u32")}


def workgroups(n):
    """(x, y, 1) workgroups covering n invocations (y > 1 past the per-dimension limit; kernels use LINEAR)."""
    g = -(-n // WORKGROUP)
    return (min(g, MAX_GROUPS), -(-g // MAX_GROUPS), 1)


@lru_cache(maxsize=None)
def template(name):
    """The text of webgpu_shaders/<name>.wgsl."""
    return resources.files("onnxide_wgsl").joinpath(f"{name}.wgsl").read_text()


def render(name, **fields):
    """Template `name` with its ${FIELDS} filled (a missing field is an error, not an empty string)."""
    return string.Template(template(name)).substitute(fields)


def ctype(dtype):
    return TYPES[np.dtype(dtype)][0]


def _decl(i, name, dtype, write):
    store = TYPES[np.dtype(dtype)][1]
    access = "read_write" if write else "read"
    return f"@group(0) @binding({i}) var<storage, {access}> {name}: array<{store}>;"


def _load(name, dtype):
    """fn ld_<name>(i) -> compute type."""
    dt = np.dtype(dtype)
    ct = TYPES[dt][0]
    if dt == np.int64:
        return f"fn ld_{name}(i: u32) -> i32 {{ return {name}[2u * i]; }}"
    if dt == np.bool_:
        return f"fn ld_{name}(i: u32) -> bool {{ return {name}[i] != 0u; }}"
    return f"fn ld_{name}(i: u32) -> {ct} {{ return {name}[i]; }}"


def _store(name, dtype):
    """fn st_<name>(i, v) from the compute type (int64: the low word and its sign extension)."""
    dt = np.dtype(dtype)
    ct = TYPES[dt][0]
    if dt == np.int64:
        return (f"fn st_{name}(i: u32, v: i32) {{ {name}[2u * i] = v; "
                f"{name}[2u * i + 1u] = select(0, -1, v < 0); }}")
    if dt == np.bool_:
        return f"fn st_{name}(i: u32, v: bool) {{ {name}[i] = select(0u, 1u, v); }}"
    return f"fn st_{name}(i: u32, v: {ct}) {{ {name}[i] = v; }}"


def interface(inputs, outputs, meta_words=META_WORDS, error_flag=False):
    """WGSL declarations for tensors `inputs` / `outputs` ([(name, dtype)]) at bindings 0.., then (`error_flag`) the
    device's error flag `err` (what Device.dispatch binds when `checked`), then the meta uniform: `enable f16;` where
    needed, the bindings, ld_/st_ accessors, m(i) for meta word i and mf(i) for it as an f32, and LINEAR (a thread's
    index)."""
    dts = [np.dtype(d) for _, d in list(inputs) + list(outputs)]
    lines = ["enable f16;"] if np.dtype(np.float16) in dts else []
    n = 0
    for name, dt in inputs:
        lines += [_decl(n, name, dt, False), _load(name, dt)]
        n += 1
    for name, dt in outputs:
        lines += [_decl(n, name, dt, True), _store(name, dt), _load(name, dt).replace("fn ld_", "fn ldo_")]
        n += 1
    if error_flag:
        lines.append(f"@group(0) @binding({n}) var<storage, read_write> err: array<atomic<u32>>;")
        n += 1
    vec4s = -(-meta_words // 4)
    lines += [f"struct Meta {{ v: array<vec4<u32>, {vec4s}> }};",
              f"@group(0) @binding({n}) var<uniform> params: Meta;",
              "fn m(i: u32) -> u32 { return params.v[i / 4u][i % 4u]; }",
              "fn mf(i: u32) -> f32 { return bitcast<f32>(m(i)); }",
              "fn mi(i: u32) -> i32 { return bitcast<i32>(m(i)); }"]
    return "\n".join(lines)


def f32_word(v):
    """An f32 as the u32 meta word mf() reads back."""
    return int(np.asarray(v, np.float32).view(np.uint32))


def i32_word(v):
    """An i32 (possibly negative) as the u32 meta word mi() reads back."""
    return int(np.asarray(v, np.int64).astype(np.int32).view(np.uint32))
