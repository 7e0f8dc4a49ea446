"""Sizing: actors × intra-op threads within the cluster's CPUs, and a batch size from the memory a row takes."""
DEFAULT_BUDGET = 256 << 20  # bytes a batch's inputs, outputs and intermediates may take in one actor
HEADROOM = 8  # intermediates: a batch's working set taken as this many times its inputs + outputs
MAX_BATCH = 4096


def cluster_cpus():
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def plan(cpus, actors=None, threads=None):
    """(actors, threads per actor) with actors × threads <= cpus: one thread per actor unless told otherwise."""
    cpus = max(1, int(cpus))
    if actors and threads:
        if actors * threads > cpus:
            raise ValueError(f"{actors} actors × {threads} threads oversubscribe the cluster's {cpus} CPUs")
        return int(actors), int(threads)
    if actors:
        if actors > cpus:
            raise ValueError(f"{actors} actors need at least {actors} CPUs; the cluster has {cpus}")
        return int(actors), max(1, cpus // int(actors))
    threads = int(threads or 1)
    if threads > cpus:
        raise ValueError(f"{threads} threads per actor exceed the cluster's {cpus} CPUs")
    return max(1, cpus // threads), threads


def gpu_actors(gpus, per_actor):
    """Actors that fit the cluster's GPUs at per_actor GPUs each (at least one)."""
    return max(1, int(gpus // per_actor))


def batch_size(row_bytes, budget=DEFAULT_BUDGET):
    """Rows per batch so that HEADROOM × row_bytes × rows stays within budget (1 to MAX_BATCH)."""
    return max(1, min(MAX_BATCH, int(budget // max(1, HEADROOM * row_bytes))))
