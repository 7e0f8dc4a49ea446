"""Native chains (issue 16 item 1): a run of consecutive host steps of a plan whose values are float32 of fixed shapes
and whose ops the native kernels implement becomes one step that runs them all from one call into C (nx_chain_run,
native_eps/cpu_kernels/nx_chain.c) over one arena per run and thread, so Python works only at the chain's borders.
Small nodes, which the EP otherwise leaves to numpy, run natively inside a chain: there the per-call costs they avoid
are gone. The backend-independent part (tensors, lifetimes, the program, the step, the plan pass) is
onnxide.plan.chains; here: nx_chain.c's op codes and record, the lowerings (chain_lower.py), the call."""
import numpy as np

from onnxide.plan import chains

from . import cpu_ops as K
from .chain_lower import lower

# nx_chain.c's op codes; its nx_instr is 40 longs
OPS = {name: i + 1 for i, name in enumerate(("gemm", "act", "bias_act", "binary", "softmax", "layernorm", "affine",
                                             "maxpool", "gavg", "dwconv", "conv_shifted", "winograd", "copy",
                                             "strided", "upsample", "attention", "fill", "lstm", "dq",
                                             "qgemm"))}


class NativeChains(chains.Backend):
    node_type = "NativeChain"
    ops = OPS
    layout = chains.Layout(np.int64)
    host_eps = ("NativeCPUExecutionProvider", "CPUExecutionProvider")

    def __init__(self, lib, ep):
        super().__init__(ep)
        self.lib = lib

    def lower(self, b, step):
        lower(b, step)

    def threads(self):
        return K.threads()

    def run(self, chain, prog, nt, inputs):
        return chains.run_in_host_arena(chain, prog, nt, inputs, self._call)

    def _call(self, prog, ws, nt):
        return self.lib.nx_chain_run(prog.addresses[0], prog.n, prog.addresses[1], ws.base, ws.ext_address, nt)


def fuse(plan, lib, ep):
    """`plan.steps` with each run of lowerable steps worth a chain made one NativeChain step run by `ep`."""
    backend = getattr(ep, "_chains", None)
    if backend is None or backend.lib is not lib:
        backend = ep._chains = NativeChains(lib, ep)
    return chains.fuse(plan, backend)
