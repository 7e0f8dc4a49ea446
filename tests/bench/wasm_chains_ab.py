"""Same-process A/B of the WASM EP's chains (eps/wasm_chain.py) natively through wasmtime: sessions with chains on and
off ({"chains": "0"}) on the MLP, the default CNN and silero VAD of run_bench.py's list, alternating blocks of runs;
prints each arm's median per-run time and the chain steps of the plan that ran.

usage: python tests/bench/wasm_chains_ab.py [--blocks 15] [--runs 20]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(HERE)), "py_engine"), os.path.dirname(HERE), HERE]

import onnxide  # noqa: E402
from onnxide.bench import make_feeds  # noqa: E402
from run_bench import standard_models  # noqa: E402

WANTED = ("MLP", "default CNN", "silero VAD")


def _session(model, chains):
    so = onnxide.SessionOptions()
    so.intra_op_num_threads = 1
    return onnxide.InferenceSession(model, so, providers=[("WasmExecutionProvider", {"chains": chains}),
                                                          "CPUExecutionProvider"])


def _chain_steps(sess):
    """Nodes per WasmChain step in the session's plans, If / Loop bodies included."""
    plans = [sess._executor.main_plan] + [e.main_plan for e in (sess._specialized._executors.values()
                                                                 if sess._specialized else ()) if e is not None]
    found = []
    while plans:
        for s in plans.pop().steps:
            if s.node.op_type == "WasmChain":
                found.append(len(s.kernel.steps))
            plans.extend((s.bodies or {}).values())
    return found


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    for name, model, feeds, dims in standard_models():
        if not name.startswith(WANTED):
            continue
        arms = {"chains on": _session(model, "1"), "chains off": _session(model, "0")}
        feeds = feeds or make_feeds(arms["chains on"], dims=dims)
        for sess in arms.values():
            for _ in range(5):  # (warm: the sessions specialize to the shapes seen twice)
                sess.run(None, feeds)
        times = {k: [] for k in arms}
        for _ in range(args.blocks):
            for arm, sess in arms.items():
                t = time.perf_counter()
                for _ in range(args.runs):
                    sess.run(None, feeds)
                times[arm].append((time.perf_counter() - t) / args.runs * 1e3)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name}: chains on {med['chains on']:.3f} ms, off {med['chains off']:.3f} ms "
              f"({med['chains off'] / med['chains on']:.2f}x); chained nodes per chain step "
              f"{_chain_steps(arms['chains on'])}", flush=True)


if __name__ == "__main__":
    main()
