"""intra_op_num_threads natively: the BLAS thread pool is limited for the duration of each run (threadpoolctl)."""
import contextlib

_controller = None


def blas_threads(n):
    """A reusable context manager limiting BLAS threads to n (no-op for n <= 0 or without threadpoolctl)."""
    global _controller
    if not n or n <= 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # Pyodide has no threads anyway
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    return _Limit(_controller, int(n))


class _Limit:
    def __init__(self, controller, n):
        self.controller, self.n, self._active = controller, n, None

    def __enter__(self):
        self._active = self.controller.limit(limits=self.n, user_api="blas")
        return self

    def __exit__(self, *exc):
        self._active.restore_original_limits()
        self._active = None
        return False
