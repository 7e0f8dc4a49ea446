"""The activation table every kernel set derives from: per activation its name, its code (one numbering for the numpy,
WASM and native kernels; the C enums NX_ACT_* / OX_ACT_* are generated from it at build time), its parameters with
defaults, and the ai.onnx op, com.microsoft ops and FusedConv / FusedGemm `activation` values that are it. Its numpy
definition is its ai.onnx op's registered kernel (ops/fused.py applies it). Each EP lists the names its kernels run.

Standard library only: the kernel builds run it as a script, `python3 -I activations.py --c-enum NX`."""
import math
from dataclasses import dataclass
from functools import partial

FLT_MAX = 3.4028234663852886e+38


@dataclass(frozen=True)
class Activation:
    """One activation. Its kernels compute act(x; a, b): `params` names a and b (attributes of `op`, with defaults).

    op / since / until: the ai.onnx op that is this activation from opset `since` (up to, not including, `until`);
    its registered kernel at `since` is the numpy definition. when: attribute values of `op` that select this
    activation among several of one op (an op's first entry gives those attributes' defaults). fused: the FusedConv
    `activation` value naming it (None: not fusable); gemm: whether FusedGemm takes it too (its parameters are
    activation_alpha, activation_beta). contrib: com.microsoft ops computing it of x (+ an optional bias)."""
    name: str
    code: int
    op: str = ""
    since: int = 6
    params: tuple = ()
    when: tuple = ()
    until: int = None
    fused: str = None
    gemm: bool = False
    contrib: tuple = ()


ACTIVATIONS = (
    Activation("none", 0, fused="", gemm=True),
    Activation("relu", 1, "Relu", fused="Relu", gemm=True),
    Activation("leaky", 2, "LeakyRelu", params=(("alpha", 0.01),), fused="LeakyRelu", gemm=True),
    Activation("sigmoid", 3, "Sigmoid", fused="Sigmoid", gemm=True),
    Activation("tanh", 4, "Tanh", fused="Tanh", gemm=True),
    Activation("hardsigmoid", 5, "HardSigmoid", params=(("alpha", 0.2), ("beta", 0.5)), fused="HardSigmoid",
               gemm=True),
    Activation("hardswish", 6, "HardSwish", since=14),
    Activation("clip", 7, "Clip", params=(("min", -FLT_MAX), ("max", FLT_MAX)), until=11, fused="Clip"),
    Activation("exp", 8, "Exp"),
    Activation("sqrt", 9, "Sqrt"),
    Activation("erf", 10, "Erf", since=9),
    Activation("gelu", 11, "Gelu", since=20, when=(("approximate", "none"),), contrib=("Gelu", "BiasGelu")),
    Activation("gelu_tanh", 12, "Gelu", since=20, when=(("approximate", "tanh"),), contrib=("FastGelu",)),
    Activation("elu", 13, "Elu", params=(("alpha", 1.0),)),
    Activation("abs", 14, "Abs"),
    Activation("neg", 15, "Neg"),
    Activation("swish", 16, "Swish", since=24, params=(("alpha", 1.0),), contrib=("QuickGelu",)),
    Activation("selu", 17, "Selu", params=(("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875))),
    Activation("log", 18, "Log"),
)
BY_NAME = {a.name: a for a in ACTIVATIONS}
FUSED = {a.fused: a for a in ACTIVATIONS if a.fused is not None}  # FusedConv's `activation` value -> activation
CONTRIB = {op: a for a in ACTIVATIONS for op in a.contrib}         # com.microsoft op -> activation
BY_OP = {}                                                          # ai.onnx op -> its activations, table order
for _a in ACTIVATIONS:
    if _a.op:
        BY_OP.setdefault(_a.op, []).append(_a)
FUSED_GEMM_PARAMS = ("activation_alpha", "activation_beta")


def codes(names):
    """{name: code} for the activations an EP's kernels implement (a name the table lacks raises KeyError)."""
    return {n: BY_NAME[n].code for n in names}


def _op_defaults(op_type):
    acts = BY_OP[op_type]
    return {**dict(acts[0].when), **{k: v for a in acts for k, v in a.params}}


def _select(acts, vals):
    """(name, a, b) of the activation in `acts` whose `when` matches the attribute values `vals`, or None."""
    for act in acts:
        if all(vals.get(k) == v for k, v in act.when):
            p = [float(vals[k]) for k, _ in act.params] + [0.0, 0.0]
            return act.name, p[0], p[1]
    return None


# ai.onnx op -> (first opset, attribute defaults, {attribute: value} -> (name, a, b) or None)
UNARY = {op: (acts[0].since, _op_defaults(op), partial(_select, acts)) for op, acts in BY_OP.items()}


def unary_activation(op_type, opdef, attrs, supported):
    """(activation name, a, b) for an ai.onnx node of `op_type` with `attrs` under `opdef` (its registered kernel's
    defaults win over the table's), or None when the op, its opset, an attribute or the resulting activation (not
    in `supported`) is not one the EP runs as an activation."""
    acts = [a for a in BY_OP.get(op_type, ()) if a.since <= opdef.since and (a.until is None or opdef.since < a.until)]
    if not acts:
        return None
    defaults = _op_defaults(op_type)
    if set(attrs) - set(defaults):
        return None
    vals = {k: opdef.attrs.get(k, v) for k, v in defaults.items()}
    vals.update(attrs)
    p = _select(acts, vals)
    return p if p is not None and p[0] in supported else None


def clip_activation(lo, hi):
    """(a, b) of the clip activation that computes Clip-11+ with constant bounds `lo` / `hi` (arrays of one value,
    or None where absent: no bound, so ±inf, not Clip-6's ±FLT_MAX) as its kernel does (numpy's
    minimum(maximum(x, lo), hi)), or None where it would not: a bound that is not one value or is NaN, or lo > hi
    (every value is hi then)."""
    vals = []
    for v, default in ((lo, -math.inf), (hi, math.inf)):
        if v is not None and (v.size != 1 or v.dtype.kind != "f" or v.reshape(-1)[0] != v.reshape(-1)[0]):
            return None
        vals.append(default if v is None else float(v.reshape(-1)[0]))
    return tuple(vals) if vals[0] <= vals[1] else None


def fused_activation(op_type, attrs, defaults, supported):
    """(activation name, a, b) for a FusedConv / FusedGemm node's `activation` attribute and parameters (FusedConv's
    activation_params, FusedGemm's activation_alpha / activation_beta, with `defaults` the op's attribute
    defaults), missing ones from the table; None when the table has no such fused activation for the op or it is
    not in `supported`."""
    act = FUSED.get(attrs.get("activation", defaults.get("activation", "")) or "")
    if act is None or act.name not in supported or (op_type == "FusedGemm" and not act.gemm):
        return None
    if op_type == "FusedGemm":
        given = [attrs.get(k, defaults.get(k)) for k in FUSED_GEMM_PARAMS]
    else:
        given = list(attrs.get("activation_params", defaults.get("activation_params")) or [])
    p = [float(given[i]) if i < len(given) and given[i] is not None else float(d)
         for i, (_, d) in enumerate(act.params)] + [0.0, 0.0]
    return act.name, p[0], p[1]


def contrib_activation(op_type, opdef, attrs, supported):
    """(activation name, a, b) for a com.microsoft activation node (Gelu, FastGelu, BiasGelu, QuickGelu) with `attrs`
    under `opdef` (its registered kernel's defaults win over the table's: QuickGelu's alpha is 1.702, Swish's 1), or
    None when an attribute is not one of the activation's parameters or the activation is not in `supported`."""
    act = CONTRIB.get(op_type)
    if act is None or act.name not in supported or set(attrs) - {k for k, _ in act.params}:
        return None
    p = [float(attrs.get(k, opdef.attrs.get(k, d))) for k, d in act.params] + [0.0, 0.0]
    return act.name, p[0], p[1]


def c_enum(prefix):
    """The table as a C header, `enum { <PREFIX>_ACT_<NAME> = <code>, ... }` (written at build time, not committed)."""
    guard = f"{prefix}_ACT_CODES_H"
    lines = [f"/* Generated from py_engine/onnxide/ops/activations.py (--c-enum {prefix}) at build time */",
             f"#ifndef {guard}", f"#define {guard}", "", "enum {"]
    lines += [f"    {prefix}_ACT_{a.name.upper()} = {a.code}," for a in ACTIVATIONS]
    lines += ["};", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def _check_codes():
    seen = [a.code for a in ACTIVATIONS]
    if seen != list(range(len(seen))):
        raise AssertionError(f"activation codes must be 0..{len(seen) - 1} in table order, got {seen}")


_check_codes()

if __name__ == "__main__":
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--c-enum", metavar="PREFIX", required=True, help="print the C enum header (NX, OX)")
    sys.stdout.write(c_enum(parser.parse_args().c_enum))
