"""Puts py_engine/ and tests/ on sys.path so the suites run from a plain checkout too."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "py_engine"))
sys.path.insert(0, HERE)


def pytest_configure(config):
    """Native kernels split every loop the session's threads allow, however small (nx_set_parallel_work(0)): the
    tests' models are small, and at 2 threads their parallel paths are what those tests are there to check."""
    try:
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "native_eps"))
        from onnxide_native import lib
        library = lib.load()
    except Exception:  # (no native build here: its tests skip)
        return
    if library is not None and hasattr(library, "nx_set_parallel_work"):
        library.nx_set_parallel_work(0)
