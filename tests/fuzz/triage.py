"""Triage of a campaign's "only onnxide runs" cases (issue 19's done-when: onnxide gives no output for a model
onnxruntime's checker or the spec rejects): each case bucketed by the reason onnxruntime gave, its known gaps apart
(tensor types its Python API cannot hand over, ops or types it has no kernel for, ...), the rest listed with what
onnx's checker (full_check) says of the model, for a person to read.

usage: python tests/fuzz/triage.py CAMPAIGN.json [...] [--checker] [--rerun] [--shown N]
"""
import argparse
import collections
import json
import os
import re
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "py_engine"))

# onnxruntime's reasons that are its own gaps, not the model's faults: (label, pattern over its message)
GAPS = (
    ("tensor types onnxruntime's Python API cannot hand over",
     r"can't be converted to MLDataType|No corresponding Numpy type|Unable to handle object of type"),
    ("ops or types without an onnxruntime CPU kernel", r"NOT_IMPLEMENTED|MLDataType for: tensor\(complex|"
                                                       r"Non per-tensor quantization is not supported"),
    ("ops onnxruntime does not register", r"is not a registered function/op"),
    ("recurrent layout 1 (onnxruntime's CPU kernels lack it)", r"Batchwise recurrent operations"),
    ("StringNormalizer locales onnxruntime cannot build", r"Failed to construct locale"),
)
ONLY_OURS = "ort only onnxide runs"


def gap_of(message):
    """The label of the onnxruntime gap `message` shows, or None."""
    return next((label for label, pattern in GAPS if re.search(pattern, message)), None)


def checker_verdict(case_id):
    """'ok' or onnx.checker's error (class and first line) on the case's model (full_check)."""
    import onnx
    from fuzz import campaign

    data, _ = campaign.case_by_id(case_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
        return "ok"
    except Exception as e:  # (whatever the checker or the protobuf parser raises is its verdict)
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}" if str(e).strip() else type(e).__name__


def run_here(engine, case_id):
    """The exception `engine` (the onnxide or onnxruntime module) raises on the case in this process (the tree as it
    is now: the campaign may have run an older one), or None where it runs it."""
    from fuzz import campaign

    data, feeds = campaign.case_by_id(case_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception as e:  # (the verdict, whatever it is)
        return e
    return None


def rerun(case_id):
    """'runs', or the class and message of the onnxide CPU EP's error on the case."""
    import onnxide

    e = run_here(onnxide, case_id)
    return "runs" if e is None else f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"


def ort_message(case_id):
    """onnxruntime's whole error message on the case ('' where it runs it)."""
    import onnxruntime

    e = run_here(onnxruntime, case_id)
    return "" if e is None else str(e)


def triage(findings, checker=False, again=False):
    """(Counter of gap labels, [(case id, onnxruntime's class, message, checker verdict or None, onnxide now or
    None)] for the rest). `again`: each case is run again here (onnxide now, onnxruntime's whole message)."""
    gaps, rest = collections.Counter(), []
    for case_id, etype, message, _ in findings:
        label = gap_of(message) or (gap_of(ort_message(case_id)) if again else None)
        if label:
            gaps[label] += 1
        else:
            rest.append((case_id, etype, message, checker_verdict(case_id) if checker else None,
                         rerun(case_id) if again else None))
    return gaps, rest


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--checker", action="store_true", help="run onnx's checker on each case that is no known gap")
    ap.add_argument("--rerun", action="store_true", help="run each such case on onnxide's CPU EP as it is now")
    ap.add_argument("--shown", type=int, default=1000)
    args = ap.parse_args(argv)
    findings = []
    for path in args.json:
        with open(path) as f:
            findings += json.load(f)["findings"].get(ONLY_OURS, [])
    gaps, rest = triage(findings, args.checker, args.rerun)
    print(f"only onnxide runs: {len(findings)}")
    for label, n in gaps.most_common():
        print(f"  {n:6d}  {label}")
    print(f"  {len(rest):6d}  other reasons:")
    for case_id, etype, message, verdict, now in rest[:args.shown]:
        print(f"    {case_id}  onnxruntime {etype}: {' '.join(message.split())[:220]}")
        if verdict is not None:
            print(f"      checker: {verdict}")
        if now is not None:
            print(f"      onnxide now: {now}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
