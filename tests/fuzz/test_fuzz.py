"""CI sample of the fuzzing campaign (tests/fuzz/campaign.py runs the full one): fixed-seed mutated models and the
whole attribute sweep through every onnxide EP available here, each in a memory-capped child process (the native EP
on its debug kernels under AddressSanitizer where gcc can build them). Any crash, hang, raw Python exception or
onnxide error wrapping one ("internal") fails, as does an EP that runs a model the CPU EP refuses or refuses one it
runs.

ONNXIDE_FUZZ_CASES=100000 (an environment variable) runs that many mutants instead of the CI sample."""
import os

import pytest

from fuzz import campaign, corpus, harness

CASES = int(os.environ.get("ONNXIDE_FUZZ_CASES", "2500"))
SEED = 20261203


@pytest.fixture(scope="module")
def engines():
    names = [n for n in harness.available_engines() if n != "ort"]
    assert "cpu" in names
    return names


def _check(tally):
    print(campaign.report(tally, shown=5))
    failing = tally.failing()
    assert not failing, campaign.report(tally, shown=5)


def test_mutated_models(engines):
    tally = harness.run_cases(campaign.mutated_cases(corpus.seeds(), SEED, 0, CASES), engines, mem_bytes=2 << 30,
                              native_dir=harness.debug_native(build=True))
    assert tally.cases == CASES
    assert sum(tally.counts["cpu"].values()) == CASES
    assert tally.counts["cpu"]["ok"] > CASES // 10  # the mutants still run often enough to reach the kernels
    _check(tally)


def test_attribute_sweep(engines):
    tally = harness.run_cases(campaign.sweep_cases(), engines, mem_bytes=2 << 30,
                              native_dir=harness.debug_native(build=True))
    assert tally.cases > 3000
    _check(tally)
