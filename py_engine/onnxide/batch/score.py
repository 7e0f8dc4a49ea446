"""score(): read a dataset, score it with onnxide on a pool of Ray actors, write Parquet (or return the Dataset)."""
import os

from . import sizing
from .model_source import model_bytes, put_model
from .predictor import OnnxPredictor
from .sources import DATA_COLUMN, read

BATCHES_PER_BLOCK = 2  # rows per block fed to the actors: this many batches (Ray reads small files as one block,
# which a single actor would score)


def connect(address=None, **init_kwargs):
    """Joins the cluster at address ('auto': the one `ray start` runs here), or starts a local one if none is up."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, **init_kwargs)


def actor_cpus(cpus, actors, threads):
    """The CPUs each actor reserves from Ray: its threads, except when the actors would hold every CPU: Ray Data's
    file-listing task then needs one (it takes no num_cpus) and would wait behind them forever, so the actors
    reserve (cpus - 1) / cpus of their threads each. The threads running stay actors × threads <= cpus (plan)."""
    if cpus > 1 and actors * threads >= cpus:
        return threads * (cpus - 1) / cpus
    return threads


def score(source, model, output=None, *, inputs=None, dtypes=None, preprocess=None, outputs=None,
          output_columns=None, keep_columns=None, actors=None, threads=None, num_gpus=0, providers=None,
          batch_size="auto", memory_budget=sizing.DEFAULT_BUDGET, on_error="raise", error_column="error",
          input_format=None, image_size=None, ray_address=None):
    """Scores source (a Ray Dataset, or a path to Parquet / an image folder / .npy files) with model (a path or
    bytes, shipped once through the object store) and writes Parquet to output; without output, returns the
    scored Dataset (lazy). See OnnxPredictor for inputs / dtypes / preprocess / outputs / on_error."""
    import ray

    connect(ray_address)
    resources = ray.cluster_resources()
    if num_gpus:
        actors = actors or sizing.gpu_actors(resources.get("GPU", 0), num_gpus)
        threads = threads or 1
    else:
        actors, threads = sizing.plan(resources.get("CPU", 1), actors, threads)
    per_actor = actor_cpus(resources.get("CPU", 1), actors, threads) if not num_gpus else threads
    ds, kind = read(source, input_format, image_size)
    data = model_bytes(model)
    predictor_kwargs = dict(inputs=dict(inputs or {}), dtypes=dtypes, preprocess=preprocess, outputs=outputs,
                            output_columns=output_columns, keep_columns=keep_columns, providers=providers,
                            on_error=on_error, error_column=error_column)
    if kind in DATA_COLUMN and not inputs:
        local = OnnxPredictor(data, threads=1)
        if len(local.feeds) == 1:
            predictor_kwargs["inputs"] = {local.feeds[0][0]: DATA_COLUMN[kind]}
    if batch_size == "auto":
        sample = ds.take_batch(4, batch_format="numpy")
        row = OnnxPredictor(data, threads=1, **predictor_kwargs).row_bytes(sample)
        batch_size = sizing.batch_size(row, memory_budget)
    ref = put_model(data)  # held until the job ends: a restarted actor fetches the model from it again
    ds = ds.repartition(target_num_rows_per_block=batch_size * BATCHES_PER_BLOCK)  # streaming: blocks for all actors
    scored = ds.map_batches(
        OnnxPredictor, fn_constructor_args=([ref],),
        fn_constructor_kwargs=dict(predictor_kwargs, threads=threads, gpu=bool(num_gpus)),
        batch_size=batch_size, batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=per_actor, num_gpus=num_gpus or None)
    if output is None:
        return scored
    scored.write_parquet(os.fspath(output), ray_remote_args={"num_cpus": 0})
    return os.fspath(output)
