"""SessionOptions, RunOptions and onnxruntime's enums, with ORT's attribute names."""
import enum


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class SessionOptions:
    """Settings for an InferenceSession; unknown config entries are kept and readable like ORT's."""

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.optimized_model_filepath = ""
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.use_deterministic_compute = False
        self._config = {}
        self._free_dims = {}

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            from ..errors import InvalidArgument
            raise InvalidArgument(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    def add_free_dimension_override_by_name(self, name, value):
        """Graph inputs' symbolic dim `name` is `value` (fed shapes are checked; the optimizer sees it static)."""
        self._free_dims[("name", name)] = int(value)

    def add_free_dimension_override_by_denotation(self, name, value):
        """Graph inputs' dims with denotation `name` (e.g. DATA_BATCH) are `value`."""
        self._free_dims[("denotation", name)] = int(value)

    def register_custom_ops_library(self, path):
        from ..errors import NotImplemented as OrtNotImplemented
        raise OrtNotImplemented(f"Custom op libraries are not supported by onnxide: {path}")


class RunOptions:
    """Per-run settings (tag, log level, terminate flag, config entries)."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return self._config[key]
