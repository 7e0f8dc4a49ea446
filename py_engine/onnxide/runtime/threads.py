"""intra_op_num_threads natively: BLAS thread pools are set to the session's count for each run (threadpoolctl's
library handles, queried once), and put back afterwards; conv_winograd.blas_threads mirrors the count, since the
best 3×3 conv path depends on it."""
import contextlib

from ..ops import conv_winograd as _wino

_blas = None


def _blas_libraries():
    global _blas
    if _blas is None:
        try:
            from threadpoolctl import ThreadpoolController
            _blas = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
        except Exception:  # no threadpoolctl (Pyodide has no threads anyway)
            _blas = []
    return _blas


def blas_threads(n):
    """A reusable context manager running its body with n BLAS threads (no-op for n <= 0)."""
    if not n or n <= 0 or not _blas_libraries():
        return contextlib.nullcontext()
    return _Limit(_blas_libraries(), int(n))


class _Limit:
    def __init__(self, libs, n):
        self.libs, self.n, self.saved = libs, n, []

    def __enter__(self):
        self.saved, self.kernels_saw = [], _wino.blas_threads
        _wino.blas_threads = self.n
        for lib in self.libs:
            old = lib.get_num_threads()
            if old != self.n:
                lib.set_num_threads(self.n)
                self.saved.append((lib, old))
        return self

    def __exit__(self, *exc):
        for lib, old in self.saved:
            lib.set_num_threads(old)
        _wino.blas_threads = self.kernels_saw
        return False
