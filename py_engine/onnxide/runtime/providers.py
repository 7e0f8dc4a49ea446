"""The execution-provider contract: each EP claims the nodes it can run, at plan time, and says which memory its
kernels compute in (`device`: HOST for numpy-sharing EPs, a `runtime.devices.Device` for GPU EPs).

`claim(spec)` receives a `partition.NodeSpec` — the node, its OpDef and opset, its inputs' element types and
shapes as far as the graph fixes them — and returns a kernel with the numpy kernel's calling convention, or None.
A device EP decides everything there: its kernels get device values for data inputs, host values for the op's
`host_inputs`, values where they live for its `meta_inputs` (ops/registry.py), and return device values. EPs that
share host memory may still decline at run time by returning FALLBACK from a `guarded` fast path.
The CPU EP (numpy kernels of the op registry) claims every node it has a kernel for and is always last.
"""
from .devices import HOST

FALLBACK = object()  # a host EP fast path's "not mine": the numpy kernel runs instead


def guarded(fast, fallback):
    """A kernel that runs `fast` and falls back to the numpy kernel `fallback` when `fast` returns FALLBACK (host
    EPs whose fast paths check dtypes and shapes at run time; never for a device EP)."""

    def kernel(*args, **kwargs):
        res = fast(*args, **kwargs)
        if res is FALLBACK:
            return fallback(*args, **kwargs)
        return res

    kernel.ep_fast, kernel.ep_fallback = fast, fallback
    return kernel


class ExecutionProvider:
    name = "AbstractExecutionProvider"
    device = HOST        # where its kernels' tensors live
    by_default = False   # used, ahead of the CPU EP, by sessions created without a providers list
    own_threads = False  # splits its kernels over intra_op_num_threads itself (BLAS then runs on one thread)
    gains_from_fixed_shapes = False  # runs faster once every shape is known (sessions specialize to seen shapes)

    def __init__(self, options=None):
        self.options = dict(options or {})

    def claim(self, spec):
        """A kernel callable for the node `spec` describes (same calling convention as `spec.opdef.kernel`), or
        None to decline."""
        return None

    def fuse_steps(self, plan):
        """The plan's steps once this EP has had its say over them as a whole (a native EP may run several as one);
        called for every graph plan, bodies included, after the steps are placed."""
        return plan.steps


class CPUExecutionProvider(ExecutionProvider):
    name = "CPUExecutionProvider"

    def claim(self, spec):
        return spec.opdef.kernel


_PROVIDERS = {"CPUExecutionProvider": CPUExecutionProvider}


def register_provider(cls):
    """Make an EP class available by its name (EP modules call this when their runtime is present)."""
    _PROVIDERS[cls.name] = cls
    return cls


def available_providers():
    """Registered EP names in onnxruntime's order: the CPU EP, which takes what nobody else does, last."""
    return [n for n in _PROVIDERS if n != "CPUExecutionProvider"] + ["CPUExecutionProvider"]


def default_providers():
    """What a session without a providers list runs: the registered EPs marked by_default, then the CPU EP."""
    return [n for n, cls in _PROVIDERS.items() if cls.by_default] + ["CPUExecutionProvider"]


def create(name, options=None):
    return _PROVIDERS[name](options)
