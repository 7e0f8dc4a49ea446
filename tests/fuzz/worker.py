"""A fuzz worker (child process): runs the cases its parent sends on stdin with one engine — onnxide on one EP, or
onnxruntime — and answers each with its outcome on stdout (length-prefixed pickles).

usage: python tests/fuzz/worker.py ENGINE PROVIDER THREADS RUN_TIMEOUT   (ENGINE: onnxide | onnxruntime)"""
import io
import os
import pickle
import struct
import sys
import threading
import traceback
import warnings

MAX_OUT = 1 << 22  # outputs larger than this (bytes, all together) come back as shapes and dtypes only


def _read(f):
    head = f.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(f.read(n))


def _write(f, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _size(v):
    import numpy as np

    if isinstance(v, np.ndarray):
        return v.nbytes if v.dtype != object else 16 * v.size
    if isinstance(v, (list, tuple)):
        return sum(_size(x) for x in v)
    return 64


def _summary(v):
    import numpy as np

    if isinstance(v, np.ndarray):
        return ("array", v.shape, str(v.dtype))
    if isinstance(v, (list, tuple)):
        return [_summary(x) for x in v]
    return type(v).__name__


class Engine:
    def __init__(self, kind, provider, threads, run_timeout):
        self.kind, self.provider, self.threads, self.run_timeout = kind, provider, int(threads), float(run_timeout)
        if kind == "onnxide":
            import onnxide as ort
            from onnxide.errors import OnnxideError
            self.clean = (OnnxideError,)
        else:
            import onnxruntime as ort
            ort.set_default_logger_severity(4)
            self.clean = (Exception,)  # onnxruntime's own failures (its Python layer's too) are its answer
        self.ort = ort

    def run(self, model, feeds):
        """{'status': ok | error | raw, 'phase': load | run, 'etype', 'msg', 'outs', 'where'}."""
        ort = self.ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.log_severity_level = 4
        if self.kind == "onnxide" and os.environ.get("ONNXIDE_FUZZ_MEMORY_LIMIT"):
            so.add_session_config_entry("onnxide.memory_limit_bytes", os.environ["ONNXIDE_FUZZ_MEMORY_LIMIT"])
        phase = "load"
        try:
            sess = ort.InferenceSession(model, so, providers=[self.provider])
            [(i.name, i.type, i.shape) for i in sess.get_inputs() + sess.get_outputs()]
            sess.get_modelmeta()
            phase = "run"
            ro = ort.RunOptions()
            timer = threading.Timer(self.run_timeout, lambda: setattr(ro, "terminate", True))
            timer.start()
            try:
                outs = sess.run(None, feeds, ro)
            finally:
                timer.cancel()
        except BaseException as e:  # noqa: BLE001 - every outcome is reported
            status = "error" if isinstance(e, self.clean) else "raw"
            where = "".join(traceback.format_exception(e)[-6:]) if status == "raw" else ""
            return {"status": status, "phase": phase, "etype": type(e).__name__, "msg": clip(str(e), 1200),
                    "where": where}
        size = _size(outs)
        return {"status": "ok", "phase": "run", "outs": outs if size <= MAX_OUT else _summary(outs)}


def clip(text, n):
    """`text`, or its first and last n / 2 characters where longer (a nested error's cause comes last)."""
    return text if len(text) <= n else f"{text[:n // 2]} ... {text[-n // 2:]}"


def main():
    kind, provider, threads, run_timeout = sys.argv[1:5]
    warnings.simplefilter("ignore")
    import numpy as np
    np.seterr(all="ignore")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = io.TextIOWrapper(open(os.devnull, "wb"))  # stray prints must not corrupt the protocol
    engine = Engine(kind, provider, threads, run_timeout)
    _write(stdout, {"ready": True})
    while True:
        case = _read(stdin)
        if case is None:
            return
        _write(stdout, engine.run(case["model"], case["feeds"]))


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    sys.path.insert(0, os.path.join(root, "py_engine"))
    main()
