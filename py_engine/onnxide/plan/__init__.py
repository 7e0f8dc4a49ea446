"""Plan: the stage between the partition and the executor. Turns a graph's placed nodes into steps over named
slots of a run's environment, with every value's location decided here:

- a value lives on its producer's device (its *home*); a copy at another location is its own slot `(name,
  device)`, made by an explicit transfer step (`MemcpyToHost` / `MemcpyFromHost`, as onnxruntime names them)
  before its first reader there — so a value read by two device nodes is never read back in between;
- initializers are placed on each device that reads them once, when the plan is built (`const_env`), never per run;
- graph inputs are bound at run start at every location their readers need (`input_needs`);
- If / Loop / Scan bodies are planned with the step that runs them (`step.bodies`): they read the enclosing
  graph's values in place, at the locations the enclosing plan provides (`outer_keys`), and a Loop's carried values
  stay on the node's device between iterations;
- each slot the plan owns is released at its last use (`release` for host slots, `release_dev` hands device
  values back to their Device), so a device can pool buffers; `lifetimes.arena_offsets` turns the same facts into
  fixed buffer offsets where a device wants them (CUDA graphs).
"""
import inspect

import numpy as np

from ..errors import InvalidArgument
from ..ir.model import subgraphs
from ..ops.math import unlifted
from ..ops.validate import input_guard
from ..partition import graph_types, node_label, partition
from ..runtime.devices import HOST
from ..runtime.providers import guarded


class PseudoNode:
    """The node a transfer step reports as (profiling, errors), like onnxruntime's Memcpy nodes."""

    __slots__ = ("op_type", "name", "domain", "inputs", "outputs", "attrs")

    def __init__(self, op_type, name, src, dst):
        self.op_type, self.name, self.domain = op_type, name, ""
        self.inputs, self.outputs, self.attrs = [src], [dst], {}


class Step:
    """One planned kernel call: the node (or a transfer's PseudoNode), its EP and device, its kernel and attribute
    kwargs, the env slots it reads (`in_keys`, None for an omitted input) and writes (`out_keys`), the slots it
    is the last reader of, and the plans of its bodies (keyed by id of the body graph)."""

    __slots__ = ("node", "kernel", "kwargs", "call_kwargs", "wants_ctx", "ctx", "in_keys", "out_keys", "release",
                 "release_dev", "num_outputs", "opset", "input_types", "ep", "device", "bodies", "body_keys")

    def __init__(self, node, kernel, in_keys, out_keys, ep=None, device=HOST, kwargs=None, wants_ctx=False,
                 opset=None, input_types=()):
        self.node, self.kernel, self.ep, self.device = node, kernel, ep, device
        self.kwargs = dict(kwargs or {})
        self.call_kwargs = self.kwargs
        self.wants_ctx, self.ctx = wants_ctx, None
        self.in_keys, self.out_keys = list(in_keys), list(out_keys)
        while self.in_keys and self.in_keys[-1] is None:
            self.in_keys.pop()
        self.num_outputs = len(self.out_keys)
        self.opset, self.input_types = opset, list(input_types)
        self.release, self.release_dev = (), ()
        self.bodies, self.body_keys = None, ()

    @property
    def is_transfer(self):
        return isinstance(self.node, PseudoNode)


class Plan:
    """A graph's steps and what a run of it needs: the constants env (initializers, and their device copies),
    graph inputs with the devices each must be bound on, the slots of its outputs, the enclosing slots it reads."""

    def __init__(self, graph):
        self.graph = graph
        self.steps = []
        self.const_env = {}
        self.homes = {}          # name -> Device of every value this graph defines
        self.input_names = [v.name for v in graph.inputs]
        self.input_needs = {}    # graph input -> [Device] its readers need it on (its home among them when read there)
        self.output_names = [o.name for o in graph.outputs]
        self.output_keys = []    # the slot each graph output is read from at the end of a run
        self.output_owned = []   # whether this plan's run made that slot (else: an input, constant or outer value)
        self.outer_keys = []     # enclosing slots the steps and bodies read
        self.owned_dev = {}      # device slots this plan creates -> Device (released at last use)
        self.devices = set()     # the non-host devices this plan (or a body) touches
        self.types = {}          # name -> (element type, dims) as the graph fixes them

    def key(self, name, device):
        return name if self.homes.get(name) is device else (name, device)


class PlanContext:
    """What every graph of one executor is planned with: the model's opsets, the session's EPs, and the names of
    values that are never exotic-float arrays (kernels for those run without the lifting wrapper)."""

    def __init__(self, opsets, providers, plain):
        self.opsets, self.providers, self.plain = opsets, providers, plain


def _body_context(pc, opdef):
    """How a node's bodies are planned: with every provider when its kernel runs them as a generator (If / Loop /
    Scan: device work inside may be awaited), else with the host providers only (a kernel calling a body
    synchronously — FlexAttention's score_mod — could not await a GPU readback)."""
    if inspect.isgeneratorfunction(inspect.unwrap(opdef.kernel)):
        return pc
    return PlanContext(pc.opsets, [p for p in pc.providers if p.device.is_host], pc.plain)


def body_devices(node, body, device):
    """(input devices, output devices) of `body`, a subgraph of `node` placed on `device`: a Loop's iteration
    number and condition are host values; everything a body carries or scans stays on the node's device."""
    n_in, n_out = len(body.inputs), len(body.outputs)
    ins, outs = [device] * n_in, [device] * n_out
    if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
        ins[:2] = [HOST] * min(2, n_in)
        outs[:1] = [HOST] * min(1, n_out)
    return ins, outs


def build_plan(graph, pc, input_devices=None, output_wants=None, outer_homes=None, outer_types=None):
    """The Plan of `graph`. `input_devices`: a Device per graph input (HOST when None); `output_wants`: a Device per
    graph output, or None for the main graph (outputs stay where they are made; the run fetches them);
    `outer_homes` / `outer_types`: homes and types of the enclosing graphs' values."""
    plan = Plan(graph)
    outer_homes = outer_homes or {}
    in_devs = {v.name: (input_devices[i] if input_devices else HOST) for i, v in enumerate(graph.inputs)}
    wants = None if output_wants is None else {o.name: d for o, d in zip(graph.outputs, output_wants)}
    types = plan.types = graph_types(graph, outer_types)
    placed = partition(graph, pc.opsets, pc.providers, types, in_devs, wants, outer_homes)
    homes = plan.homes
    for name, value in graph.initializers.items():
        homes[name] = HOST
        if isinstance(value, np.ndarray):  # constants: no kernel may write them, so EPs may cache derived forms
            value.flags.writeable = False
    plan.const_env.update(graph.initializers)
    homes.update(in_devs)
    for p in placed:
        for o in p.node.outputs:
            if o:
                homes[o] = p.device
    visible = {k: v for k, v in outer_homes.items() if k not in homes}
    visible.update(homes)
    made = set()  # non-home slots that exist so far (transfers done, constants placed, outer slots requested)
    outer_keys = {}

    def need(name, device):
        """The slot holding `name` on `device`, making it exist (transfer step, constant placement, input binding
        or a request to the enclosing plan) if needed."""
        if not device.is_host:
            plan.devices.add(device)
        local = name in homes
        home = homes[name] if local else outer_homes.get(name)
        if home is None:
            raise InvalidArgument(f"'{name}' is read but not defined in graph '{graph.name}' or an enclosing one")
        key = name if device is home else (name, device)
        if not local:
            outer_keys[key] = None
            return key
        if name in in_devs:  # bound at run start, wherever the value arrives (its home slot borrows it)
            if device not in plan.input_needs[name]:
                plan.input_needs[name].append(device)
                if device is not home and not device.is_host:
                    plan.owned_dev[key] = device
            return key
        if device is home or key in made:
            return key
        made.add(key)
        if name in graph.initializers:
            plan.const_env[key] = device.place_constant(graph.initializers[name])
        elif home.is_host or device.is_host:
            plan.steps.append(_transfer(name, name, key, home, device))
            if not device.is_host:
                plan.owned_dev[key] = device
        else:  # device to another device: through the host
            host_key = need(name, HOST)
            plan.steps.append(_transfer(name, host_key, key, HOST, device))
            plan.owned_dev[key] = device
        return key

    for name in in_devs:
        plan.input_needs.setdefault(name, [])
    for p in placed:
        n, dev = p.node, p.device
        host_in, meta_in = p.opdef.host_inputs, p.opdef.meta_inputs
        in_keys = []
        for i, x in enumerate(n.inputs):
            if not x:
                in_keys.append(None)
            elif i in meta_in:
                in_keys.append(need(x, homes[x] if x in homes else outer_homes[x]))
            else:
                in_keys.append(need(x, HOST if (dev.is_host or i in host_in) else dev))
        step = Step(n, p.kernel, in_keys, n.outputs, p.ep, dev, n.attrs, p.opdef.wants_ctx, p.version,
                    [graph.value_type(x) if x else None for x in n.inputs])
        bodies = list(subgraphs(n))
        if bodies:
            step.bodies, body_keys = {}, {}
            for body in bodies:
                b_in, b_out = body_devices(n, body, dev)
                sub = build_plan(body, _body_context(pc, p.opdef), b_in, b_out, visible, types)
                step.bodies[id(body)] = sub
                plan.devices |= sub.devices
                for key in sub.outer_keys:
                    name, device = (key, visible[key]) if isinstance(key, str) else key
                    body_keys[need(name, device)] = None
            step.body_keys = tuple(body_keys)
        if not dev.is_host:
            plan.devices.add(dev)
        for o in n.outputs:
            if o and not dev.is_host:
                plan.owned_dev[o] = dev
        plan.steps.append(step)
    seen = set()
    made = {k for s in plan.steps for k in s.out_keys}
    for o in graph.outputs:
        key = need(o.name, wants[o.name]) if wants is not None else need(o.name, visible[o.name])
        owned = key not in seen and (key in plan.owned_dev or key in made)
        seen.add(key)
        plan.output_keys.append(key)
        plan.output_owned.append(owned)
    plan.outer_keys = list(outer_keys)
    for step in plan.steps:
        if not step.is_transfer and step.device.is_host:
            step.kernel = _unwrapped(step, pc.plain)
        if not step.is_transfer:
            step.kernel = input_guard(step.node, step.kernel, step.opset)
    for ep in pc.providers:
        plan.steps = ep.fuse_steps(plan)
    _plan_releases(plan)
    return plan


def _transfer(name, src_key, dst_key, src, dst):
    """A step copying slot `src_key` (on `src`) into slot `dst_key` (on `dst`), one side being the host."""
    if dst.is_host:
        node = PseudoNode("MemcpyToHost", f"{name}_to_host", src_key, dst_key)
        return Step(node, src.download, [src_key], [dst_key], device=HOST)
    node = PseudoNode("MemcpyFromHost", f"{name}_to_{dst}", src_key, dst_key)
    return Step(node, dst.upload, [src_key], [dst_key], device=dst)


def _plan_releases(plan):
    """Each slot's last reader releases it: host slots are dropped from the env, device slots the plan made go back
    to their Device. Graph outputs and constants stay; a slot nobody reads goes right after its writer."""
    keep = set(plan.output_keys) | set(plan.const_env) | set(plan.graph.initializers)
    last = {}
    for i, s in enumerate(plan.steps):
        for k in s.out_keys:
            if k:
                last.setdefault(k, i)
        for k in s.in_keys:
            if k is not None:
                last[k] = i
        for k in s.body_keys:
            last[k] = i
    host, dev = [[] for _ in plan.steps], [[] for _ in plan.steps]
    for k, i in last.items():
        if k in keep:
            continue
        if k in plan.owned_dev:
            dev[i].append((k, plan.owned_dev[k]))
        else:
            host[i].append(k)
    for s, h, d in zip(plan.steps, host, dev):
        s.release, s.release_dev = tuple(h), tuple(d)


def _unwrapped(step, plain):
    """The step's kernel without its exotic-float lifting wrapper (ops.math.unlifted) when no input can be a
    structured array (every input name in `plain`, see plain_names) and no attribute is one. Saves the wrapper's
    per-call argument scan on every node of every run."""
    names = [k if isinstance(k, str) else k[0] for k in step.in_keys if k is not None]
    if any(name not in plain for name in names) or any(
            isinstance(v, np.ndarray) and v.dtype.names is not None for v in step.kwargs.values()):
        return step.kernel
    fallback = getattr(step.kernel, "ep_fallback", None)
    if fallback is not None:  # a host EP's fast path: its numpy fallback is unwrapped the same way
        return guarded(step.kernel.ep_fast, unlifted(fallback))
    return unlifted(step.kernel)


def plain_names(graph):
    """Names of values that are numpy-native tensors wherever they appear in `graph` and its subgraphs: declared or
    inferred non-exotic tensor types, plain-dtype initializers; a name typed otherwise anywhere (exotic, a sequence,
    unknown) is left out, so a body reading an enclosing graph's value by name is judged by that graph's type."""
    from ..dtypes import is_exotic

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


__all__ = ["Plan", "PlanContext", "Step", "build_plan", "plain_names", "node_label"]
