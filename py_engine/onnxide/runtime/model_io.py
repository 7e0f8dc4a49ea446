"""A session's model I/O as onnxruntime's: config from the model, user initializers, external data out."""
import json
import os

from .. import dtypes as dt
from .. import proto as P
from ..errors import Fail, InvalidArgument
from ..tensors import from_numpy

OPT_EXTERNAL_FILE = "session.optimized_model_external_initializers_file_name"
OPT_EXTERNAL_MIN = "session.optimized_model_external_initializers_min_size_in_bytes"

_CONFIG_FIELDS = {"intra_op_num_threads": int, "inter_op_num_threads": int, "graph_optimization_level": int,
                  "execution_mode": int, "enable_profiling": bool, "enable_mem_pattern": bool,
                  "enable_cpu_mem_arena": bool, "log_severity_level": int, "log_verbosity_level": int,
                  "optimized_model_filepath": str, "profile_file_prefix": str, "use_deterministic_compute": bool}


def config_from_model(mp, so):
    """Apply the "ort_config" metadata entry's session_options (JSON) to the SessionOptions `so`."""
    from .enums import ExecutionMode, GraphOptimizationLevel
    text = next((e.value for e in mp.metadata_props if e.key == "ort_config"), None)
    if text is None:
        return
    try:
        options = json.loads(text).get("session_options", {})
    except (ValueError, AttributeError) as e:  # onnxruntime: a RuntimeError from the session's constructor
        raise RuntimeError(f"Could not finalize session options: Json stored in the `ort_config` key cannot be "
                           f"parsed: {e}") from None
    for key, value in options.items():
        if key not in _CONFIG_FIELDS:
            raise RuntimeError(f"Could not finalize session options: unknown session option '{key}' in the "
                               f"model's ort_config")
        value = _CONFIG_FIELDS[key](value)
        if key == "graph_optimization_level":
            value = GraphOptimizationLevel(value)
        elif key == "execution_mode":
            value = ExecutionMode(value)
        setattr(so, key, value)


def apply_user_initializers(mp, so):
    """Initializers given through `so` replace the model's (add_initializer / add_external_initializers), and
    external data files given in memory are read from there, before the model is built."""
    if not so._initializers and not so._external_files:
        return
    tensors = mp.graph.initializer
    for i, t in enumerate(tensors):
        if t.name in so._initializers:
            tensors[i] = from_numpy(so._initializers[t.name].numpy(), t.name)
        elif t.data_location == 1:
            info = {e.key: e.value for e in t.external_data}
            data = so._external_files.get(info.get("location"))
            if data is not None:
                offset = int(info.get("offset") or 0)
                length = int(info["length"]) if info.get("length") else len(data) - offset
                if offset + length > len(data):
                    raise InvalidArgument(f"External data of '{t.name}' lies outside the in-memory file "
                                          f"'{info.get('location')}'")
                t.raw_data, t.data_location, t.external_data = data[offset:offset + length], 0, []


def external_file_placer(model_path, file_name, min_size):
    """A placement policy writing initializers of at least `min_size` bytes to `file_name` (next to the model)."""
    folder = os.path.dirname(os.path.abspath(model_path))
    out = open(os.path.join(folder, file_name), "wb")

    def place(name, array, raw):
        if len(raw) < min_size:
            return None
        offset = out.tell()
        out.write(raw)
        return file_name, offset, len(raw)

    place.close = out.close
    return place


def save_model(model, path, place=None, write=None):
    """Serialize `model` to `path` (or hand the bytes to `write`). `place(name, array, raw_bytes)` may put an
    initializer's data elsewhere and return its (location, offset, length); None keeps it in the model."""
    from ..ir.to_proto import model_to_proto
    mp = model_to_proto(model)
    try:
        if place is not None:
            for t in mp.graph.initializer:
                if t.data_type == dt.STRING or not len(t.raw_data):
                    continue
                where = place(t.name, model.graph.initializers.get(t.name), bytes(t.raw_data))
                if where is not None:
                    location, offset, length = where
                    t.raw_data, t.data_location = b"", 1
                    t.external_data = [P.StringStringEntryProto(key="location", value=str(location)),
                                       P.StringStringEntryProto(key="offset", value=str(int(offset))),
                                       P.StringStringEntryProto(key="length", value=str(int(length)))]
    finally:
        if place is not None and hasattr(place, "close"):
            place.close()
    data = mp.SerializeToString()
    if write is not None:
        return write(data)
    with open(path, "wb") as f:
        f.write(data)
    return None


def save_optimized(model, path, so):
    """SessionOptions.optimized_model_filepath: the optimized model, large initializers in the external file the
    config entries name."""
    file_name = so._config.get(OPT_EXTERNAL_FILE)
    place = None
    if file_name:
        try:
            min_size = int(so._config.get(OPT_EXTERNAL_MIN, "1024"))
        except ValueError:
            raise Fail(f"{OPT_EXTERNAL_MIN} must be an integer") from None
        place = external_file_placer(path, file_name, min_size)
    save_model(model, path, place)
