"""onnxide.batch without a cluster: actors × threads within the CPUs, batch size from memory, column feeding."""
import numpy as np
import pytest

from onnxide.batch import OnnxPredictor, plan
from onnxide.batch.sizing import MAX_BATCH, batch_size

from batch import data


def test_plan_fits_the_cpus():
    assert plan(8) == (8, 1)
    assert plan(8, threads=2) == (4, 2)
    assert plan(8, actors=3) == (3, 2)
    assert plan(2, actors=2, threads=1) == (2, 1)
    for bad in (dict(actors=3, threads=1), dict(actors=1, threads=3), dict(actors=2, threads=2)):
        with pytest.raises(ValueError, match="CPU"):
            plan(2, **bad)


def test_actors_leave_ray_a_cpu_for_listing_files():
    from onnxide.batch.score import actor_cpus

    assert actor_cpus(2, 2, 1) == 0.5  # 2 actors reserve 1 CPU in all: Ray's listing task gets the other
    assert actor_cpus(16, 4, 4) == 4 * 15 / 16
    assert actor_cpus(16, 3, 4) == 4  # a CPU is free anyway
    assert actor_cpus(1, 1, 1) == 1


def test_batch_size_from_row_bytes():
    assert batch_size(1) == MAX_BATCH
    assert batch_size(1 << 20, budget=64 << 20) == 8
    assert batch_size(1 << 30) == 1


def test_predictor_in_process_matches_the_session():
    model, x = data.mlp(), data.features(50)
    p = OnnxPredictor(model, inputs={"x": "features"})
    ragged = np.empty(50, dtype=object)
    ragged[:] = list(x)
    out = p({"id": np.arange(50), "features": ragged, "tensor": x})
    assert sorted(out) == ["id", "logits", "probs"]  # one-value-per-row columns pass through, tensors do not
    np.testing.assert_allclose(out["probs"], data.reference(model, x)["probs"], rtol=1e-6)
    with pytest.raises(ValueError, match="no model input"):
        OnnxPredictor(model, inputs={"y": "features"})


def test_rows_from_a_failing_hook_get_the_error():
    model, x = data.mlp(), data.features(4)

    def hook(batch):
        if 2 in batch["id"]:
            raise RuntimeError("cannot decode")
        return {"features": batch["features"]}

    out = OnnxPredictor(model, inputs={"x": "features"}, preprocess=hook, on_error="column")(
        {"id": np.arange(4), "features": x})
    assert [bool(e) for e in out["error"]] == [False, False, True, False]
    assert "cannot decode" in out["error"][2] and np.isnan(out["probs"][2]).all()
    np.testing.assert_allclose(out["probs"][[0, 1, 3]], data.reference(model, x[[0, 1, 3]])["probs"], rtol=1e-6)
