"""The session memory limit: kernels that size a tensor from values (shapes, repeats, pads, scales, trip counts)
check it before allocating (`check`), against the limit of the session running now (`use`, set per run and for
constant folding, like runtime/threads.py's thread count; a context variable, so threads and tasks keep theirs)."""
import contextvars
import math
import os
import sys

from ..errors import RuntimeException

CONFIG_KEY = "onnxide.memory_limit_bytes"  # a session config entry; "0" turns the limit off
FRACTION = 0.5  # of physical memory (or of a lower cgroup / rlimit cap) one tensor may take by default
WASM_HEAP = 2 << 30  # Pyodide: numpy's buffers live in the wasm32 heap (4 GiB at most; one array < 2 GiB)

_limit = contextvars.ContextVar("onnxide_memory_limit", default=None)
_default = None


def _caps():
    """Byte caps on this process: physical memory, a cgroup limit, RLIMIT_AS / RLIMIT_DATA."""
    caps = []
    try:
        caps.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
            if text.isdigit():
                caps.append(int(text))
        except OSError:
            pass
    try:
        import resource
        for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            soft = resource.getrlimit(which)[0]
            if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
                caps.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    return caps


def default_limit():
    """Bytes one tensor may take when the session does not say: a fraction of this process's memory."""
    global _default
    if _default is None:
        if sys.platform == "emscripten":
            _default = WASM_HEAP
        else:
            caps = _caps()
            _default = int(FRACTION * min(caps)) if caps else 1 << 40
    return _default


def session_limit(sess_options):
    """The limit a session's options give (config entry CONFIG_KEY, bytes; 0: none), else the default."""
    value = getattr(sess_options, "_config", {}).get(CONFIG_KEY)
    if value is None:
        return default_limit()
    try:
        n = int(float(value))
    except ValueError:
        from ..errors import InvalidArgument
        raise InvalidArgument(f"Session config entry {CONFIG_KEY} must be a number of bytes, got '{value}'") from None
    return n if n > 0 else None


class use:  # noqa: N801 - used as `with limits.use(n):`
    """Context manager: the running code's memory limit is `limit` bytes (None: no limit)."""

    __slots__ = ("limit", "token")

    def __init__(self, limit):
        self.limit = limit

    def __enter__(self):
        self.token = _limit.set(self.limit if self.limit is not None else 0)
        return self

    def __exit__(self, *exc):
        _limit.reset(self.token)
        return False


def current():
    """Bytes one tensor may take now (None: unlimited)."""
    limit = _limit.get()
    if limit is None:
        return default_limit()
    return limit or None


def check(nbytes, what, *args):
    """Raise onnxruntime's RuntimeException when `nbytes` (a Python int, never overflowing) exceeds the limit;
    `what` (formatted with `args` only then) names the tensor, e.g. "Tile output (100000, 100000) float32"."""
    limit = _limit.get()
    if limit is None:
        limit = default_limit()
    if limit and nbytes > limit:
        raise RuntimeException(f"Failed to allocate memory for requested buffer of size {nbytes} "
                               f"({what.format(*args)}): above the session's memory limit of {limit} bytes (session "
                               f"config entry '{CONFIG_KEY}')")


def check_shape(shape, dtype, what):
    """check() for an array of `shape` (ints, maybe huge) and numpy `dtype`; negative dims count as zero."""
    n = math.prod(max(int(d), 0) for d in shape) * getattr(dtype, "itemsize", 8)
    check(n, "{} {} {}", what, tuple(int(d) for d in shape), getattr(dtype, "name", dtype))
