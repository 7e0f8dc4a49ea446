"""onnxide.batch on a local Ray cluster: Parquet scored by actors equals a plain single-process loop, row for row,
also when an actor is killed mid-job. ONNXIDE_RAY_ROWS sets the rows (default 5,000; the done-when run: 100,000)."""
import os

import numpy as np
import pytest

from batch import data, hooks

ROWS = int(os.environ.get("ONNXIDE_RAY_ROWS", "5000"))


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    x = data.features(ROWS)
    return data.write_parquet(str(tmp_path_factory.mktemp("rows") / "in"), x), x, data.mlp()


def _check(out, x, model, label):
    ref = data.reference(model, x)
    diff = {n: float(np.abs(out[n] - ref[n]).max()) for n in ("logits", "probs")}
    print(f"{label}: {len(out['id'])} rows out of {len(x)}, {len(np.unique(out['id']))} distinct ids, "
          f"max |Ray - single process| {diff}")
    assert len(out["id"]) == len(x), "rows lost or duplicated"
    np.testing.assert_array_equal(out["id"], np.arange(len(x)))  # every id exactly once
    for name in ("logits", "probs"):
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out["probs"].argmax(1), ref["probs"].argmax(1))


def test_parquet_equals_single_process(ray_cluster, parquet, tmp_path):
    from onnxide.batch import score

    path, x, model = parquet
    score(path, model, str(tmp_path / "out"), inputs={"x": "features"}, actors=2, threads=1)
    _check(data.read_scored(str(tmp_path / "out")), x, model, "2 actors")


def test_killed_actor_loses_no_rows(ray_cluster, parquet, tmp_path):
    from onnxide.batch import score

    path, x, model = parquet
    marker = str(tmp_path / "killed")
    score(path, model, str(tmp_path / "out"), inputs={"x": "features"}, actors=2, batch_size=500,
          preprocess=hooks.KillOnce(marker, at=len(x) // 2))
    assert os.path.exists(marker), "the actor was not killed"
    _check(data.read_scored(str(tmp_path / "out")), x, model, "actor killed at row %d" % (len(x) // 2))
