"""The execution-provider interface: each EP claims the nodes it can run and owns where its tensors live.

The CPU EP (numpy kernels of the op registry) claims every node it has a kernel for and is always last in the
list. Device EPs (WASM, WebGPU, CUDA) override `claim` to return a faster kernel for the nodes they support and
`to_host` / `from_host` to move tensors across their border; kernels of an EP with `is_async` may return
awaitables (GPU readback in the page), which `Executor.run_async` awaits.
"""
from ..ops import registry


FALLBACK = object()  # an EP fast path's "not mine": the numpy kernel runs instead


def guarded(fast, fallback):
    """A kernel that runs `fast` and falls back to the numpy kernel `fallback` when `fast` returns FALLBACK (EPs
    check dtypes and shapes only at run time)."""

    def kernel(*args, **kwargs):
        res = fast(*args, **kwargs)
        if res is FALLBACK:
            return fallback(*args, **kwargs)
        return res

    kernel.ep_fast, kernel.ep_fallback = fast, fallback
    return kernel


class ExecutionProvider:
    name = "AbstractExecutionProvider"
    device = "CPU"
    is_async = False
    by_default = False  # used, ahead of the CPU EP, by sessions created without a providers list
    own_threads = False  # splits its kernels over intra_op_num_threads itself (BLAS then runs on one thread)

    def __init__(self, options=None):
        self.options = dict(options or {})

    def claim(self, node, opdef):
        """A kernel callable for `node` (same calling convention as `opdef.kernel`), or None to decline."""
        return None

    def too_small(self, node, shapes):
        """Whether to leave `node` to the next EP because its work, as far as the graph fixes its inputs' shapes
        (`shapes`: a tuple per input, or None where unknown), is too small for this EP to gain (asked before
        `claim`)."""
        return False

    def from_host(self, array):
        return array

    def to_host(self, value):
        return value


class CPUExecutionProvider(ExecutionProvider):
    name = "CPUExecutionProvider"

    def claim(self, node, opdef):
        return opdef.kernel


_PROVIDERS = {"CPUExecutionProvider": CPUExecutionProvider}


def register_provider(cls):
    """Make an EP class available by its name (EP modules call this when their runtime is present)."""
    _PROVIDERS[cls.name] = cls
    return cls


def available_providers():
    return list(_PROVIDERS)


def default_providers():
    """What a session without a providers list runs: the registered EPs marked by_default, then the CPU EP."""
    return [n for n, cls in _PROVIDERS.items() if cls.by_default] + ["CPUExecutionProvider"]


def create(name, options=None):
    return _PROVIDERS[name](options)


def resolve_opdef(node, opsets):
    """The OpDef for `node` under the model's opsets (a node may carry its own opset from a function body)."""
    domain = registry.normalize_domain(node.domain)
    version = node.opset if node.opset is not None else opsets.get(domain)
    if version is None:
        version = {"ai.onnx.ml": 5, "com.microsoft": 1, "ai.onnx.preview.training": 1,
                   "ai.onnx.preview": 1}.get(domain, 1)
    return registry.lookup(domain, node.op_type, version), version
