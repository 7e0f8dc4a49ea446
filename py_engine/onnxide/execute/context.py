"""KernelContext: what a kernel may ask about its node at run time (ops/registry.py), and — for If / Loop / Scan —
how it runs its bodies: `outs = yield from ctx.run_graph(body, inputs)`, so awaitable device work anywhere in a
body reaches the run's driver. A context with bodies belongs to one call (one run's values), never to the node."""
from ..runtime.devices import location_of


class KernelContext:
    __slots__ = ("num_outputs", "opset", "node_name", "input_types", "array_ops", "_executor", "_step", "_env",
                 "_control")

    def __init__(self, step, executor=None, env=None, control=None):
        self.num_outputs = step.num_outputs
        self.opset = step.opset
        self.node_name = step.node.name
        self.input_types = step.input_types
        self.array_ops = step.device.array_ops  # take / stack / zeros where the node's values live
        self._executor, self._step, self._env, self._control = executor, step, env, control

    def run_graph(self, graph, inputs):
        """A generator running the body `graph` with positional `inputs`; returns its outputs (owned by the
        caller). Values of the enclosing graphs are visible to it; the run's terminate flag stops it."""
        return self._executor.run_body(self._step, graph, list(inputs), self._env, self._control)

    def call_graph(self, graph, inputs):
        """run_graph for kernels that are not generators (a body of host-only work)."""
        from . import drive_sync
        return drive_sync(self.run_graph(graph, inputs))

    def release(self, values):
        """Hand back device values this kernel owns (a Loop's carried values of an earlier iteration)."""
        devices = self._executor.devices
        for v in values:
            if v is not None and devices:
                d = location_of(v, devices)
                if not d.is_host:
                    d.release(v)
