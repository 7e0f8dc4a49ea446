"""onnxruntime's compile API (ModelCompiler): the session-prepared model written out (no EP compiles)."""
import os

from ..errors import Fail
from .enums import GraphOptimizationLevel, OrtCompileApiFlags
from .model_io import save_model


class OrtExternalInitializerInfo:
    """Where an initializer's data lies: file, byte offset, byte size."""

    def __init__(self, filepath, file_offset, byte_size):
        self.filepath, self.file_offset, self.byte_size = str(filepath), int(file_offset), int(byte_size)

    def __repr__(self):
        return f"OrtExternalInitializerInfo({self.filepath!r}, {self.file_offset}, {self.byte_size})"


def _source_external_info(model_path_or_bytes):
    """{initializer name: OrtExternalInitializerInfo} for the input model's externally stored initializers."""
    if not isinstance(model_path_or_bytes, (str, os.PathLike)):
        return {}
    from .. import proto as P
    with open(model_path_or_bytes, "rb") as f:
        mp = P.parse(P.ModelProto, f.read())
    folder = os.path.dirname(os.path.abspath(model_path_or_bytes))
    out = {}
    for t in mp.graph.initializer if mp.graph is not None else []:
        if t.data_location == 1:
            info = {e.key: e.value for e in t.external_data}
            out[t.name] = OrtExternalInitializerInfo(os.path.join(folder, info.get("location", "")),
                                                     int(info.get("offset") or 0), int(info.get("length") or 0))
    return out


class ModelCompiler:
    """Compiles a model (a path or bytes) for the EPs `sess_options` selects."""

    def __init__(self, sess_options, input_model_path_or_bytes, embed_compiled_data_into_model=False,
                 external_initializers_file_path=None, external_initializers_size_threshold=1024,
                 flags=OrtCompileApiFlags.NONE, graph_optimization_level=GraphOptimizationLevel.ORT_DISABLE_ALL,
                 get_initializer_location_func=None):
        self._so = sess_options.copy()
        self._so.graph_optimization_level = GraphOptimizationLevel(graph_optimization_level)
        self._so.optimized_model_filepath = ""
        self._model = input_model_path_or_bytes
        if isinstance(self._model, os.PathLike):
            self._model = os.fspath(self._model)
        self._external_path = external_initializers_file_path
        self._threshold = int(external_initializers_size_threshold)
        self._flags = int(flags)
        self._location_func = get_initializer_location_func

    def _compiled(self):
        from .session import InferenceSession
        providers = [name for name, _ in self._so._providers] or None
        options = [opts for _, opts in self._so._providers] or None
        sess = InferenceSession(self._model, self._so, providers, options)
        if self._flags & OrtCompileApiFlags.ERROR_IF_NO_NODES_COMPILED:
            raise Fail("Unable to compile any nodes: onnxide's execution providers run nodes without compiling "
                       "them")
        return sess._model

    def _placer(self, out_dir):
        if self._location_func is not None:
            sources = _source_external_info(self._model)
            return self._by_func(sources, out_dir)
        if self._external_path:
            return self._to_file(out_dir)
        return None

    def _by_func(self, sources, out_dir):
        from .ortvalue import OrtValue

        def place(name, array, raw):
            info = self._location_func(name, OrtValue(array), sources.get(name))
            if info is None:
                return None
            path = os.path.abspath(info.filepath)
            rel = os.path.relpath(path, out_dir) if out_dir else path
            return (path if rel.startswith("..") else rel), info.file_offset, info.byte_size
        return place

    def _to_file(self, out_dir):
        path = os.path.join(out_dir or ".", os.fspath(self._external_path))
        out = open(path, "wb")
        location = os.path.relpath(path, out_dir or ".")

        def place(name, array, raw):
            if len(raw) < self._threshold:
                return None
            offset = out.tell()
            out.write(raw)
            return location, offset, len(raw)

        place.close = out.close
        return place

    def compile_to_file(self, output_model_path=None):
        if output_model_path is None:
            if not isinstance(self._model, str):
                raise Fail("compile_to_file needs an output path when the input model is in memory")
            root, ext = os.path.splitext(self._model)
            output_model_path = f"{root}_ctx{ext}"
        output_model_path = os.fspath(output_model_path)
        if self._flags & OrtCompileApiFlags.ERROR_IF_OUTPUT_FILE_EXISTS and os.path.exists(output_model_path):
            raise Fail(f"Output model path '{output_model_path}' exists already")
        model = self._compiled()
        save_model(model, output_model_path, self._placer(os.path.dirname(os.path.abspath(output_model_path))))

    def compile_to_bytes(self):
        return save_model(self._compiled(), None, self._placer(None), write=bytes)

    def compile_to_stream(self, write_function):
        def write(data):
            try:
                write_function(data)
            except Exception as e:  # noqa: BLE001 - the writer's error, reported as onnxruntime reports it
                raise Fail(f"Writing the compiled model to the stream failed: {type(e).__name__}: {e}") from e
        save_model(self._compiled(), None, self._placer(None), write=write)
