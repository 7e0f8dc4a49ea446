"""Where an actor gets its model: a path, bytes, a ModelProto, or a Ray object ref (shipped once per node)."""
import os


def put_model(model):
    """An object ref to the model's bytes in Ray's object store (a path is read once, on the driver)."""
    import ray

    return ray.put(model_bytes(model))


def model_bytes(model):
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            return f.read()
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return bytes(model)


def resolve(model):
    """A path or bytes InferenceSession takes; an object ref (bare, or wrapped in a list so Ray leaves it as is)
    is fetched from the object store."""
    if isinstance(model, (list, tuple)) and len(model) == 1:
        model = model[0]
    if type(model).__name__ == "ObjectRef":
        import ray

        model = ray.get(model)
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return bytes(model)
