"""SessionOptions and RunOptions with onnxruntime's attributes (an unknown one raises AttributeError, as there)."""
from .enums import ExecutionMode, ExecutionOrder, GraphOptimizationLevel, OrtExecutionProviderDevicePolicy

__all__ = ["ExecutionMode", "ExecutionOrder", "GraphOptimizationLevel", "RunOptions", "SessionOptions"]


def _config_entry(config, key, owner):
    if key not in config:
        raise RuntimeError(f"{owner} does not have configuration with key: {key}")
    return config[key]


class SessionOptions:
    """Settings for an InferenceSession. Sessions copy them when created (later changes do not reach a session)."""

    __slots__ = ("graph_optimization_level", "execution_mode", "execution_order", "intra_op_num_threads",
                 "inter_op_num_threads", "optimized_model_filepath", "log_severity_level", "log_verbosity_level",
                 "logid", "enable_profiling", "profile_file_prefix", "enable_mem_pattern", "enable_mem_reuse",
                 "enable_cpu_mem_arena", "use_deterministic_compute", "use_per_session_threads", "_config",
                 "_free_dims", "_initializers", "_external_files", "_providers", "_policy", "_cancel",
                 "_ep_context_read", "_custom_ops", "_custom_library")

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.optimized_model_filepath = ""
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config = {}
        self._free_dims = {}
        self._initializers = {}    # name -> OrtValue replacing (or supplying) an initializer
        self._external_files = {}  # external data file name -> bytes, read instead of the file
        self._providers = []       # (name, options) from add_provider / add_provider_for_devices
        self._policy = None        # an OrtExecutionProviderDevicePolicy or a delegate callable
        self._cancel = False
        self._ep_context_read = None
        self._custom_ops = []          # CustomOps registered for sessions with these options (ops/custom.py)
        self._custom_library = False   # register_custom_ops_library(onnxide.extensions.get_library_path())

    def copy(self):
        """An independent copy (what a session keeps)."""
        new = SessionOptions.__new__(SessionOptions)
        for name in SessionOptions.__slots__:
            value = getattr(self, name)
            setattr(new, name, type(value)(value) if isinstance(value, (dict, list)) else value)
        return new

    # --- config entries ----------------------------------------------------------------------------------------
    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        return _config_entry(self._config, key, "SessionOptions")

    # --- the model's values ------------------------------------------------------------------------------------
    def add_free_dimension_override_by_name(self, name, value):
        """Graph inputs' symbolic dim `name` is `value` (fed shapes are checked; the optimizer sees it static)."""
        self._free_dims[("name", name)] = int(value)

    def add_free_dimension_override_by_denotation(self, name, value):
        """Graph inputs' dims with denotation `name` (e.g. DATA_BATCH) are `value`."""
        self._free_dims[("denotation", name)] = int(value)

    def add_initializer(self, name, ortvalue):
        """Initializer `name` of the model takes this (host) OrtValue's data instead of its own."""
        self._initializers[str(name)] = _host_value(ortvalue, name)

    def add_external_initializers(self, names, ortvalues):
        """Initializers whose data the model keeps in external files, given instead as OrtValues."""
        if len(names) != len(ortvalues):
            raise RuntimeError("add_external_initializers: names and values differ in length")
        for name, value in zip(names, ortvalues):
            self.add_initializer(name, value)

    def add_external_initializers_from_files_in_memory(self, names, buffers, lengths):
        """The contents of external data files the model names, given in memory (read instead of the files)."""
        if not len(names) == len(buffers) == len(lengths):
            raise RuntimeError("add_external_initializers_from_files_in_memory: arguments differ in length")
        for name, buf, length in zip(names, buffers, lengths):
            self._external_files[str(name)] = bytes(memoryview(buf).cast("B")[:int(length)])

    # --- execution providers -----------------------------------------------------------------------------------
    def add_provider(self, provider_name, provider_options):
        """An execution provider for sessions created without a providers list."""
        self._providers.append((str(provider_name), {str(k): str(v) for k, v in dict(provider_options).items()}))

    def add_provider_for_devices(self, ep_devices, provider_options):
        names = {d.ep_name for d in ep_devices}
        if len(names) != 1:
            raise RuntimeError("add_provider_for_devices: the devices must all belong to one execution provider")
        self.add_provider(names.pop(), provider_options)

    def has_providers(self):
        return bool(self._providers) or self._policy is not None

    def set_provider_selection_policy(self, policy):
        self._policy = OrtExecutionProviderDevicePolicy(policy)

    def set_provider_selection_policy_delegate(self, delegate):
        self._policy = delegate

    def set_load_cancellation_flag(self, value):
        """True: sessions being created with these options stop with ModelLoadCanceled."""
        self._cancel = bool(value)

    def set_ep_context_data_read_func(self, func):
        self._ep_context_read = func

    def clear_ep_context_data_read_func(self):
        self._ep_context_read = None

    # --- custom ops (onnxide.extensions) ------------------------------------------------------------------------
    def register_custom_ops_library(self, path):
        """onnxruntime-extensions' flow: `path` = onnxide.extensions.get_library_path() enables every op declared
        with @onnx_op (those declared when a session is created) in sessions with these options. A compiled
        library cannot be loaded: NotImplemented."""
        from ..extensions import is_library_path
        if not is_library_path(path):
            from ..errors import NotImplemented as OrtNotImplemented
            raise OrtNotImplemented(f"Custom op libraries are compiled onnxruntime code, which onnxide cannot load: "
                                    f"{path} (Python custom ops: onnxide.extensions.get_library_path())")
        self._custom_library = True

    def register_custom_op(self, op, **declaration):
        """Enable one custom op in sessions with these options: a CustomOp (what @onnx_op returns), or a function
        with onnx_op's keywords (op_type, inputs, outputs, attrs, domain, shape_fn), declared for these options
        only. It comes before a declared op of the same domain and type."""
        from ..errors import InvalidArgument
        from ..ops.custom import CustomOp
        if not isinstance(op, CustomOp):
            from ..extensions import PyCustomOpDef
            declaration.setdefault("inputs", [PyCustomOpDef.dt_float])
            declaration.setdefault("outputs", [PyCustomOpDef.dt_float])
            declaration.setdefault("attrs", {})
            op_type = declaration.pop("op_type", None) or getattr(op, "__name__", None)
            op = CustomOp(op, op_type, **declaration)
        elif declaration:
            raise InvalidArgument(f"register_custom_op({op.name}): a CustomOp is declared already, no keywords "
                                  f"{sorted(declaration)}")
        if any(o is not op and (o.domain, o.op_type) == (op.domain, op.op_type) for o in self._custom_ops):
            raise InvalidArgument(f"SessionOptions has another custom op {op.name} registered already")
        if op not in self._custom_ops:
            self._custom_ops.append(op)
        return op


class RunOptions:
    """Per-run settings: log level and id, the terminate flag, config entries, active LoRA adapters."""

    __slots__ = ("log_severity_level", "log_verbosity_level", "logid", "terminate", "only_execute_path_to_fetches",
                 "_config", "_adapters")

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}
        self._adapters = []

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return _config_entry(self._config, key, "RunOptions")

    def add_active_adapter(self, adapter):
        """Runs with these options feed the adapter's parameters (they replace initializers of those names)."""
        from .lora import LoraAdapter
        if not isinstance(adapter, LoraAdapter):
            raise TypeError(f"add_active_adapter(): expected a LoraAdapter, not {type(adapter).__name__}")
        self._adapters.append(adapter)


def _host_value(ortvalue, name):
    from .ortvalue import OrtValue
    if not isinstance(ortvalue, OrtValue):
        raise TypeError(f"Initializer '{name}' must be given as an OrtValue, not {type(ortvalue).__name__}")
    if not ortvalue.device.is_host:
        raise RuntimeError(f"Initializer '{name}' must be an OrtValue in CPU memory, not on {ortvalue.device}")
    return ortvalue
