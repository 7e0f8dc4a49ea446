"""Command line: quantize_static of a model with the test_data_set_*/input_*.pb folders beside it as calibration."""
import argparse
import glob
import json
import os

from ..proto.onnx_api import numpy_helper, onnx
from .calibrate import CalibrationDataReader, CalibrationMethod
from .quant_utils import QuantFormat, QuantType
from .quantize import quantize_static

TYPES = {"qint8": QuantType.QInt8, "quint8": QuantType.QUInt8, "qint16": QuantType.QInt16,
         "quint16": QuantType.QUInt16, "qint4": QuantType.QInt4, "quint4": QuantType.QUInt4,
         "qfloat8e4m3fn": QuantType.QFLOAT8E4M3FN}
METHODS = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
           "percentile": CalibrationMethod.Percentile, "distribution": CalibrationMethod.Distribution}


class OnnxModelCalibrationDataReader(CalibrationDataReader):
    """Feeds from the model folder's test_data_set_* folders, one feed a folder, inputs in graph order."""

    def __init__(self, model_path):
        model = onnx.load(model_path, load_external_data=False)
        inits = {i.name for i in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in inits]
        folders = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(model_path)), "test_data_set_*")))
        self.feeds = []
        for folder in folders:
            files = sorted(glob.glob(os.path.join(folder, "input_*.pb")),
                           key=lambda p: int(os.path.basename(p)[6:-3]))
            arrays = []
            for path in files:
                t = onnx.TensorProto()
                with open(path, "rb") as f:
                    t.ParseFromString(f.read())
                arrays.append(numpy_helper.to_array(t))
            self.feeds.append(dict(zip(names, arrays)))
        self.rewind()

    def get_next(self):
        return next(self._it, None)

    def rewind(self):
        self._it = iter(self.feeds)

    def __len__(self):
        return len(self.feeds)


def parse_arguments(argv=None):
    p = argparse.ArgumentParser(description="Static quantization of an ONNX model with onnxide's tool")
    p.add_argument("-i", "--input_model_path", required=True)
    p.add_argument("-o", "--output_quantized_model_path", required=True)
    p.add_argument("--activation_type", choices=sorted(TYPES), default="quint8")
    p.add_argument("--weight_type", choices=sorted(TYPES), default="qint8")
    p.add_argument("--quant_format", choices=["qdq", "qoperator"], default="qdq")
    p.add_argument("--calibration_method", choices=sorted(METHODS), default="minmax")
    p.add_argument("--calib_tensor_range_symmetric", action="store_true")
    p.add_argument("--calib_strided_minmax", type=int)
    p.add_argument("--calib_moving_average_constant", type=float, default=0.01)
    p.add_argument("--calib_moving_average", action="store_true")
    p.add_argument("--calib_max_intermediate_outputs", type=int)
    p.add_argument("--minimum_real_range", type=float)
    p.add_argument("--qdq_keep_removable_activations", action="store_true")
    p.add_argument("--qdq_disable_weight_adjust_for_int32_bias", action="store_true")
    p.add_argument("--per_channel", action="store_true")
    p.add_argument("--op_per_channel_axis", nargs=2, action="append", metavar=("OP_TYPE", "AXIS"), default=[])
    p.add_argument("--tensor_quant_overrides")
    p.add_argument("--op_types_to_quantize", nargs="+")
    p.add_argument("--nodes_to_quantize", nargs="+")
    p.add_argument("--nodes_to_exclude", nargs="+")
    p.add_argument("--op_types_to_exclude_output_quantization", nargs="+", default=[])
    p.add_argument("--dedicated_qdq_pair", action="store_true")
    p.add_argument("--add_qdq_pair_to_weight", action="store_true")
    p.add_argument("--use_qdq_contrib_ops", action="store_true")
    p.add_argument("--matmul_const_b_only", action="store_true")
    p.add_argument("--disable_quantize_bias", action="store_true")
    p.add_argument("--enable_subgraph", action="store_true")
    p.add_argument("--force_quantize_no_input_check", action="store_true")
    p.add_argument("--reduce_range", action="store_true")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_arguments(argv)
    extra = {
        "CalibTensorRangeSymmetric": args.calib_tensor_range_symmetric,
        "CalibMovingAverage": args.calib_moving_average,
        "CalibMovingAverageConstant": args.calib_moving_average_constant,
        "QDQKeepRemovableActivations": args.qdq_keep_removable_activations,
        "QDQDisableWeightAdjustForInt32Bias": args.qdq_disable_weight_adjust_for_int32_bias,
        "DedicatedQDQPair": args.dedicated_qdq_pair,
        "AddQDQPairToWeight": args.add_qdq_pair_to_weight,
        "UseQDQContribOps": args.use_qdq_contrib_ops,
        "MatMulConstBOnly": args.matmul_const_b_only,
        "QuantizeBias": not args.disable_quantize_bias,
        "EnableSubgraph": args.enable_subgraph,
        "ForceQuantizeNoInputCheck": args.force_quantize_no_input_check,
        "OpTypesToExcludeOutputQuantization": args.op_types_to_exclude_output_quantization,
    }
    if args.calib_max_intermediate_outputs is not None:
        extra["CalibMaxIntermediateOutputs"] = args.calib_max_intermediate_outputs
    if args.minimum_real_range is not None:
        extra["MinimumRealRange"] = args.minimum_real_range
    if args.op_per_channel_axis:
        extra["QDQOpTypePerChannelSupportToAxis"] = {op: int(axis) for op, axis in args.op_per_channel_axis}
    if args.tensor_quant_overrides:
        with open(args.tensor_quant_overrides) as f:
            extra["TensorQuantOverrides"] = json.load(f)
    reader = OnnxModelCalibrationDataReader(args.input_model_path)
    quantize_static(args.input_model_path, args.output_quantized_model_path, reader,
                    quant_format=QuantFormat.QDQ if args.quant_format == "qdq" else QuantFormat.QOperator,
                    op_types_to_quantize=args.op_types_to_quantize, per_channel=args.per_channel,
                    reduce_range=args.reduce_range, activation_type=TYPES[args.activation_type],
                    weight_type=TYPES[args.weight_type], nodes_to_quantize=args.nodes_to_quantize,
                    nodes_to_exclude=args.nodes_to_exclude, calibrate_method=METHODS[args.calibration_method],
                    extra_options=extra)


if __name__ == "__main__":
    main()
