"""Execute: runs a model's plan (plan/). One loop serves `run` and `run_async`: the loop is a generator that
yields `(step, awaitable)` where a kernel or a transfer returned an awaitable (GPU work, readback in the page);
`drive_sync` runs it to the end or refuses an awaitable, `drive_async` awaits each one. Control-flow kernels are
generators too (`yield from ctx.run_graph(...)`), so the same holds inside If / Loop / Scan bodies. Each run has
its own environment of slots, so threads may share a session."""
import inspect
import threading
import time
import weakref

import numpy as np

from ..errors import EPFail, Fail, OnnxideError, RuntimeException
from ..plan import PlanContext, build_plan, node_label, plain_names
from ..runtime.devices import HOST, location_of
from .context import KernelContext


def drive_sync(gen):
    """The generator's return value; an awaitable on the way raises EPFail naming the node that needs it."""
    try:
        step, awaitable = gen.send(None)
    except StopIteration as stop:
        return stop.value
    if hasattr(awaitable, "close"):
        awaitable.close()
    gen.close()
    what = "A transfer of an input" if step is None else node_label(step.node) + (
        f" runs on {step.ep.name}, whose" if step.ep is not None else "'s")
    raise EPFail(f"{what} results must be awaited: use `await session.run_async(...)` (or the JS API) for this "
                 f"session")


async def drive_async(gen):
    """The generator's return value, awaiting each awaitable it yields (a failure is thrown back into the run, as
    the node's error, so the run cleans up)."""
    value, error = None, None
    while True:
        try:
            step, awaitable = gen.throw(error) if error is not None else gen.send(value)
        except StopIteration as stop:
            return stop.value
        value, error = None, None
        try:
            value = await awaitable
        except Exception as e:  # noqa: BLE001
            error = e if step is None else node_error(step, e)


TIMEOUT_KEY = "onnxide.run_timeout_seconds"  # a RunOptions config entry: stop the run after this many seconds


class RunControl:
    """What may stop a run between two steps (bodies and Loop / Scan iterations included): `RunOptions.terminate`,
    set from another thread, and the run's timeout. `check()` raises onnxruntime's Fail."""

    __slots__ = ("options", "deadline", "timeout", "fired")

    def __init__(self, run_options):
        self.options, self.fired = run_options, False
        cfg = getattr(run_options, "_config", {})
        self.timeout = float(cfg[TIMEOUT_KEY]) if TIMEOUT_KEY in cfg else None
        self.deadline = time.monotonic() + self.timeout if self.timeout is not None else None

    @classmethod
    def of(cls, run_options):
        """A RunControl for `run_options`, or None when nothing can stop the run (the loop checks nothing)."""
        return cls(run_options) if run_options is not None else None

    def check(self):
        if self.options.terminate:
            self.fired = True
            raise Fail("Exiting due to terminate flag being set to true.")
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.fired = True
            raise Fail(f"Exiting: the run exceeded its timeout of {self.timeout:g} s ({TIMEOUT_KEY})")


def _one_chain(plan):
    """(step, {output name: index of the step's output}) when `plan` is one host step whose kernel returns its
    outputs as a tuple of arrays (a chain of the whole graph: small models) and makes every graph output; else None."""
    step = plan.steps[0] if len(plan.steps) == 1 else None
    if (step is None or not getattr(step.kernel, "returns_array_tuple", False) or plan.devices
            or step.bodies is not None or not all(k in step.out_keys for k in plan.output_keys)):
        return None
    return step, {n: step.out_keys.index(k) for n, k in zip(plan.output_names, plan.output_keys)}


class Executor:
    """Runs a model's main graph (bodies on demand) with the session's providers. Building one plans every graph
    and places the initializers its devices read (the session's `prepare`)."""

    def __init__(self, model, providers, profiler=None):
        self.model, self.providers, self.profiler = model, providers, profiler
        pc = PlanContext(model.opsets, providers, plain_names(model.graph))
        self.main_plan = build_plan(model.graph, pc)
        self.devices = tuple(sorted(self.main_plan.devices, key=repr))
        # a device's queues, staging buffers and pools are the EP's, not the run's: threads take turns there
        self._device_turns = threading.Lock() if self.devices else None
        _give_contexts(self.main_plan)
        if self.devices:  # the weights placed on devices go back when the executor goes (a session, set_providers)
            weakref.finalize(self, _free_constants, list(_device_constants(self.main_plan)))
        self._output_slot = dict(zip(self.main_plan.output_names, self.main_plan.output_keys))  # name -> env key
        # a plan that is one chain (one call into C or WASM: no BLAS) runs without the step loop (_run_single)
        # when nothing is profiled or moved
        single = _one_chain(self.main_plan)
        self.one_chain = single is not None
        self._single = single if profiler is None else None

    # --- the two drivers ---------------------------------------------------------------------------------------
    def run(self, feeds, output_names, fetch_devices=None, control=None):
        """Output values for `output_names` (host arrays, or values on `fetch_devices[name]`); `control` (a
        RunControl) may stop the run between steps."""
        if self._single is not None and control is None and not fetch_devices:
            return self._run_single(feeds, output_names)
        if self._device_turns is None:
            return drive_sync(self._run(feeds, output_names, fetch_devices, control))
        with self._device_turns:
            return drive_sync(self._run(feeds, output_names, fetch_devices, control))

    async def run_async(self, feeds, output_names, fetch_devices=None, control=None):
        if self._single is not None and control is None and not fetch_devices:  # (a chain awaits nothing)
            return self._run_single(feeds, output_names)
        return await drive_async(self._run(feeds, output_names, fetch_devices, control))

    def _run_single(self, feeds, output_names):
        """run() of a one-chain plan (_one_chain): the step's kernel on the feeds and constants it reads, without
        the general loop's environment, generators and per-step checks (none of which has work to do there)."""
        step, index = self._single
        env = self.main_plan.const_env
        args = [feeds[k] if k in feeds else env.get(k) for k in step.in_keys]
        try:
            result = step.kernel(*args, **step.call_kwargs)
        except Exception as e:
            raise node_error(step, e) from (None if isinstance(e, OnnxideError) else e)
        return [result[index[n]] for n in output_names]

    # --- one run -----------------------------------------------------------------------------------------------
    def _run(self, feeds, output_names, fetch_devices, control):
        plan = self.main_plan
        env = dict(plan.const_env)
        values = [feeds[n] if n in feeds else env.get(n) for n in plan.input_names]
        if not self.devices and not fetch_devices:  # host only: nothing to move, hand over or release
            env.update(zip(plan.input_names, values))
            yield from self.execute(plan, env, control)
            return [env[self._output_slot[n]] for n in output_names]
        extra = []
        try:
            yield from self._bind(plan, values, env, extra)
            yield from self.execute(plan, env, control)
            outs = yield from self._fetch(plan, env, output_names, fetch_devices or {})
        except BaseException:
            self._clean(plan, env, extra)
            raise
        self._clean(plan, env, extra)
        return outs

    def run_body(self, step, graph, inputs, outer_env, control=None):
        """Generator: the body `graph` of `step` run on `inputs`; its outputs, owned by the caller."""
        if control is not None:
            control.check()  # (a Loop of empty bodies still stops)
        plan = step.bodies[id(graph)]
        if len(inputs) < len(plan.input_names):
            raise RuntimeException(f"Subgraph '{graph.name}' expects {len(plan.input_names)} inputs, got "
                                   f"{len(inputs)}")
        env = dict(plan.const_env)
        for k in plan.outer_keys:
            env[k] = outer_env[k]
        extra = []
        try:
            yield from self._bind(plan, inputs, env, extra)
            yield from self.execute(plan, env, control)
            outs = []
            for key, owned in zip(plan.output_keys, plan.output_owned):
                v = env[key]
                if not owned and self.devices:
                    d = location_of(v, self.devices)
                    if not d.is_host:
                        v = d.share(v)
                outs.append(v)
        except BaseException:
            self._clean(plan, env, extra)
            raise
        self._clean(plan, env, extra, keep=plan.output_keys)
        return outs

    def _bind(self, plan, values, env, extra):
        """Put each graph input in the slots its readers need: where it arrived as given (its home slot borrows
        it; another slot gets a shared reference), elsewhere as an owned copy (a copy in a home slot goes to
        `extra`, released after the run)."""
        if not plan.devices:
            for name, value in zip(plan.input_names, values):
                env[name] = value
            return
        for name, value in zip(plan.input_names, values):
            if value is None:
                continue
            home, src = plan.homes[name], location_of(value, self.devices)
            on_host = value if src.is_host else None
            for dev in plan.input_needs.get(name, ()):
                key = name if dev is home else (name, dev)
                if dev is src:
                    env[key] = value if dev is home or dev.is_host else dev.share(value)
                    continue
                if on_host is None:
                    on_host = yield from self._moved(value, src, HOST)
                moved = yield from self._moved(on_host, HOST, dev)
                env[key] = moved
                if dev is home and not dev.is_host:
                    extra.append((moved, dev))

    @staticmethod
    def _moved(value, src, dst, share=False):
        """Generator: `value` (on `src`) as a value on `dst` (an owned copy; the same buffer shared when equal)."""
        if src is dst:
            return dst.share(value) if share and not dst.is_host else value
        if not src.is_host:
            value = src.download(value)
            if inspect.isawaitable(value):
                value = yield (None, value)
        if not dst.is_host:
            value = dst.upload(value)
            if inspect.isawaitable(value):
                value = yield (None, value)
        return value

    def _fetch(self, plan, env, names, fetch_devices):
        """Generator: the requested outputs on the devices asked for (host by default). A device output asked for
        where it is goes to the caller as is (a second request shares it); the rest stays for _clean."""
        slot = self._output_slot
        outs, handed = [], set()
        for name in names:
            key = slot[name]
            v = env[key]
            src, dst = location_of(v, self.devices), fetch_devices.get(name) or HOST
            if src is dst and not src.is_host and key in plan.owned_dev and key not in handed:
                handed.add(key)
                outs.append(v)
            else:
                outs.append((yield from self._moved(v, src, dst, share=True)))
        for key in handed:
            env.pop(key)
        return outs

    @staticmethod
    def _clean(plan, env, extra, keep=()):
        """Release the device slots a run still holds (all of them after a failure) and the binding copies."""
        for key, dev in plan.owned_dev.items():
            if key in env and key not in keep:
                v = env.pop(key)
                if v is not None:
                    dev.release(v)
        for value, dev in extra:
            dev.release(value)

    # --- the loop ----------------------------------------------------------------------------------------------
    def execute(self, plan, env, control=None):
        """Generator running `plan`'s steps over `env`; yields (step, awaitable) where one must be awaited."""
        prof = self.profiler
        for step in plan.steps:  # this loop is the per-node overhead of every run
            if control is not None:
                control.check()
            args = [env[k] if k is not None else None for k in step.in_keys]
            kwargs = step.call_kwargs
            if step.bodies is not None and step.wants_ctx:
                kwargs = dict(kwargs, ctx=KernelContext(step, self, env, control))
            if prof is not None:
                t0 = prof.now_us()
            try:
                result = step.kernel(*args, **kwargs)
            except Exception as e:
                raise node_error(step, e) from (None if isinstance(e, OnnxideError) else e)
            kind = type(result)
            if (kind is np.ndarray and step.num_outputs == 1) or (  # the common cases, without a call
                    kind is tuple and len(result) == step.num_outputs and step.device.is_host):
                if kind is np.ndarray:
                    env[step.out_keys[0]] = result
                else:  # (several host outputs: a native chain's)
                    for k, v in zip(step.out_keys, result):
                        if k:
                            env[k] = v if type(v) is np.ndarray else _as_value(v)
                for k in step.release:
                    env.pop(k, None)
                if step.release_dev:
                    _release(step, env)
                if prof is not None:
                    prof.node(step, t0, args, (result,) if kind is np.ndarray else result)
                continue
            if inspect.isgenerator(result):
                try:
                    result = yield from result
                except Exception as e:
                    raise node_error(step, e) from (None if isinstance(e, OnnxideError) else e)
            elif inspect.isawaitable(result):
                result = yield (step, result)
            self._store(step, args, result, env)
            if prof is not None:
                prof.node(step, t0, args, result if isinstance(result, tuple) else (result,))

    @staticmethod
    def _store(step, args, result, env):
        outs = step.out_keys
        if len(outs) == 1:
            if type(result) is not np.ndarray:
                if isinstance(result, tuple):
                    if not result:  # (a SequenceMap whose body has no outputs)
                        raise RuntimeException(f"Non-zero status code returned while running {node_label(step.node)} "
                                               "Status Message: the node gave no value for its output")
                    result = result[0]
                result = _as_value(result)
            values = [result]
        else:
            if not isinstance(result, (tuple, list)):
                result = (result,)
            values = [_as_value(v) for v in result]
            if len(values) < len([o for o in outs if o]):
                for name in outs[len(values):]:
                    if name:
                        raise RuntimeException(f"{node_label(step.node)} did not produce output '{name}'")
        if not step.device.is_host:  # a device value is owned once: a second owner gets a shared reference
            seen = [a for a in args if a is not None]
            for i, v in enumerate(values):
                if v is not None and any(v is s for s in seen):
                    values[i] = v = step.device.share(v)
                seen.append(v)
            for name, v in zip(outs + [""] * (len(values) - len(outs)), values):
                if not name and v is not None:  # an output the node omits
                    step.device.release(v)
        for name, value in zip(outs, values):
            if name:
                env[name] = value
        for k in step.release:
            env.pop(k, None)
        if step.release_dev:
            _release(step, env)


def _device_constants(plan):
    for key, value in plan.const_env.items():
        if isinstance(key, tuple) and not key[1].is_host:
            yield value, key[1]
    for step in plan.steps:
        for body in (step.bodies or {}).values():
            yield from _device_constants(body)


def _free_constants(placed):
    for value, device in placed:
        device.release(value)


def _give_contexts(plan):
    """Kernels that take `ctx` but run no body get one context for good (per-call ones carry a run's values)."""
    for step in plan.steps:
        give_context(step)
        for body in (step.bodies or {}).values():
            _give_contexts(body)


def give_context(step):
    """A step whose kernel takes `ctx` and runs no body: its context, for good (also for steps an EP runs itself)."""
    if step.wants_ctx and step.bodies is None and step.ctx is None:
        step.ctx = KernelContext(step)
        step.call_kwargs = dict(step.kwargs, ctx=step.ctx)


def _release(step, env):
    for k, dev in step.release_dev:
        v = env.pop(k, None)
        if v is not None:
            dev.release(v)


def node_error(step, e):
    """The exception to raise for a kernel's failure: onnxide errors keep their type, others become
    RuntimeException; both name the node like onnxruntime does."""
    where = f"Non-zero status code returned while running {node_label(step.node)} Status Message: "
    if isinstance(e, OnnxideError):
        return type(e)(where + str(e))
    return RuntimeException(where + f"{type(e).__name__}: {e}")


def _as_value(v):
    if isinstance(v, np.generic):
        return np.asarray(v)
    return v
