"""onnxide.batch on a local Ray cluster: bad rows (error column / failed job), image folders, .npy files, the CLI."""
import os
import subprocess
import sys

import numpy as np
import pytest

from batch import data, hooks


def _ragged_parquet(path, x, bad):
    """Rows id + features as a list<float> column, where the rows in `bad` are null or one value short."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = [None if i == bad[0] else list(r[:-1]) if i in bad else list(r) for i, r in enumerate(x)]
    os.makedirs(path)
    pq.write_table(pa.table({"id": np.arange(len(x)), "features": pa.array(values, pa.list_(pa.float32()))}),
                   os.path.join(path, "rows.parquet"))
    return path


def test_bad_rows_error_column_or_failed_job(ray_cluster, tmp_path):
    from onnxide.batch import score

    x, bad, model = data.features(300), [7, 150, 299], data.mlp()
    src = _ragged_parquet(str(tmp_path / "in"), x, bad)
    score(src, model, str(tmp_path / "out"), inputs={"x": "features"}, on_error="column", batch_size=64)
    out = data.read_scored(str(tmp_path / "out"))
    np.testing.assert_array_equal(out["id"], np.arange(len(x)))
    errors = out["error"].astype(str)
    assert [i for i, e in enumerate(errors) if e] == bad
    assert "null" in errors[7] and "does not fit" in errors[150]
    good = np.setdiff1d(np.arange(len(x)), bad)
    ref = data.reference(model, x[good])
    np.testing.assert_allclose(out["probs"][good], ref["probs"], rtol=1e-5, atol=1e-6)
    assert np.isnan(out["probs"][bad]).all()
    with pytest.raises(Exception, match="cannot be scored"):
        score(src, model, str(tmp_path / "fail"), inputs={"x": "features"}, batch_size=64)


def test_image_folder_and_npy_files(ray_cluster, tmp_path):
    from PIL import Image

    import onnxide
    from onnxide.batch import score

    pixels = np.random.default_rng(3).integers(0, 256, (6, 8, 8, 3), dtype=np.uint8)
    os.makedirs(tmp_path / "img")
    for i, p in enumerate(pixels):
        Image.fromarray(p).save(tmp_path / "img" / f"{i}.png")
    model = data.mean_rgb()
    score(str(tmp_path / "img"), model, str(tmp_path / "img_out"), preprocess=hooks.image_to_input,
          inputs={"input": "input"}, batch_size=4)
    out = data.read_scored(str(tmp_path / "img_out"), key="path")
    sess = onnxide.InferenceSession(model)
    for path, mean in zip(out["path"], out["mean"]):
        img = np.asarray(Image.open(path).convert("RGB"))[None]
        want = sess.run(None, {"input": img.transpose(0, 3, 1, 2).astype(np.float32) / 255.0})[0][0]
        np.testing.assert_allclose(mean, want, rtol=1e-6)
    assert len(out["path"]) == len(pixels)

    x, mlp = data.features(5), data.mlp()
    os.makedirs(tmp_path / "npy")
    for i, row in enumerate(x):
        np.save(tmp_path / "npy" / f"{i}.npy", row[None])
    score(str(tmp_path / "npy"), mlp, str(tmp_path / "npy_out"))  # a one-input model reads the 'data' column
    out = data.read_scored(str(tmp_path / "npy_out"), key="path")
    ref = data.reference(mlp, x)
    order = [int(os.path.basename(p)[:-4]) for p in out["path"]]
    np.testing.assert_allclose(out["logits"], ref["logits"][order], rtol=1e-5, atol=1e-6)


def test_cli_joins_a_running_cluster(ray_cluster, tmp_path):
    x, model = data.features(200), data.mlp()
    src = data.write_parquet(str(tmp_path / "in"), x, files=2)
    (tmp_path / "m.onnx").write_bytes(model)
    address = ray_cluster.get_runtime_context().gcs_address
    proc = subprocess.run([sys.executable, "-m", "onnxide", "score", str(tmp_path / "m.onnx"), src,
                           str(tmp_path / "out"), "--ray-address", address, "--input-column", "x=features",
                           "--batch-size", "64"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = data.read_scored(str(tmp_path / "out"))
    np.testing.assert_array_equal(out["id"], np.arange(len(x)))
    np.testing.assert_allclose(out["probs"], data.reference(model, x)["probs"], rtol=1e-5, atol=1e-6)
