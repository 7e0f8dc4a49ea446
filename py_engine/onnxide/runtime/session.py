"""InferenceSession and its companions (NodeArg, ModelMetadata), mirroring onnxruntime's Python API."""
import os

import numpy as np

from .. import dtypes as dt
from .. import proto as P
from ..errors import (EPFail, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, NoSuchFile, OnnxideError)
from ..errors import ValueError as MissingInputs  # (onnxruntime's class name, and an onnxide error)
from ..ir import load_model
from ..ir.model import ValueInfo
from ..ir.infer import infer_bodies, infer_shapes
from ..ops.inference import tensor_type, type_string
from ..optimizer import optimize
from ..ops.custom import session_table
from ..ops.registry import session_ops
from ..ops.validate import check_input_types
from . import specialize
from ..execute import Executor, RunControl
from . import devices
from .iobinding import IOBinding
from .ortvalue import OrtValue, from_external, now
from .memory import keep_freed_memory
from .threads import blas_threads, blas_untouched
from . import limits
from .options import SessionOptions
from . import model_io
from .lora import with_adapters
from .session_api import SessionAPI, create_providers, map_feed, provider_list, string_feed
from .sparse import as_feed as sparse_feed


class NodeArg:
    """A graph input or output as ORT describes it: name, type string, shape with symbolic names kept."""

    def __init__(self, name, type_str, shape):
        self.name, self.type, self.shape = name, type_str, shape

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"

    @classmethod
    def from_value_info(cls, vi, inferred=None):
        """`inferred`: the dims inference found for it, merged into the declared shape as onnxruntime merges them."""
        tensor = vi.type is None or vi.type.tensor_type is not None or vi.type.sparse_tensor_type is not None
        shape = _merge_shape(vi.shape, inferred) if tensor else []
        return cls(vi.name, type_string(vi.type), shape or [])  # unknown rank too: []


def _merge_shape(declared, inferred):
    """ONNX's shape merge: a declared unknown rank takes the inferred shape; per dim an inferred value wins, else the
    declared dim, else the inferred name (a graph output declared without a shape reads as inference found it)."""
    if inferred is None or (declared is not None and len(declared) != len(inferred)):
        return declared
    if declared is None:
        return list(inferred)
    return [i if isinstance(i, int) else d if d is not None else i for d, i in zip(declared, inferred)]


class ModelMetadata:
    def __init__(self, model):
        self.producer_name = model.producer_name
        self.graph_name = model.graph.name
        self.domain = model.domain
        self.description = model.doc
        self.graph_description = model.graph.doc
        self.version = model.model_version
        self.custom_metadata_map = dict(model.metadata)


def _read_model_bytes(path_or_bytes):
    """(bytes, folder for external data) from a path, bytes-like or file object."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), None
    if hasattr(path_or_bytes, "read"):
        name = getattr(path_or_bytes, "name", None)
        base = os.path.dirname(os.path.abspath(name)) if isinstance(name, str) else None
        return path_or_bytes.read(), base
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = os.fspath(path_or_bytes)
        if not os.path.isfile(path):
            raise NoSuchFile(f"Load model from {path} failed: File doesn't exist")
        with open(path, "rb") as f:
            return f.read(), os.path.dirname(os.path.abspath(path))
    raise InvalidArgument(f"InferenceSession needs a path, bytes or a file object, not {type(path_or_bytes).__name__}")


class InferenceSession(SessionAPI):
    """Load a model and run it: `InferenceSession(path_or_bytes, sess_options=None, providers=None)` (the session
    keeps a copy of the options)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._sess_options = (sess_options if sess_options is not None else SessionOptions()).copy()
        data, base_dir = _read_model_bytes(path_or_bytes)
        self._model_path = path_or_bytes if isinstance(path_or_bytes, (str, os.PathLike)) else None
        if not data:
            raise InvalidProtobuf("Failed to load model: the model is empty (0 bytes)")
        mp = P.parse(P.ModelProto, data)
        if mp.graph is None:
            raise InvalidProtobuf("Failed to load model: no graph found (not an ONNX model, or truncated)")
        if not mp.ir_version and not P.has_field(data, 1):
            raise Fail("Missing model IR version.")
        self._profiler = self._prepare_load(mp, kwargs)
        self._memory_limit = limits.session_limit(self._sess_options)
        self._custom_ops = session_table(self._sess_options._custom_ops, self._sess_options._custom_library)
        with session_ops(self._custom_ops):
            self._build(mp, base_dir, providers, provider_options)
        self._loaded(path_or_bytes)

    def _build(self, mp, base_dir, providers, provider_options):
        """Load, infer, optimize and plan the model (the session's custom ops in scope)."""
        try:
            self._model = load_model(mp, base_dir)
            _override_free_dims(self._model.graph, self._sess_options._free_dims)
            inferred, _ = infer_shapes(self._model, check=True)
            self._inferred_outputs = {o.name: inferred[o.name][1] for o in self._model.graph.outputs
                                      if o.name in inferred}
            # input types checked on the model's own nodes (folding drops an If of a constant cond of any type), and
            # again once the bodies' types are inferred
            check_input_types(self._model.graph, self._model.opsets)
            with limits.use(self._memory_limit):  # (constant folding runs kernels)
                optimize(self._model, self._sess_options.graph_optimization_level, inferred=True)
            infer_bodies(self._model)
            check_input_types(self._model.graph, self._model.opsets)
        except OnnxideError:
            raise
        except (RecursionError, MemoryError) as e:
            raise InvalidGraph(f"Failed to load model: {type(e).__name__} (the model nests or allocates too much)") \
                from None
        except Exception as e:  # a malformed model that slipped past the checks: still one line, never a crash
            raise InvalidGraph(f"Failed to load model: {type(e).__name__}: {e}") from e
        self._providers = self._create_providers(providers, provider_options)
        so = self._sess_options
        if so.enable_cpu_mem_arena:
            keep_freed_memory()
        self._executor = Executor(self._model, self._providers, self._profiler)
        self._proto, self._base_dir = mp, base_dir
        self._specialized = self._specializations()
        self._set_thread_limits()
        g = self._model.graph
        self._inputs = [v for v in g.inputs if v.name not in g.initializers]
        self._overridable = [v for v in g.inputs if v.name in g.initializers]
        self._input_by_name = {v.name: v for v in g.inputs}
        self._fast_feeds = _fast_feeds(self._inputs)
        self._output_names = [v.name for v in g.outputs]
        if so.optimized_model_filepath:
            model_io.save_optimized(self._model, so.optimized_model_filepath, so)

    # --- introspection -------------------------------------------------------------------------
    def get_inputs(self):
        return [NodeArg.from_value_info(v) for v in self._inputs]

    def get_outputs(self):
        return [NodeArg.from_value_info(v, self._inferred_outputs.get(v.name)) for v in self._model.graph.outputs]

    def get_overridable_initializers(self):
        return [NodeArg.from_value_info(v) for v in self._overridable]

    def get_modelmeta(self):
        return ModelMetadata(self._model)

    def get_providers(self):
        return [p.name for p in self._providers]

    def get_provider_options(self):
        return {p.name: dict(p.options) for p in self._providers}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        self._providers = create_providers(*provider_list(providers, provider_options))
        self._set_thread_limits()
        with session_ops(self._custom_ops):
            self._executor = Executor(self._model, self._providers, self._profiler)
        self._specialized = self._specializations()

    def _specializations(self):
        """Executors for recurring input shapes (runtime/specialize.py), where the model may gain from them (not
        with a device EP: a second executor would place the weights on the device again)."""
        helps = any(p.gains_from_fixed_shapes for p in self._providers)
        if self._sess_options.graph_optimization_level <= 0 or not specialize.worthwhile(self._model, helps) or \
                self._executor.devices:
            return None
        return specialize.Specializations(self._specialized_executor, self._executor,
                                          specialize.value_inputs(self._model))

    def _specialized_executor(self, shapes, values):
        # (as the session's creation: folding may call BLAS and allocate)
        with session_ops(self._custom_ops), self._threads, limits.use(self._memory_limit):
            return self._specialized_build(shapes, values)

    def _specialized_build(self, shapes, values):
        model = load_model(self._proto, self._base_dir, checked=True)
        g = model.graph
        _override_free_dims(g, self._sess_options._free_dims)
        for vi in g.inputs:  # fresh types: the loaded model shares the proto's with the general one
            if vi.name in shapes and vi.shape is not None and len(vi.shape) == len(shapes[vi.name]):
                vi.type = tensor_type(vi.elem_type, list(shapes[vi.name]))
        for vi in [vi for vi in g.inputs if vi.name in values]:  # (the executor reads no feed for these)
            g.initializers[vi.name] = np.array(values[vi.name], dt.np_dtype(vi.elem_type))
            g.inputs.remove(vi)
        infer_shapes(model)
        optimize(model, self._sess_options.graph_optimization_level, inferred=True)
        infer_bodies(model)
        return Executor(model, self._providers, self._profiler)

    def _set_thread_limits(self):
        """The limits a run enters (_threads_for), for the session's providers."""
        self._threads = blas_threads(self._intra_threads, any(p.own_threads for p in self._providers))
        self._chain_threads = blas_untouched(self._threads)

    def _threads_for(self, ex):
        """The thread limit a run of `ex` enters: BLAS's pools are left alone for a plan that is one chain."""
        return self._chain_threads if ex.one_chain else self._threads

    def _executor_for(self, feeds):
        ex = self._specialized.executor_for(feeds) if self._specialized is not None else None
        return ex if ex is not None else self._executor

    def _after_failure(self, ex, feeds, control=None):
        """Called while `ex`'s error is being handled: the general executor's errors are the model's or the input's
        (re-raised), as is a stopped run; a specialized executor hands these shapes back to the general one for
        good, returned to rerun."""
        if ex is self._executor or (control is not None and control.fired):
            raise  # (the error being handled)
        self._specialized.give_up(feeds)
        return self._executor

    def end_profiling(self):
        """Write the chrome-trace JSON of the runs so far; returns its path ('' when profiling is off)."""
        return self._profiler.end() if self._profiler is not None else ""

    def get_profiling_start_time_ns(self):
        return self._profiler.wall_start_ns if self._profiler is not None else 0

    # --- running -------------------------------------------------------------------------------
    def run(self, output_names, input_feed, run_options=None):
        """Outputs (numpy arrays; lists for sequences) for `output_names` (None: all) given `input_feed`.
        `run_options.terminate` (set from another thread) or its "onnxide.run_timeout_seconds" config entry stops
        the run between nodes with Fail. After enable_fallback(), an EPFail reruns it once on the CPU EP."""
        try:
            return self._run(output_names, input_feed, None, run_options)
        except EPFail as e:
            self._fall_back_after(e)
            return self._run(output_names, input_feed, None, run_options)

    def _run(self, output_names, input_feed, fetch_devices, run_options):
        """run, and IO binding's run: outputs made or read back on `fetch_devices[name]` (the host when absent)."""
        names, feeds = self._prepare(output_names, with_adapters(input_feed, run_options))
        control = RunControl.of(run_options)
        try:
            ex = self._executor_for(feeds)
            with self._threads_for(ex), self._profiled_run(), limits.use(self._memory_limit):
                try:
                    outs = ex.run(feeds, names, fetch_devices, control)
                except OnnxideError:
                    general = self._after_failure(ex, feeds, control)
                    with self._threads_for(general):
                        outs = general.run(feeds, names, fetch_devices, control)
                return self._output_values(names, [_owned(v) for v in outs])
        except RecursionError:
            raise Fail("Model execution exceeded the maximum nesting depth") from None

    def _prepare(self, output_names, input_feed):
        """(output names, checked feeds) for a run; bad names or feeds raise InvalidArgument."""
        names = list(output_names) if output_names else self._output_names
        if not names:  # (a model without graph outputs: onnxruntime's core refuses the run)
            raise InvalidArgument("At least one output should be requested.")
        for name in names if output_names else ():
            if name not in self._output_names:
                raise InvalidArgument(f"Invalid output name: {name}")
        if not isinstance(input_feed, dict):
            raise InvalidArgument(f"input_feed must be a dict of input name to value, not "
                                  f"{type(input_feed).__name__}")
        return names, self._check_feeds(input_feed)

    def run_async(self, output_names, input_feed, callback=None, user_data=None, run_options=None):
        """onnxruntime's form: with `callback`, run and call `callback(results, user_data, error_message)`.
        onnxide's addition: without one, return an awaitable of the results — how runs whose EPs await GPU work
        or readback (WebGPU in the page) are driven."""
        if callback is None:
            return self._run_awaitable(output_names, input_feed, None, run_options)
        try:
            results, err = self.run(output_names, input_feed, run_options), ""
        except OnnxideError as e:
            results, err = None, str(e)
        callback(results, user_data, err)
        return None

    async def _run_awaitable(self, output_names, input_feed, fetch_devices=None, run_options=None):
        """run_async's awaitable; `fetch_devices` {output name: Device} keeps those outputs on a device (the JS
        API's preferredOutputLocation)."""
        names, feeds = self._prepare(output_names, with_adapters(input_feed, run_options))
        control = RunControl.of(run_options)
        ex = self._executor_for(feeds)
        with self._threads_for(ex), self._profiled_run(), limits.use(self._memory_limit):  # as `run`
            try:
                outs = await ex.run_async(feeds, names, fetch_devices, control)
            except OnnxideError:
                general = self._after_failure(ex, feeds, control)
                with self._threads_for(general):
                    outs = await general.run_async(feeds, names, fetch_devices, control)
            return self._output_values(names, [_owned(v) for v in outs])

    def _check_feeds(self, input_feed):
        fast = self._fast_feeds
        # every input a numpy array of its declared type and dims: taken as given
        if fast is not None and len(input_feed) == len(fast):
            for name, value in input_feed.items():
                want = fast.get(name)
                if want is None or type(value) is not np.ndarray or value.dtype != want[0] or (
                        want[1] is not None and value.shape != want[1] and not _fits(value.shape, want[1])):
                    break
            else:
                return dict(input_feed)
        missing = [v.name for v in self._inputs
                   if v.name not in input_feed and (v.type is None or v.type.optional_type is None)]
        if missing:  # (a ValueError, as onnxruntime's)
            raise MissingInputs(f"Required inputs ({missing}) are missing from input feed ({list(input_feed)}).")
        feeds = {}
        for name, value in input_feed.items():
            vi = self._input_by_name.get(name)
            if vi is None:
                raise InvalidArgument(f"Invalid input name: {name}")
            feeds[name] = _check_feed(vi, value, self._executor.devices)
        return feeds

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """Like run, with OrtValue feeds (used where they live) and OrtValue results on the host."""
        return [OrtValue(v) for v in self.run(output_names, input_dict_ort_values, run_options)]

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, binding, run_options=None):
        binding._run(run_options)



def _override_free_dims(graph, overrides):
    """SessionOptions.add_free_dimension_override_by_name / _by_denotation: the matching symbolic dims of the graph
    inputs become static, and a dim named so anywhere in the declared types (the symbol is one value graph-wide)."""
    if not overrides:
        return
    declared = list(graph.inputs) + list(graph.outputs) + list(graph.value_info.values())
    for vi in declared:
        shape = vi.type.tensor_type.shape if vi.type is not None and vi.type.tensor_type is not None else None
        for d in (shape.dim if shape is not None else []):
            value = overrides.get(("name", d.dim_param)) if d.dim_param else None
            if value is None and d.denotation and vi in graph.inputs:
                value = overrides.get(("denotation", d.denotation))
            if value is not None:
                d.dim_value, d.dim_param = value, None


def _owned(value):
    """Outputs never alias feeds or initializers (like onnxruntime's, they are the caller's to modify); exotic
    dtypes are handed out as ml_dtypes arrays where ml_dtypes is installed."""
    if isinstance(value, np.ndarray):
        if value.base is not None or not value.flags.writeable:
            value = np.array(value)
        return dt.to_user(value) if value.dtype.names is not None else value
    if isinstance(value, list):
        return [_owned(v) for v in value]
    return value


def _host_feed(vi, value, code):
    """A host feed as a numpy array of the model's representation (from lists, OrtValue-likes, exotic arrays)."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()  # OrtValue-like objects (a torch tensor)
    if not isinstance(value, np.ndarray):
        try:
            value = dt.asarray(value, code) if code else np.asarray(value)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(f"Input '{vi.name}' cannot be converted to {dt.type_string(code)}: {e}") from None
    return dt.from_user(value)  # an exotic array in the other representation (ml_dtypes vs structured)


def _device_feed(value, session_devices, name):
    """A feed as the executor takes it: a device value of one of the session's devices stays as it is, one of
    another device is read back, a foreign tensor (DLPack, CUDA array interface) is imported; else as given."""
    if isinstance(value, OrtValue):
        device = value.device
        return value._value if device.is_host or device in session_devices else value.numpy()
    if isinstance(value, np.ndarray):
        return value
    owner = devices.owner_of(value)
    if owner is not None:
        return value if owner in session_devices else now(owner.download(value), f"Input '{name}'")
    external = from_external(value, session_devices, name)
    return value if external is None else external


def _fast_feeds(inputs):
    """{input name: (numpy dtype, declared dims: an int or None each; None for any shape)} when every input is a plain
    tensor (not a string, exotic or optional type); None otherwise. A numpy array of that dtype whose shape fits the
    dims passes _check_feed unchanged, so it needs no checking."""
    fast = {}
    for vi in inputs:
        tp = vi.type
        tensor = tp.tensor_type if tp is not None and tp.optional_type is None else None
        code = tensor.elem_type if tensor is not None else 0
        if not code or code == dt.STRING or dt.is_exotic(code):
            return None
        shape = vi.shape
        fast[vi.name] = (np.dtype(dt.np_dtype(code)),
                         tuple(d if type(d) is int else None for d in shape) if shape else None)
    return fast


def _fits(shape, dims):
    return len(shape) == len(dims) and all(d is None or d == n for n, d in zip(shape, dims))


def _check_feed(vi, value, session_devices=()):
    value = _device_feed(value, session_devices, vi.name)
    tp = vi.type
    if tp is not None and tp.sparse_tensor_type is not None:
        return sparse_feed(value)
    if tp is not None and tp.map_type is not None:
        return map_feed(tp.map_type, value)
    if tp is not None and tp.optional_type is not None and value is not None:
        elem = tp.optional_type.elem_type
        if elem is not None and elem.tensor_type is not None:  # (a present optional tensor: checked as a tensor)
            return _check_feed(ValueInfo(vi.name, elem), value, session_devices)
    if tp is None or tp.tensor_type is None:
        return value  # sequences, maps, optional sequences, absent optionals: passed as given
    code = tp.tensor_type.elem_type
    on_device = not isinstance(value, np.ndarray) and devices.owner_of(value) is not None
    if not on_device:
        value = _host_feed(vi, value, code)
        if code == dt.STRING:
            value = string_feed(value)
    if code:
        try:
            got = dt.code_of(value.dtype)
        except KeyError:
            raise InvalidArgument(f"Unexpected input data type. Actual: ({value.dtype}) , "
                                  f"expected: ({dt.type_string(code)})") from None
        if got != code:  # onnxruntime's text, word for word (it names no input here; code matches on it)
            raise InvalidArgument(f"Unexpected input data type. Actual: ({dt.type_string(got)}) , "
                                  f"expected: ({dt.type_string(code)})")
        if code == dt.STRING and value.dtype != object:
            value = value.astype(object)
    shape = vi.shape
    if shape:  # as onnxruntime: a rank-0 (or unknown-rank) declared input takes any shape, e.g. a scalar as [1]
        if len(shape) != len(value.shape):
            raise InvalidArgument(f"Invalid rank for input: {vi.name} Got: {len(value.shape)} Expected: {len(shape)} "
                                  f"Please fix either the inputs/outputs or the model.")
        bad = [(i, got, want) for i, (got, want) in enumerate(zip(value.shape, shape))
               if isinstance(want, int) and want != got]
        if bad:
            detail = ", ".join(f"index: {i} Got: {g} Expected: {w}" for i, g, w in bad)
            raise InvalidArgument(f"Got invalid dimensions for input: {vi.name} for the following indices: {detail}."
                                  f" Please fix either the inputs/outputs or the model.")
    return value


__all__ = ["InferenceSession", "NodeArg", "ModelMetadata", "InvalidGraph"]
