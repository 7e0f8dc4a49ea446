"""The CPU memory "arena" (SessionOptions.enable_cpu_mem_arena): glibc's malloc told to keep freed blocks for reuse
instead of returning them to the system, so a run's multi-MB activations do not page-fault in afresh every run."""
import ctypes
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_MMAP_THRESHOLD = 32 << 20  # glibc's upper limit on 64-bit: blocks up to 32 MB come from the heap
_TRIM_THRESHOLD = 1 << 30   # free heap top kept up to 1 GB
_applied = None


def keep_freed_memory():
    """Apply the policy to this process once (glibc on Linux; elsewhere nothing happens). Returns whether it is
    in effect. Like onnxruntime's arena, memory a run used stays with the process for the next run."""
    global _applied
    if _applied is None:
        _applied = False
        if sys.platform.startswith("linux"):
            try:
                mallopt = ctypes.CDLL("libc.so.6").mallopt
            except (OSError, AttributeError):
                return False
            # both set explicitly: setting one turns off glibc's adjustment of the other, and either alone is worse
            # (large blocks mmapped and unmapped per call, or the heap top trimmed after every run)
            _applied = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(
                mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    return _applied
