"""enable_profiling: onnxruntime's chrome-trace file (session and node events, one event a line)."""
import json
import os
import time


def _type_shape(v):
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return {str(v.dtype): list(v.shape)}
    if isinstance(v, list):
        return {"sequence": len(v)}
    return {type(v).__name__: []}


class Profiler:
    """Collects events while profiling is on; `end()` writes `<prefix>_<timestamp>.json` and returns its path."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.start_ns = time.perf_counter_ns()
        self.wall_start_ns = time.time_ns()
        self.events = []

    def now_us(self):
        return (time.perf_counter_ns() - self.start_ns) / 1e3

    def add(self, name, cat, start_us, args):
        self.events.append({"cat": cat, "pid": os.getpid(), "tid": 0, "dur": round(self.now_us() - start_us, 3),
                            "ts": round(start_us, 3), "ph": "X", "name": name, "args": args})

    def node(self, step, start_us, inputs, outputs):
        n = step.node
        self.add(f"{n.name or n.op_type}_kernel_time", "Node", start_us, {
            "op_name": n.op_type, "provider": step.ep.name if step.ep is not None else "",
            "input_type_shape": [_type_shape(v) for v in inputs],
            "output_type_shape": [_type_shape(v) for v in outputs]})

    def end(self):
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(self.wall_start_ns / 1e9))
        path = f"{self.prefix}_{stamp}.json"
        with open(path, "w") as f:
            f.write("[\n" + ",\n".join(json.dumps(e) for e in self.events) + "\n]\n")
        self.events = []
        return path
