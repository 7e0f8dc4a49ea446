"""onnxruntime's InferenceSession behaviour around the engine: providers, load-time options, events, views."""
import contextlib
import os
import warnings

import numpy as np

from ..errors import Fail, InvalidArgument, ModelLoadCanceled
from . import env
from . import model_io
from . import providers as eps
from .profiling import Profiler
from .sparse import SparseTensor

ASSIGNMENT_KEY = "session.record_ep_graph_assignment_info"
_NO_EVENT = contextlib.nullcontext()


def provider_list(providers, provider_options):
    """(names, options) from onnxruntime's forms: names, (name, options) pairs, a separate options list."""
    from ..capi.onnxruntime_inference_collection import check_and_normalize_provider_args
    return check_and_normalize_provider_args(providers, provider_options, eps.available_providers())


def create_providers(names, options):
    """EP instances for `names` (CPU appended when absent): a name onnxruntime knows but onnxide does not have
    here is skipped (onnxruntime warns about it when the names are normalized), an unknown one raises."""
    if not names:
        names = eps.default_providers()
        options = [{} for _ in names]
    made = []
    for name, opts in zip(names, options):
        if name in eps.available_providers():
            made.append((name, opts))
        elif not env.is_known_provider(name):
            raise RuntimeError(f"Unknown Provider Type: {name}")
    if "CPUExecutionProvider" not in [n for n, _ in made]:
        made.append(("CPUExecutionProvider", {}))
    return [eps.create(n, o) for n, o in made]


def string_feed(value):
    """A string tensor feed as an object array of str: numpy str arrays, bytes and void arrays (raw bytes,
    decoded as UTF-8) and object arrays of either."""
    if value.dtype == object and all(isinstance(v, str) for v in value.flat):
        return value
    if value.dtype.kind == "U":
        return value.astype(object)
    if value.dtype.kind in "SVO":
        out = np.empty(value.shape, dtype=object)
        for i, v in enumerate(value.flat):
            raw = v.tobytes() if isinstance(v, np.void) else v
            out.flat[i] = raw.decode("utf-8", errors="surrogateescape") if isinstance(raw, bytes) else str(raw)
        return out
    from .. import dtypes as dt
    try:
        got = dt.type_string(dt.code_of(value.dtype))
    except KeyError:
        got = str(value.dtype)
    raise InvalidArgument(f"Unexpected input data type. Actual: ({got}) , expected: (tensor(string))")


def map_feed(map_type, value):
    """A map feed checked as onnxruntime checks it: a dict whose keys fit the key type (int64 or string)."""
    from .. import dtypes as dt
    if not isinstance(value, dict):
        raise RuntimeError(f"A map input must be given as a dict, not {type(value).__name__}")
    want, c_type = (str, "std::string") if map_type.key_type == dt.STRING else ((int, np.integer), "int64_t")
    for key in value:
        if not isinstance(key, want) or isinstance(key, bool):
            raise RuntimeError(f"Unexpected key type  {type(key)}, it cannot be linked to C type {c_type}")
    return value


class SessionAPI:
    """Mixed into runtime.session.InferenceSession: provider selection with onnxruntime's unknown-name and fallback
    rules, load-time options (config from the model, user initializers, cancellation, thread pools), profiling's
    session events, sparse outputs, memory infos, EP assignment and the C-level view (`_sess`)."""

    # --- creation ----------------------------------------------------------------------------------------------
    def _prepare_load(self, mp, kwargs):
        """Before the model is built: options from the model, user initializers, checks; returns the profiler."""
        so = self._sess_options
        self._enable_fallback = kwargs.get("enable_fallback", True)
        from_model = kwargs.get("read_config_from_model", os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1")
        if from_model:
            model_io.config_from_model(mp, so)
        if so._cancel:
            raise ModelLoadCanceled("Model loading was canceled (SessionOptions.set_load_cancellation_flag)")
        self._intra_threads = env.session_threads(so)
        model_io.apply_user_initializers(mp, so)
        profiler = Profiler(so.profile_file_prefix) if so.enable_profiling else None
        self._load_started = profiler.now_us() if profiler is not None else 0.0
        return profiler

    def _loaded(self, source):
        """After the model is built and optimized: the session-level profiling events of loading."""
        prof = self._profiler
        if prof is not None:
            name = "model_loading_uri" if isinstance(source, (str, os.PathLike)) else "model_loading_array"
            prof.add(name, "Session", self._load_started, {})
            prof.add("session_initialization", "Session", self._load_started, {})

    def _create_providers(self, providers, provider_options):
        """The session's EPs; on an error with fallback enabled, the CPU EP (onnxruntime's fallback, announced on
        stdout as there)."""
        so = self._sess_options
        if not providers and so._providers:
            providers = [(n, o) for n, o in so._providers]
        try:
            return create_providers(*provider_list(providers, provider_options))
        except (ValueError, RuntimeError) as e:
            if not getattr(self, "_enable_fallback", False):
                raise
            print("*************** EP Error ***************")
            print(f"EP Error {e} when using {providers}")
            print("Falling back to ['CPUExecutionProvider'] and retrying.")
            print("****************************************")
            self._enable_fallback = False
            return create_providers(["CPUExecutionProvider"], [{}])

    def _fall_back_after(self, error):
        """Called while a run's EPFail is handled: after enable_fallback(), the session moves to the CPU EP (once)
        and the caller retries; else the error is re-raised. (onnxruntime falls back at run time by default; onnxide
        does only when asked, so that a device EP's failures are never hidden from its own tests.)"""
        if not getattr(self, "_run_fallback", False):
            raise  # (the error being handled)
        print(f"EP Error: {error} using {self.get_providers()}")
        print("Falling back to ['CPUExecutionProvider'] and retrying.")
        self.set_providers(["CPUExecutionProvider"])
        self._enable_fallback = self._run_fallback = False

    def enable_fallback(self):
        """A run failing in an EP (EPFail) retries once on the CPU EP; session creation does so by default."""
        self._enable_fallback = self._run_fallback = True

    def disable_fallback(self):
        self._enable_fallback = self._run_fallback = False

    # --- running -----------------------------------------------------------------------------------------------
    def _profiled_run(self):
        """A context timing one run as a model_run session event (nothing to do without profiling)."""
        return _NO_EVENT if self._profiler is None else self._run_event()

    @contextlib.contextmanager
    def _run_event(self):
        start = self._profiler.now_us()
        yield
        self._profiler.add("model_run", "Session", start, {})

    def _output_values(self, names, values):
        """Outputs the model declares sparse, as SparseTensors (COO)."""
        sparse = self.__dict__.get("_sparse_names")
        if sparse is None:
            sparse = self._sparse_names = {v.name for v in self._model.graph.outputs
                                           if v.type is not None and v.type.sparse_tensor_type is not None}
        if not sparse:
            return values
        return [SparseTensor.from_dense(v) if n in sparse else v for n, v in zip(names, values)]

    # --- introspection -----------------------------------------------------------------------------------------
    @property
    def _sess(self):
        """onnxruntime's C-level session object for this session (capi's InferenceSession)."""
        from ..capi.session import CSession
        return CSession.of(self)

    def get_input_memory_infos(self):
        from .memory_info import CPU_MEMORY
        return [CPU_MEMORY for _ in self._inputs]

    def get_output_memory_infos(self):
        from .memory_info import CPU_MEMORY
        return [CPU_MEMORY for _ in self._model.graph.outputs]

    def get_input_epdevices(self):
        """The EP device each input is consumed on (None: not tied to one)."""
        return [None for _ in self._inputs]

    def get_provider_graph_assignment_info(self):
        """Which EP runs which nodes of the main graph (needs session.record_ep_graph_assignment_info = 1)."""
        if self._sess_options._config.get(ASSIGNMENT_KEY) != "1":
            raise Fail(f"Session configuration entry '{ASSIGNMENT_KEY}' must be set to \"1\" to retrieve EP graph "
                       f"assignment information.")
        from .ep_devices import graph_assignment
        return graph_assignment(self._executor.main_plan)

    def get_tuning_results(self):
        """onnxide's EPs have no tunable kernels: no results."""
        return []

    def set_tuning_results(self, tuning_results, error_on_invalid=False):
        names = self.get_providers()
        for result in tuning_results:
            if result.get("ep") not in names:
                if error_on_invalid:
                    raise RuntimeError(f"Cannot find execution provider {result.get('ep')}")
                warnings.warn(f"Tuning results for unknown execution provider {result.get('ep')} were ignored")
