"""onnxruntime's quantization tool (`onnxruntime.quantization`), written for onnxide: calibration runs on onnxide."""
from .calibrate import (  # noqa: F401
    CalibraterBase, CalibrationDataReader, CalibrationMethod, MinMaxCalibrater, create_calibrator,
)
from .calibrate_hist import DistributionCalibrater, EntropyCalibrater, PercentileCalibrater  # noqa: F401
from .quant_utils import QuantFormat, QuantType, QuantizationMode, write_calibration_table  # noqa: F401
from .quantize import (  # noqa: F401
    DynamicQuantConfig, QuantConfig, StaticQuantConfig, quantize, quantize_dynamic, quantize_static,
)
from .qdq import QDQQuantizer  # noqa: F401,E402
from .shape_inference import quant_pre_process  # noqa: F401,E402
from .qdq_config import get_qdq_config  # noqa: F401,E402
from .qoperator import QOperatorQuantizer  # noqa: F401,E402
from . import static_quantize_runner  # noqa: F401,E402
