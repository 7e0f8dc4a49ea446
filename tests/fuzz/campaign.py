"""The fuzzing campaign: mutated models (and the attribute sweep) through every EP and onnxruntime, each engine in a
child process with a memory cap and timeouts; prints the tally and the findings, and can write them as JSON.

usage: python tests/fuzz/campaign.py [--cases N] [--seed S] [--start I] [--sweep] [--engines cpu,native,wasm,ort]
                                     [--json PATH] [--progress K] [--mem-gib G]
       python tests/fuzz/campaign.py --repro CASE_ID [--out DIR]   (CASE_ID as printed: mut:S:I:... or sweep:I:...)
"""
import argparse
import json
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "py_engine"))

from fuzz import corpus, harness, mutate, sweep  # noqa: E402


def mutated_cases(seeds, base_seed, start, count):
    for i in range(start, start + count):
        name, how, data, feeds = mutate.mutant(seeds, base_seed, i)
        yield f"mut:{base_seed}:{i}:{name}:{how}", data, feeds


def sweep_cases(start=0, count=None):
    for i, (label, data, feeds) in enumerate(sweep.cases()):
        if i >= start and (count is None or i < start + count):
            yield f"sweep:{i}:{label}", data, feeds


def case_by_id(case_id):
    """(model bytes, feeds) of a case id the campaign printed."""
    kind, a, b = case_id.split(":")[:3]
    if kind == "mut":
        _, _, data, feeds = mutate.mutant(corpus.seeds(), int(a), int(b))
        return data, feeds
    for i, (_, data, feeds) in enumerate(sweep.cases()):
        if i == int(a):
            return data, feeds
    raise KeyError(case_id)


def report(tally, shown=8):
    lines = [f"{tally.cases} cases"]
    for name, counts in tally.counts.items():
        lines.append(f"  {name:7s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if tally.pairs:
        lines.append("  onnxide (CPU EP) vs onnxruntime: " + ", ".join(f"{k} {v}" for k, v in
                                                                       sorted(tally.pairs.items())))
    for (name, what), found in sorted(tally.findings.items()):
        lines.append(f"== {name} {what}: {len(found)}")
        for case_id, etype, msg, where in found[:shown]:
            lines.append(f"   {case_id} {etype} {msg[:240]}".replace("\n", " "))
            if where:
                lines.append("      " + where[-400:].replace("\n", " | "))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--sweep", action="store_true", help="run the attribute sweep (instead of mutants)")
    ap.add_argument("--engines", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--progress", type=int, default=0)
    ap.add_argument("--mem-gib", type=float, default=3.0)
    ap.add_argument("--shown", type=int, default=8)
    ap.add_argument("--serial", action="store_true", help="one engine at a time (one busy process)")
    ap.add_argument("--repro", default=None)
    ap.add_argument("--out", default="/tmp/onnxide-fuzz-repro")
    args = ap.parse_args()
    if args.repro:
        data, feeds = case_by_id(args.repro)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "model.onnx"), "wb") as f:
            f.write(data)
        with open(os.path.join(args.out, "feeds.pkl"), "wb") as f:
            pickle.dump(feeds, f)
        print(f"wrote {args.out}/model.onnx and feeds.pkl")
        engines = args.engines.split(",") if args.engines else harness.available_engines()
        tally = harness.run_cases([(args.repro, data, feeds)], engines, mem_bytes=int(args.mem_gib * (1 << 30)),
                                  native_dir=harness.debug_native())
        for name, counts in tally.counts.items():
            print(name, dict(counts))
        print(report(tally))
        return 0
    engines = args.engines.split(",") if args.engines else harness.available_engines()
    cases = sweep_cases(args.start, args.cases if args.cases else None) if args.sweep else \
        mutated_cases(corpus.seeds(), args.seed, args.start, args.cases)
    native_dir = harness.debug_native(build=True)
    tally = harness.run_cases(cases, engines, progress=args.progress, mem_bytes=int(args.mem_gib * (1 << 30)),
                              native_dir=native_dir, parallel=not args.serial)
    print(report(tally, args.shown))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": tally.cases, "counts": {k: dict(v) for k, v in tally.counts.items()},
                       "pairs": dict(tally.pairs),
                       "findings": {f"{k[0]} {k[1]}": v for k, v in tally.findings.items()}}, f, indent=1)
    return 1 if tally.failing() else 0


if __name__ == "__main__":
    sys.exit(main())
