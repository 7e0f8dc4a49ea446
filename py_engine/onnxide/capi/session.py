"""onnxruntime's C-level session (`session._sess`, `initialize_session`) and SessionIOBinding, over onnxide's."""
from ..runtime.iobinding import IOBinding
from ..runtime.options import SessionOptions
from ..runtime.ortvalue import OrtValueVector


def get_default_session_options():
    return SessionOptions()


class CSession:
    """`CSession(sess_options, path_or_bytes, is_path, load_config_from_model)` then `initialize_session(providers,
    provider_options, disabled_optimizers)`; or the view of an existing session (`session._sess`)."""

    def __init__(self, sess_options, path_or_bytes=None, is_path=True, load_config_from_model=False):
        self._so, self._source, self._from_model = sess_options, path_or_bytes, bool(load_config_from_model)
        self._session = None

    @classmethod
    def of(cls, session):
        view = cls(session.get_session_options())
        view._session = session
        return view

    def initialize_session(self, providers=(), provider_options=(), disabled_optimizers=None):
        """Builds the session; unknown provider names raise (no fallback at this level)."""
        from ..runtime.session import InferenceSession
        self._session = InferenceSession(self._source, self._so, list(providers) or None,
                                         list(provider_options) or None, enable_fallback=False,
                                         read_config_from_model=self._from_model)

    def run(self, output_names, input_feed, run_options=None):
        return self._session.run(output_names, input_feed, run_options)

    def run_with_ort_values(self, input_feed, output_names, run_options=None):
        return OrtValueVector(self._session.run_with_ort_values(output_names, input_feed, run_options))

    def run_with_iobinding(self, iobinding, run_options=None):
        self._session.run_with_iobinding(iobinding, run_options)

    @property
    def inputs_meta(self):
        return self._session.get_inputs()

    @property
    def outputs_meta(self):
        return self._session.get_outputs()

    @property
    def overridable_initializers(self):
        return self._session.get_overridable_initializers()

    @property
    def model_meta(self):
        return self._session.get_modelmeta()

    @property
    def session_options(self):
        return self._session.get_session_options()

    def __getattr__(self, name):  # the methods both levels share (get_providers, end_profiling, ...)
        if name.startswith("_") or self.__dict__.get("_session") is None:
            raise AttributeError(name)
        return getattr(self._session, name)


class SessionIOBinding(IOBinding):
    """IO binding made from a C-level session; get_outputs() returns an OrtValueVector."""

    def __init__(self, session):
        super().__init__(session._session if isinstance(session, CSession) else session)

    def get_outputs(self):
        return OrtValueVector(super().get_outputs())
