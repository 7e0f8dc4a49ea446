"""The 2,033 ONNX backend cases (onnx's node cases built in memory + its data folders), loaded via onnx (tests only)."""
import glob
import os
import warnings

import numpy as np


class Case:
    """One backend case: model bytes (or path), input/expected-output data sets, tolerances, ops used."""

    def __init__(self, name, source, model, data_sets, rtol=1e-3, atol=1e-7, model_path=None):
        self.name, self.source, self.model, self.data_sets = name, source, model, data_sets
        self.rtol, self.atol, self.model_path = rtol, atol, model_path
        self.ops = sorted({(n.domain or "ai.onnx", n.op_type) for n in model.graph.node})

    def model_bytes(self):
        return self.model.SerializeToString()

    @property
    def unseeded_draw(self):
        """True when an output is a random draw without a seed: its expected values are one draw, so a match is chance."""
        from onnxide.optimizer.eliminate import _NONDETERMINISTIC
        return any(n.op_type in _NONDETERMINISTIC and not any(a.name == "seed" for a in n.attribute)
                   for n in self.model.graph.node)

    def compare(self, expected, got):
        """Why `got` fails one data set's `expected` outputs ("" when it passes), at the case's tolerances; for an
        unseeded random draw always CHANCE (a match or mismatch with the one recorded draw proves nothing)."""
        return CHANCE if self.unseeded_draw else compare_outputs(expected, got, self.rtol, self.atol)


CHANCE = "ran; its output is an unseeded random draw, comparable with the expected draw only by chance"


def _onnx_dir():
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def _read_value(path, type_proto):
    import onnx
    from onnx import numpy_helper

    with open(path, "rb") as f:
        data = f.read()
    which = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if which == "sequence_type":
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if which == "optional_type":
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    if which == "map_type":
        p = onnx.MapProto()
        p.ParseFromString(data)
        return numpy_helper.to_dict(p)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def _folder_cases(kind):
    import onnx

    out = []
    for d in sorted(glob.glob(os.path.join(_onnx_dir(), kind, "*"))):
        path = os.path.join(d, "model.onnx")
        if not os.path.isfile(path):
            continue
        model = onnx.load(path)
        inits = {t.name for t in model.graph.initializer}
        ins = [i for i in model.graph.input if i.name not in inits]
        sets = []
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            n_in = len(glob.glob(os.path.join(ds, "input_*.pb")))
            n_out = len(glob.glob(os.path.join(ds, "output_*.pb")))
            inputs = [_read_value(os.path.join(ds, f"input_{i}.pb"), ins[i].type if i < len(ins) else None)
                      for i in range(n_in)]
            outputs = [_read_value(os.path.join(ds, f"output_{i}.pb"), model.graph.output[i].type)
                       for i in range(n_out)]
            sets.append((inputs, outputs))
        out.append(Case(os.path.basename(d), kind, model, sets, model_path=path))
    return out


def _light_cases():
    import onnx
    from onnx.backend.test.runner import Runner

    out = []
    for path in sorted(glob.glob(os.path.join(_onnx_dir(), "light", "*.onnx"))):
        model = onnx.load(path)
        prefix = os.path.splitext(path)[0]
        inits = {t.name for t in model.graph.initializer}
        name = os.path.basename(prefix)
        inputs = [Runner.generate_dummy_data(x, seed=0, name=name[len("light_"):], random=False)
                  for x in model.graph.input if x.name not in inits]
        outputs = [_read_value(f"{prefix}_output_{i}.pb", o.type) for i, o in enumerate(model.graph.output)]
        out.append(Case(name, "light", model, [(inputs, outputs)], model_path=path))
    return out


def _normalize(value):
    """onnx's node cases hold some values as TensorProto (exotic dtypes): make them numpy like onnx's runner."""
    import onnx
    from onnx import numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def load_cases():
    """Every case, node cases first; names are unique."""
    from onnx.backend.test.loader import load_node_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            node = [Case(c.name, "node", c.model, [([_normalize(v) for v in ins], [_normalize(v) for v in outs])
                                                   for ins, outs in c.data_sets], c.rtol, c.atol)
                    for c in load_node_model_tests()]
    cases = node
    for kind in ("simple", "pytorch-converted", "pytorch-operator"):
        cases += _folder_cases(kind)
    cases += _light_cases()
    _feeds_in_engine_representation(cases)
    return cases


def _feeds_in_engine_representation(cases):
    """onnx's data holds exotic tensors as ml_dtypes arrays; a no-ml_dtypes run (ONNXIDE_NO_ML_DTYPES=1) feeds them
    in onnxide's structured representation instead (dtypes.from_user; a no-op when ml_dtypes is in use)."""
    from onnxide import dtypes

    if dtypes.HAVE_ML_DTYPES:
        return
    for c in cases:
        c.data_sets = [([dtypes.from_user(v) for v in ins], outs) for ins, outs in c.data_sets]


def _exotic_pair(expected, got):
    """(expected, got) as (ONNX code, plain storage, plain storage) when either is an exotic array (ml_dtypes or
    onnxide's structured form), else None: bit patterns for the float kinds, values for int4/int2."""
    from onnxide import dtypes

    ce, cg = dtypes.exotic_code(expected.dtype), dtypes.exotic_code(got.dtype)
    if not (ce or cg):
        return None
    return ce, cg, (dtypes.raw(expected) if ce else None), (dtypes.raw(got) if cg else None)


def compare_outputs(expected, got, rtol, atol):
    """None when every output of one data set matches; else '<which output>: <reason>'."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got)):
        why = compare(e, g, rtol, atol)
        if why:
            return f"output {i}: {why}"
    return None


def compare(expected, got, rtol, atol):
    """None when `got` matches `expected` like onnx's backend runner would accept; else a one-line reason."""
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"expected a sequence, got {type(got).__name__}"
        if len(got) != len(expected):
            return f"sequence length {len(got)} != {len(expected)}"
        for e, g in zip(expected, got):
            r = compare(e, g, rtol, atol)
            if r:
                return r
        return None
    if expected is None:
        return None if got is None else f"expected None, got {type(got).__name__}"
    if not isinstance(got, np.ndarray):
        if isinstance(got, np.generic):
            got = np.asarray(got)
        else:
            return f"expected an array, got {type(got).__name__}"
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        return f"shape {got.shape} != expected {expected.shape}"
    if expected.dtype == object:
        return None if np.array_equal(got.astype(object), expected) else "string values differ"
    ex = _exotic_pair(expected, got)
    if ex is not None:  # exotic dtypes: either representation; equal bit patterns, else compare the values
        from onnxide import dtypes

        ce, cg, eraw, graw = ex
        if ce != cg or (dtypes.HAVE_ML_DTYPES and got.dtype != expected.dtype):  # structured only without ml_dtypes
            return f"dtype {got.dtype} != expected {expected.dtype}"
        if np.array_equal(eraw, graw):
            return None
        expected, got = dtypes.to_float32(expected), dtypes.to_float32(got)
    elif got.dtype != expected.dtype:
        return f"dtype {got.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biu" or expected.dtype == np.bool_:
        return None if np.array_equal(got, expected) else f"values differ at {int(np.sum(got != expected))} places"
    e = expected.astype(np.float64) if expected.dtype.kind != "c" else expected
    g = got.astype(np.float64) if got.dtype.kind != "c" else got
    with np.errstate(all="ignore"):
        ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    diff = np.nanmax(np.abs(g - e)[~ok]) if (~ok).any() else 0
    return f"values differ at {int((~ok).sum())}/{ok.size} places (max abs diff {diff:.3g})"
