"""onnxruntime's own Python tests (shared, copied, never edited) on onnxide: the recorded passes must hold."""
import collections
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITE = os.path.join(os.path.dirname(ROOT), "shared", "peer", "onnxruntime-python-tests")
RECORDED = os.path.join(HERE, "ort_python_suite_passing.txt")
DOC = os.path.join(ROOT, "docs", "compatibility.md")
ALONE = {"onnxruntime_test_python_global_threadpool.py"}  # creates process-wide thread pools: a process of its own
TIMEOUT_S = 300


def recorded():
    with open(RECORDED) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def _pytest(folder, files):
    """PASSED test ids of one pytest process over `files` (run in `folder`), and its output."""
    path = [os.path.join(HERE, "alias"), os.path.join(ROOT, "py_engine"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    env.pop("ORT_LOAD_CONFIG_FROM_MODEL", None)
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *files],
                           cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"onnxruntime's suite ({', '.join(files)}) ran past {TIMEOUT_S} s:\n{(e.stdout or '')[-3000:]}")
    out = r.stdout + r.stderr
    return set(re.findall(r"^PASSED (\S+)", out, re.M)), out


@pytest.mark.skipif(not os.path.isdir(SUITE), reason=f"onnxruntime's Python tests are not at {SUITE}")
def test_onnxruntime_python_suite_keeps_passing(tmp_path):
    """`import onnxruntime` resolves to onnxide through tests/peer/alias; every test id recorded in
    ort_python_suite_passing.txt must pass (the set may grow, never shrink)."""
    folder = tmp_path / "onnxruntime-python-tests"
    shutil.copytree(SUITE, folder)
    files = sorted(f for f in os.listdir(folder) if f.startswith("onnxruntime_test") and f.endswith(".py"))
    groups = [[f for f in files if f not in ALONE]] + [[f] for f in files if f in ALONE]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda g: _pytest(folder, g), groups))
    passed = set().union(*(ids for ids, _ in results))
    lost = sorted(recorded() - passed)
    tails = "\n".join(out[-4000:] for _, out in results)
    assert not lost, f"{len(lost)} onnxruntime tests no longer pass on onnxide:\n" + "\n".join(lost) + "\n" + tails
    gained = sorted(passed - recorded())
    if gained:
        print(f"{len(gained)} more onnxruntime tests pass than recorded (add them to {RECORDED}):", *gained,
              sep="\n  ")


def test_compatibility_doc_counts_match_the_record():
    per_file = collections.Counter(t.split("::", 1)[0] for t in recorded())
    with open(DOC) as f:
        rows = re.findall(r"^\| `(onnxruntime_test\w*\.py)` \| (\d+) \| (\d+) \| (\d+) \|", f.read(), re.M)
    documented = {name: int(after) for name, _ort, _before, after in rows}
    assert set(per_file) <= set(documented), "docs/compatibility.md lacks a row for a file with recorded passes"
    assert documented == {name: per_file.get(name, 0) for name in documented}, \
        "docs/compatibility.md's onnxide column differs from the recorded set"
