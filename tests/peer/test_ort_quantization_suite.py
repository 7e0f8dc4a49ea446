"""onnxruntime's quantization tool tests (shared, copied, never edited) on onnxide: the recorded passes must hold."""
import collections
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITE = os.path.join(os.path.dirname(ROOT), "shared", "peer", "onnxruntime-quantization-tests")
RECORDED = os.path.join(HERE, "ort_quantization_suite_passing.txt")
DOC = os.path.join(ROOT, "docs", "compatibility.md")
TIMEOUT_S = 600


def recorded():
    with open(RECORDED) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def run_suite(folder, files):
    """Test ids that passed with every subtest, of one pytest process over `files` in `folder` (`import onnxruntime`
    is onnxide), and its output."""
    path = [os.path.join(HERE, "alias"), os.path.join(ROOT, "py_engine"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                            "--continue-on-collection-errors", *files],
                           cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"onnxruntime's quantization suite ran past {TIMEOUT_S} s:\n{(e.stdout or '')[-3000:]}")
    out = r.stdout + r.stderr
    # pytest 9 reports a test PASSED even when some of its subtests failed: such a test does not count
    subfailed = set(re.findall(r"^SUBFAILED.*?\s(test_\w+\.py::\S+)", out, re.M))
    return set(re.findall(r"^PASSED (\S+)", out, re.M)) - subfailed, out


@pytest.mark.skipif(not os.path.isdir(SUITE), reason=f"onnxruntime's quantization tests are not at {SUITE}")
def test_onnxruntime_quantization_suite_keeps_passing(tmp_path):
    """Every recorded test id of the files run must pass (the set may grow, never shrink)."""
    folder = tmp_path / "onnxruntime-quantization-tests"
    shutil.copytree(SUITE, folder)
    files = sorted(f for f in os.listdir(folder) if f.startswith("test_") and f.endswith(".py"))
    passed, out = run_suite(folder, files)
    lost = sorted(recorded() - passed)
    assert not lost, f"{len(lost)} onnxruntime quantization tests no longer pass on onnxide:\n" + "\n".join(lost) + \
        "\n" + out[-4000:]
    gained = sorted(passed - recorded())
    if gained:
        print(f"{len(gained)} more tests pass than recorded (add them to {RECORDED}):", *gained, sep="\n  ")


def test_quantization_doc_counts_match_the_record():
    per_file = collections.Counter(t.split("::", 1)[0] for t in recorded())
    with open(DOC) as f:
        rows = re.findall(r"^\| `(test_\w*\.py)` \| (\d+) \| (\d+) \|", f.read(), re.M)
    documented = {name: int(ours) for name, _ort, ours in rows}
    assert set(per_file) <= set(documented), "docs/compatibility.md lacks a row for a file with recorded passes"
    assert documented == {name: per_file.get(name, 0) for name in documented}, \
        "docs/compatibility.md's onnxide column differs from the recorded set"
