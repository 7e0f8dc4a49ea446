"""Execution plan and executor: kernels resolved once per session, values released after their last use, tensors
moved across EP borders (device EPs' `from_host` / `to_host`), and an async run for EPs whose kernels or readbacks
must be awaited (WebGPU in the page)."""
import inspect

import numpy as np

from ..errors import (EPFail, Fail, InvalidArgument, InvalidGraph, NotImplemented as OrtNotImplemented, OnnxideError,
                      RuntimeException)
from ..dtypes import is_exotic
from ..ir.model import AttrRef, subgraphs, type_dims
from ..ops.math import unlifted
from .providers import guarded, resolve_opdef


class KernelContext:
    """What a kernel may ask about its node at run time (see ops/registry.py)."""

    __slots__ = ("num_outputs", "opset", "node_name", "input_types", "_executor", "_env")

    def __init__(self, step, executor, env):
        self.num_outputs = step.num_outputs
        self.opset = step.opset
        self.node_name = step.node.name
        self.input_types = step.input_types
        self._executor, self._env = executor, env

    def run_graph(self, graph, inputs):
        """Run a subgraph with positional `inputs`; values of the enclosing scopes are visible to it."""
        return self._executor.run_subgraph(graph, list(inputs), self._env)


class Step:
    """One planned node: its kernel, resolved attribute kwargs and which values die after it."""

    __slots__ = ("node", "kernel", "kwargs", "wants_ctx", "inputs", "outputs", "release", "num_outputs",
                 "opset", "input_types", "ep", "ctx", "call_kwargs", "transfers")

    def __init__(self, node, kernel, kwargs, wants_ctx, opset, input_types, ep):
        self.node, self.kernel, self.kwargs, self.wants_ctx = node, kernel, kwargs, wants_ctx
        self.inputs = list(node.inputs)
        while self.inputs and not self.inputs[-1]:
            self.inputs.pop()
        self.outputs = list(node.outputs)
        self.num_outputs = len(node.outputs)
        self.opset, self.input_types, self.ep = opset, input_types, ep
        self.release = ()
        self.ctx, self.call_kwargs = None, kwargs
        self.transfers = ()  # (input index, EP holding the value or None for host, this step's EP)


class Plan:
    """The steps of one graph in execution order and the names that must come from outside."""

    def __init__(self, steps, outer_names, keep, homes):
        self.steps, self.outer_names, self.keep = steps, outer_names, keep
        self.homes = homes  # value name -> EP that produced it


def _node_label(node):
    return f"{node.op_type} node. Name:'{node.name}'"


def build_plan(graph, opsets, providers, outer_known=frozenset()):
    """Topologically order the graph's nodes, bind kernels from the first EP that claims each, plan releases."""
    available = set(graph.initializers) | {v.name for v in graph.inputs}
    pending = list(graph.nodes)
    ordered, produced = [], set(available)
    while pending:
        progress, rest = False, []
        for n in pending:
            if all((not x) or x in produced or x in outer_known for x in n.inputs):
                ordered.append(n)
                produced.update(o for o in n.outputs if o)
                progress = True
            else:
                rest.append(n)
        if not progress:
            missing = sorted({x for n in rest for x in n.inputs if x and x not in produced and x not in outer_known})
            raise Fail(f"Graph '{graph.name}' has a cycle or undefined inputs: {missing[:5]}")
        pending = rest
    steps = []
    outer = set()
    for n in ordered:
        try:
            opdef, version = resolve_opdef(n, opsets)
        except OrtNotImplemented as e:
            raise OrtNotImplemented(f"{e} with name '{n.name}'" if n.name else str(e)) from None
        dangling = [k for k, v in n.attrs.items() if isinstance(v, AttrRef)]
        if dangling:
            raise InvalidGraph(f"{_node_label(n)}: attribute(s) {dangling} refer to function attributes outside a "
                               f"function")
        unknown = set(n.attrs) - set(opdef.attrs) - opdef.required
        if unknown and not opdef.any_attrs:
            raise OrtNotImplemented(
                f"{_node_label(n)}: attribute(s) {sorted(unknown)} not supported by onnxide's {n.op_type}"
                f"({version})")
        missing = opdef.required - set(n.attrs)
        if missing:
            raise InvalidArgument(f"{_node_label(n)}: required attribute(s) {sorted(missing)} missing")
        if not opdef.variadic and len([x for x in n.inputs]) > opdef.n_inputs:
            raise InvalidArgument(f"{_node_label(n)}: {len(n.inputs)} inputs given, {n.op_type}({version}) takes "
                                  f"at most {opdef.n_inputs}")
        kernel, ep = None, None
        shapes = [_static_shape(graph, x) if x else None for x in n.inputs]
        for p in providers:
            if p.too_small(n, shapes):
                continue
            kernel = p.claim(n, opdef)
            if kernel is not None:
                ep = p
                break
        if kernel is None:
            raise OrtNotImplemented(f"No execution provider claims {_node_label(n)}")
        kwargs = dict(n.attrs)
        types = [graph.value_type(x) if x else None for x in n.inputs]
        steps.append(Step(n, kernel, kwargs, opdef.wants_ctx, version, types, ep))
        for x in n.inputs:
            if x and x not in available and x not in produced:
                outer.add(x)
    # outer-scope names used by nested subgraphs must be kept alive too
    keep = {o.name for o in graph.outputs}
    last_use = {}
    for i, s in enumerate(steps):
        for x in s.inputs:
            if x:
                last_use[x] = i
        for name in _subgraph_free_names(s.node):
            last_use[name] = i
            if name not in available and name not in produced:
                outer.add(name)
    releases = [[] for _ in steps]
    for name, i in last_use.items():
        if name not in keep and name not in graph.initializers:
            releases[i].append(name)
    for s, r in zip(steps, releases):
        s.release = tuple(r)
    return Plan(steps, sorted(outer), keep, _plan_transfers(steps))


def on_device(ep):
    """True for an EP whose tensors do not live in host memory (GPU); CPU and WASM EPs share numpy buffers."""
    return ep is not None and ep.device != "CPU"


def _plan_transfers(steps):
    """Where a value crosses from one memory to another (host ↔ device EP), the consuming step moves it."""
    home = {}
    for s in steps:
        moves = []
        for i, x in enumerate(s.inputs):
            src = home.get(x)
            if x and (on_device(src) or on_device(s.ep)) and src is not s.ep:
                moves.append((i, src, s.ep))
        s.transfers = tuple(moves)
        for o in s.outputs:
            home[o] = s.ep
    return home


def _subgraph_free_names(node):
    names = set()
    for g in subgraphs(node):
        names |= free_names(g)
    return names


def free_names(graph):
    """Names a graph (and its nested subgraphs) reads from enclosing scopes."""
    cache = graph.plan_cache.get("free")
    if cache is not None:
        return cache
    local = set(graph.initializers) | {v.name for v in graph.inputs}
    free = set()
    for n in graph.nodes:
        for x in n.inputs:
            if x and x not in local:
                free.add(x)
        for x in _subgraph_free_names(n):
            if x not in local:
                free.add(x)
        local.update(n.outputs)
    free |= {o.name for o in graph.outputs if o.name not in local}
    graph.plan_cache["free"] = free
    return free


class Executor:
    """Runs a model's main graph (and subgraphs on demand) with the session's providers."""

    def __init__(self, model, providers, profiler=None):
        self.model, self.providers, self.profiler = model, providers, profiler
        self._plain = None
        self.main_plan = self.plan_for(model.graph, {})

    def plan_for(self, graph, outer_env):
        plan = graph.plan_cache.get(self)  # plans are per executor: they hold its EPs' kernels
        if plan is None:
            plan = build_plan(graph, self.model.opsets, self.providers, frozenset(outer_env))
            for value in graph.initializers.values():  # constants: no kernel may write them, EPs may cache them
                if isinstance(value, np.ndarray):
                    value.flags.writeable = False
            if self._plain is None:
                self._plain = plain_names(self.model.graph)
            for step in plan.steps:
                step.kernel = _unwrapped(step, self._plain)
                step.call_kwargs = dict(step.kwargs)
                if step.wants_ctx:
                    step.ctx = KernelContext(step, self, None)
                    step.call_kwargs["ctx"] = step.ctx
            graph.plan_cache[self] = plan
        return plan

    def run(self, feeds, output_names):
        env = dict(self.model.graph.initializers)
        env.update(feeds)
        self._execute(self.main_plan, env)
        return [self._host(self.main_plan, n, env[n]) for n in output_names]

    async def run_async(self, feeds, output_names):
        """Like run, awaiting kernels and transfers that return awaitables (GPU work and readback in the page)."""
        env = dict(self.model.graph.initializers)
        env.update(feeds)
        for step in self.main_plan.steps:
            args = self._args(step, env)
            for i, value in enumerate(args):
                if inspect.isawaitable(value):
                    args[i] = await value
            result = self._call(step, args, env)
            if inspect.isawaitable(result):
                result = await result
            self._store(step, args, result, env)
        outs = []
        for n in output_names:
            v = self._host(self.main_plan, n, env[n])
            outs.append(await v if inspect.isawaitable(v) else v)
        return outs

    def run_subgraph(self, graph, inputs, outer_env):
        plan = self.plan_for(graph, outer_env)
        env = {name: outer_env[name] for name in plan.outer_names if name in outer_env}
        env.update(graph.initializers)
        for vi, value in zip(graph.inputs, inputs):
            env[vi.name] = value
        if len(inputs) < len(graph.inputs):
            raise Fail(f"Subgraph '{graph.name}' expects {len(graph.inputs)} inputs, got {len(inputs)}")
        self._execute(plan, env)
        return [self._host(plan, o.name, env[o.name]) if o.name in env else outer_env[o.name] for o in graph.outputs]

    @staticmethod
    def _host(plan, name, value):
        """A graph output in host memory (device EPs' outputs read back)."""
        ep = plan.homes.get(name)
        return ep.to_host(value) if on_device(ep) else value

    def _args(self, step, env):
        args = [env[x] if x else None for x in step.inputs]
        if step.transfers:
            self._move(step, args)
        if step.ctx is not None:
            step.ctx._env = env
        return args

    @staticmethod
    def _move(step, args):
        for i, src, dst in step.transfers:
            v = args[i]
            if v is not None:
                if on_device(src):
                    v = src.to_host(v)
                if on_device(dst):
                    v = dst.from_host(v)
                args[i] = v

    def _call(self, step, args, env):
        try:
            return step.kernel(*args, **step.call_kwargs)
        except Exception as e:
            raise _node_error(step, e) from (None if isinstance(e, OnnxideError) else e)

    def _store(self, step, args, result, env):
        outs = step.outputs
        if len(outs) == 1:
            if type(result) is not np.ndarray:
                if isinstance(result, tuple):
                    result = result[0]
                result = _as_value(result)
            env[outs[0]] = result
        else:
            if not isinstance(result, (tuple, list)):
                result = (result,)
            for name, value in zip(outs, result):
                if name:
                    env[name] = _as_value(value)
            if len(result) < len([o for o in outs if o]):
                for name in outs[len(result):]:
                    if name:
                        raise RuntimeException(f"{_node_label(step.node)} did not produce output '{name}'")
        for name in step.release:
            env.pop(name, None)

    def _execute(self, plan, env):
        prof, store = self.profiler, self._store
        for step in plan.steps:  # _args and _call inlined: this loop is the per-node overhead of every run
            args = [env[x] if x else None for x in step.inputs]
            if step.transfers:
                self._move(step, args)
            if step.ctx is not None:
                step.ctx._env = env
            if prof is not None:
                t0 = prof.now_us()
            try:
                result = step.kernel(*args, **step.call_kwargs)
            except Exception as e:
                raise _node_error(step, e) from (None if isinstance(e, OnnxideError) else e)
            if prof is not None:
                prof.node(step, t0, args, result if isinstance(result, tuple) else (result,))
            if type(result) is np.ndarray and step.num_outputs == 1:  # the common case, without a call
                env[step.outputs[0]] = result
                for name in step.release:
                    env.pop(name, None)
                continue
            if inspect.isawaitable(result):
                raise EPFail(f"{_node_label(step.node)} runs on {step.ep.name}, whose results must be awaited: use "
                             f"`await session.run_async(...)` (or the JS API) for this session")
            store(step, args, result, env)


def _static_shape(graph, name):
    """The value's shape when the graph fixes it (an initializer, or declared / inferred with every dim an int)."""
    value = graph.initializers.get(name)
    if value is not None:
        return getattr(value, "shape", None)
    dims = type_dims(graph.value_type(name))
    return tuple(dims) if dims is not None and all(isinstance(d, int) for d in dims) else None


def _unwrapped(step, plain):
    """The step's kernel without its exotic-float lifting wrapper (ops.math.unlifted) when no input can be a
    structured array (every input name in `plain`, see plain_names) and no attribute is one. Saves the wrapper's
    per-call argument scan on every node of every run."""
    if any(name and name not in plain for name in step.inputs) or any(
            isinstance(v, np.ndarray) and v.dtype.names is not None for v in step.kwargs.values()):
        return step.kernel
    fallback = getattr(step.kernel, "ep_fallback", None)
    if fallback is not None:  # an EP's fast path: its numpy fallback is unwrapped the same way
        return guarded(step.kernel.ep_fast, unlifted(fallback))
    return unlifted(step.kernel)


def plain_names(graph):
    """Names of values that are numpy-native tensors wherever they appear in `graph` and its subgraphs: declared or
    inferred non-exotic tensor types, plain-dtype initializers; a name typed otherwise anywhere (exotic, a sequence,
    unknown) is left out, so a body reading an enclosing graph's value by name is judged by that graph's type."""
    plain, other = set(), set()

    def visit(g):
        for name, v in g.initializers.items():
            (plain if isinstance(v, np.ndarray) and v.dtype.names is None else other).add(name)
        values = [(vi.name, vi.type) for vi in list(g.inputs) + list(g.outputs)]
        values += [(name, vi.type) for name, vi in g.value_info.items()]
        for name, tp in values:
            if name in g.initializers:
                continue
            tensor = getattr(tp, "tensor_type", None) if tp is not None else None
            code = getattr(tensor, "elem_type", 0) if tensor is not None else 0
            (plain if code and not is_exotic(code) else other).add(name)
        for n in g.nodes:
            for sub in subgraphs(n):
                visit(sub)

    visit(graph)
    return plain - other


def _node_error(step, e):
    """The exception to raise for a kernel's failure: onnxide errors keep their type, others become
    RuntimeException; both name the node like onnxruntime does."""
    where = f"Non-zero status code returned while running {_node_label(step.node)} Status Message: "
    if isinstance(e, OnnxideError):
        return type(e)(where + str(e))
    return RuntimeException(where + f"{type(e).__name__}: {e}")


def _as_value(v):
    if isinstance(v, np.generic):
        return np.asarray(v)
    return v
