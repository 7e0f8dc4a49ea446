"""The parent side of the campaign: one child process per engine (memory capped with setrlimit, answers timed out,
restarted after a crash or hang), each case sent to every engine, outcomes classified and tallied."""
import collections
import os
import pickle
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

from .worker import clip

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEBUG_NATIVE = os.path.join(ROOT, "build", "native-debug")

# name -> (engine, provider, threads)
ENGINES = {
    "cpu": ("onnxide", "CPUExecutionProvider", 1),
    "native": ("onnxide", "NativeCPUExecutionProvider", 2),
    "wasm": ("onnxide", "WasmExecutionProvider", 1),
    "ort": ("onnxruntime", "CPUExecutionProvider", 1),
}
OURS = ("cpu", "native", "wasm")
# a Python exception's name inside an onnxide message: an internal failure wrapped, not a check of ours
INTERNAL = re.compile(r"\b(ZeroDivisionError|IndexError|KeyError|AttributeError|TypeError|UnboundLocalError|"
                      r"NameError|AssertionError|OverflowError|ValueError|RecursionError|FloatingPointError|"
                      r"StopIteration|RuntimeError|NotImplementedError|LookupError|UnicodeDecodeError|SystemError|"
                      r"MemoryError)\b|cannot reshape array|object has no attribute|(list|tuple|string) index out of range")
# seeds whose outputs are random draws: run for crashes, never compared between engines
RANDOM = re.compile(r"bernoulli|random|multinomial|dropout", re.I)
OOM = re.compile(r"MemoryError|Unable to allocate|memory limit")
TIMEOUT = "Exiting due to terminate flag"  # the worker's run timeout fired: slow here, not a verdict on the model


_ASAN = []


def asan_runtime():
    """The path of gcc's libasan (preloaded into the native worker with the debug kernels), or None."""
    if not _ASAN:
        try:
            path = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            path = ""
        _ASAN.append(path if os.path.isabs(path) and os.path.exists(path) else None)
    return _ASAN[0]


def debug_native(build=False):
    """build/native-debug (the native kernels with argument checks and AddressSanitizer) when it exists — built
    first with `build` where gcc is — else None."""
    lib = os.path.join(DEBUG_NATIVE, "libonnxide_cpu.so")
    if build and not os.path.isfile(lib) and asan_runtime() is not None:
        subprocess.run(["bash", os.path.join(ROOT, "native_eps", "cpu_kernels", "build.sh"), "--no-install",
                        "--debug"], capture_output=True, timeout=600)
    return DEBUG_NATIVE if os.path.isfile(lib) else None


def available_engines():
    """The engine names this machine can run (onnxide's EPs that register here, onnxruntime when installed)."""
    sys.path.insert(0, os.path.join(ROOT, "py_engine"))
    import onnxide

    have = set(onnxide.get_available_providers())
    names = [n for n in OURS if ENGINES[n][1] in have]
    try:
        import onnxruntime  # noqa: F401
        names.append("ort")
    except ImportError:
        pass
    return names


class Worker:
    """One engine's child process; `run(case)` returns its outcome dict, or a crash / hang outcome."""

    def __init__(self, name, mem_bytes=3 << 30, timeout=30.0, run_timeout=10.0, native_dir=None):
        self.name, self.mem, self.timeout, self.run_timeout = name, mem_bytes, timeout, run_timeout
        self.native_dir = native_dir
        self.proc = self.sent = None
        self.restarts = 0

    def _asan(self):
        return self.name == "native" and self.native_dir is not None and asan_runtime() is not None

    def _limit(self):
        os.setpgrp()
        if not self._asan():  # (AddressSanitizer reserves terabytes of shadow: its own options cap it instead)
            resource.setrlimit(resource.RLIMIT_DATA, (self.mem, self.mem))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.nice(5)

    def start(self):
        engine, provider, threads = ENGINES[self.name]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS=str(threads), PYTHONHASHSEED="0",
                   ONNXIDE_FUZZ_MEMORY_LIMIT=str(self.mem // 2))
        if self.name == "native" and self.native_dir:
            env["ONNXIDE_NATIVE_DIR"] = self.native_dir
            if self._asan():
                mb = self.mem >> 20
                env.update(LD_PRELOAD=asan_runtime(), ASAN_OPTIONS=f"detect_leaks=0:allocator_may_return_null=1:"
                           f"soft_rss_limit_mb={mb}:max_allocation_size_mb={mb}")
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "worker.py"), engine, provider, str(threads), str(self.run_timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, preexec_fn=self._limit, env=env)
        ready = self._answer(120.0)
        if not isinstance(ready, dict) or not ready.get("ready"):
            raise RuntimeError(f"fuzz worker {self.name} did not start: {ready} {self._stderr()}")

    def _stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")[-2000:]

    def _answer(self, timeout):
        """The next message from the child, or {'status': crash | hang}."""
        out, deadline, buf, need = self.proc.stdout, time.monotonic() + timeout, b"", 8
        fd = out.fileno()
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                return {"status": "hang", "phase": "?", "msg": f"no answer within {timeout:g} s"}
            chunk = os.read(fd, max(need - len(buf), 1 << 16))
            if not chunk:
                code = self.proc.wait()
                why = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit code {code}"
                msg = f"{why}: {self._stderr()[-600:]}"
                self.proc = None
                return {"status": "crash", "phase": "?", "msg": msg}
            buf += chunk
            if need == 8 and len(buf) >= 8:
                need = 8 + struct.unpack("<Q", buf[:8])[0]
        return pickle.loads(buf[8:need])

    def kill(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def send(self, data):
        """Hand the child a pickled case (its answer is read by `answer`)."""
        if self.proc is None:
            if self.restarts > 200:
                raise RuntimeError(f"fuzz worker {self.name} keeps dying: {self._stderr()}")
            self.start()
            self.restarts += 1
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
            self.sent = time.monotonic()
        except BrokenPipeError:
            self.sent = None

    def answer(self):
        if self.sent is None:
            return self._answer(5.0)
        return self._answer(max(self.timeout - (time.monotonic() - self.sent), 1.0))

    def run(self, model, feeds):
        self.send(pickle.dumps({"model": model, "feeds": feeds}, protocol=pickle.HIGHEST_PROTOCOL))
        return self.answer()

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            self.kill()


def _float32(v):
    """Exotic floats (ml_dtypes' bfloat16 / float8 / float4) as float32 for comparison; other arrays as they are."""
    if v.dtype.kind not in "biufcOSUM" and v.dtype.names is None:
        try:
            return v.astype(np.float32)
        except (TypeError, ValueError):
            pass
    return v


def _close(a, b):
    """Whether two outputs agree (shapes, dtypes, values within float tolerance; NaN equals NaN)."""
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) and \
            all(_close(x, y) for x, y in zip(a, b))
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
        return type(a) is type(b) or a is None or b is None
    if a.shape != b.shape:
        return False
    a, b = (_float32(v) for v in (a, b))
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        try:
            return bool(np.array_equal(a, b)) or a.dtype != b.dtype
        except (TypeError, ValueError):
            return True
    a64, b64 = (v.astype(np.complex128 if "c" in (a.dtype.kind, b.dtype.kind) else np.float64) for v in (a, b))
    scale = np.nanmax(np.abs(np.where(np.isfinite(a64), a64, 0)), initial=1.0)
    with np.errstate(all="ignore"):
        return bool(np.all(np.isclose(a64, b64, rtol=1e-3, atol=1e-4 * scale, equal_nan=True)
                           | (np.isinf(a64) & np.isinf(b64))))


def verdict(out):
    """One word for an onnxide outcome: ok, error, internal (a wrapped Python exception), oom, timeout (the run
    timeout fired), raw, crash, hang."""
    s = out["status"]
    if s == "error" and TIMEOUT in out["msg"]:
        return "timeout"
    if s == "error":
        if OOM.search(out["msg"]) and "onnxide.memory_limit" not in out["msg"]:
            return "oom"
        return "internal" if INTERNAL.search(out["msg"]) else "error"
    return s


FAILING = ("raw", "crash", "hang")


class Tally:
    """Counts per engine and verdict, the comparisons, and the findings with the case ids that reproduce them."""

    def __init__(self):
        self.counts = collections.defaultdict(collections.Counter)
        self.pairs = collections.Counter()
        self.findings = collections.defaultdict(list)
        self.cases = 0

    def add(self, case_id, outcomes):
        self.cases += 1
        for name, out in outcomes.items():
            v = verdict(out) if name != "ort" else out["status"]
            self.counts[name][v] += 1
            if v in FAILING or v == "internal":
                self.findings[(name, v)].append((case_id, out.get("etype", ""), out.get("msg", "")[:300],
                                                 out.get("where", "")[-600:]))
        cpu = outcomes.get("cpu")
        for name in ("native", "wasm"):
            out = outcomes.get(name)
            if out is None or cpu is None or verdict(cpu) not in ("ok", "error", "internal") or \
                    verdict(out) not in ("ok", "error", "internal"):
                continue
            if (cpu["status"] == "ok") != (out["status"] == "ok"):
                self.findings[(name, "disagrees-with-cpu")].append((case_id, out.get("etype", ""),
                                                                    out.get("msg", cpu.get("msg", ""))[:300], ""))
            elif out["status"] == "ok" and not RANDOM.search(case_id) and not _close(cpu["outs"], out["outs"]):
                self.findings[(name, "differs-from-cpu")].append((case_id, "", "", ""))
        ort = outcomes.get("ort")
        if cpu is not None and ort is not None:
            key = {("ok", "ok"): "both run", ("ok", "error"): "only onnxide runs",
                   ("error", "ok"): "only onnxruntime runs", ("error", "error"): "both refuse"}.get(
                (cpu["status"], ort["status"]), "other")
            if key == "both run" and not RANDOM.search(case_id) and not _close(cpu["outs"], ort["outs"]):
                key = "both run, outputs differ"
            self.pairs[key] += 1
            if key != "both run" and key != "both refuse":
                self.findings[("ort", key)].append((case_id, ort.get("etype", cpu.get("etype", "")),
                                                    clip(ort.get("msg", cpu.get("msg", "")), 600), ""))

    def failing(self):
        """Findings that fail the campaign: crashes, hangs, raw or wrapped-internal exceptions, and EPs disagreeing
        with the CPU EP."""
        return {k: v for k, v in self.findings.items() if k[1] in FAILING + ("internal", "disagrees-with-cpu")}


def run_cases(cases, engines, tally=None, workers=None, progress=None, parallel=True, **worker_args):
    """Run `cases` (iterable of (case id, model bytes, feeds)) on every engine in `engines`, side by side (or one
    engine at a time: `parallel` False keeps one process busy); returns the Tally."""
    tally = tally or Tally()
    own = workers is None
    workers = workers or {n: Worker(n, **worker_args) for n in engines}
    try:
        for i, (case_id, model, feeds) in enumerate(cases):
            data = pickle.dumps({"model": model, "feeds": feeds}, protocol=pickle.HIGHEST_PROTOCOL)
            if parallel:  # the engines run the case side by side, each in its own process
                for w in workers.values():
                    w.send(data)
                tally.add(case_id, {n: w.answer() for n, w in workers.items()})
            else:
                tally.add(case_id, {n: (w.send(data), w.answer())[1] for n, w in workers.items()})
            if progress and (i + 1) % progress == 0:
                print(f"  {i + 1} cases", {n: dict(c) for n, c in tally.counts.items()}, flush=True)
    finally:
        if own:
            for w in workers.values():
                w.close()
    return tally
