"""The static lifetime plan (plan/lifetimes.py): device slots alive at the same time never share bytes, and
slots that are not alive together reuse them."""
import itertools

import numpy as np
import pytest

import onnxide as ort
from device.mock_device import MOCK, install
from onnxide.plan.lifetimes import arena_offsets, arena_plan, slot_lifetimes


def _check_disjoint(lifetimes, sizes, offsets):
    for a, b in itertools.combinations(sizes, 2):
        (fa, la), (fb, lb) = lifetimes[a], lifetimes[b]
        if la < fb or lb < fa:
            continue  # never alive together
        assert offsets[a] + sizes[a] <= offsets[b] or offsets[b] + sizes[b] <= offsets[a], (a, b)


def test_random_intervals_never_overlap_and_reuse_memory():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        starts = rng.integers(-1, 30, n)
        lifetimes = {f"v{i}": (int(s), int(s + rng.integers(0, 8))) for i, s in enumerate(starts)}
        sizes = {k: int(rng.integers(1, 5000)) for k in lifetimes}
        offsets, total = arena_offsets(lifetimes, sizes, alignment=64)
        _check_disjoint(lifetimes, sizes, offsets)
        assert all(o % 64 == 0 for o in offsets.values())
        assert total <= sum(-(-s // 64) * 64 for s in sizes.values())


def test_a_real_model_gets_a_compact_arena():
    from models import export
    why = export.available("resnet18_dynamo")
    if why:
        pytest.skip(why)
    install()
    path, feeds, _, _ = export.load("resnet18_dynamo")
    so = ort.SessionOptions()
    so.add_free_dimension_override_by_name("batch", feeds[next(iter(feeds))].shape[0])  # static shapes throughout
    sess = ort.InferenceSession(path, so, providers=[MOCK])
    plan = sess._executor.main_plan
    offsets, total, dynamic = arena_plan(plan)
    lifetimes = slot_lifetimes(plan)
    from onnxide.plan.lifetimes import static_nbytes
    sizes = {k: static_nbytes(plan, k) for k in offsets}
    _check_disjoint(lifetimes, sizes, offsets)
    assert len(offsets) > 20 and not dynamic
    assert total < sum(sizes.values()) / 2  # layers reuse buffers (8.0 MB for 22.7 MB of activations here)
