"""What every quantizer shares: node selection, tensor types, activation ranges and parameters, weights, bias."""
import numpy as np

from ..errors import InvalidArgument
from ..proto.onnx_api import TensorProto, numpy_helper, onnx
from .onnx_model import ONNXModel
from .calibrate import FLOAT_TYPES, TensorData, value_types
from .quant_utils import (
    ONNX_TYPE_TO_NP_TYPE, QuantType, compute_scale_zp, get_qmin_qmax_for_qType, onnx_type, quantize_nparray,
)

QDQ_DIRECT_OPS = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Resize", "MaxPool", "Slice", "TopK", "Flatten",
                  "Gather", "GatherElements", "Split", "Pad", "AveragePool", "DepthToSpace", "SpaceToDepth",
                  "Expand", "Tile"}
QLINEAR_OPS = ["ArgMax", "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "LeakyRelu",
               "Sigmoid", "MaxPool", "GlobalAveragePool", "Split", "Pad", "Reshape", "Squeeze", "Unsqueeze",
               "Resize", "AveragePool", "Concat", "Softmax", "Where", "Transpose", "Gather"]
QDQ_OPS = ["Conv", "ConvTranspose", "Gemm", "Clip", "Relu", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
           "Resize", "MaxPool", "AveragePool", "Slice", "MatMul", "Split", "Gather", "GatherElements", "Where",
           "InstanceNormalization", "LayerNormalization", "BatchNormalization", "TopK", "Pad"]
INTEGER_OPS = ["Conv", "MatMul", "Gemm", "Gather", "EmbedLayerNormalization", "Attention"]
FLOAT8 = (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
          TensorProto.FLOAT8E5M2FNUZ)
NARROW = (TensorProto.INT16, TensorProto.UINT16, TensorProto.INT4, TensorProto.UINT4)


def opset_of(model, domain=""):
    for o in model.opset_import:
        if o.domain in (domain, "ai.onnx" if domain == "" else domain):
            return o.version
    return 0


class QuantizerBase:
    """Holds the model (shape-inferred), the options and the quantized tensors made so far."""

    def __init__(self, model, per_channel, reduce_range, weight_qType, activation_qType, tensors_range,  # noqa: N803
                 nodes_to_quantize, nodes_to_exclude, op_types_to_quantize, extra_options=None):
        self.model = ONNXModel(onnx.shape_inference.infer_shapes(model))
        self.graph = self.model.model.graph
        self.per_channel, self.reduce_range = per_channel, reduce_range
        self.weight_qType, self.activation_qType = onnx_type(weight_qType), onnx_type(activation_qType)
        self.tensors_range = dict(tensors_range.items()) if tensors_range else {}
        self.nodes_to_quantize = list(nodes_to_quantize or [])
        self.nodes_to_exclude = list(nodes_to_exclude or [])
        self.op_types_to_quantize = list(op_types_to_quantize or [])
        x = self.extra_options = dict(extra_options or {})
        signed = (TensorProto.INT8, TensorProto.INT16, TensorProto.INT4, TensorProto.FLOAT8E4M3FN)
        self.is_activation_symmetric = bool(x.get("ActivationSymmetric", False))
        self.is_weight_symmetric = bool(x.get("WeightSymmetric", self.weight_qType in signed))
        self.min_real_range = x.get("MinimumRealRange")
        self.force_quantize_no_input_check = bool(x.get("ForceQuantizeNoInputCheck", False))
        self.overrides = x.get("TensorQuantOverrides", {}) or {}
        self.opset = opset_of(self.model.model)
        if self.opset < 19 and {self.weight_qType, self.activation_qType} & set(FLOAT8):
            for o in self.model.model.opset_import:  # float 8 Q / DQ need opset 19: raised, as onnxruntime's tool does
                if o.domain in ("", "ai.onnx"):
                    o.version = self.opset = 19
        self.types = value_types(self.model.model)
        self.inits = {i.name: i for i in self.graph.initializer}
        for name, init in self.inits.items():
            self.types.setdefault(name, init.data_type)
        self.new_inits = []
        self.weight_bias = {}  # set by quantize_model: biased_weights()
        self.graph_outputs = {o.name for o in self.graph.output}
        if self.overrides:
            self.check_overrides()
        if x.get("EnableSubgraph") and any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                           for n in self.graph.node for a in n.attribute):
            raise InvalidArgument("quantizing subgraphs (EnableSubgraph) is not implemented by onnxide's tool")

    def check_overrides(self):
        """ValueError naming the first bad TensorQuantOverrides entry (tensor_quant_overrides.is_valid)."""
        from .tensor_quant_overrides import TensorQuantOverridesHelper
        names = {n for node in self.graph.node for n in list(node.input) + list(node.output) if n}
        names |= {v.name for v in list(self.graph.input) + list(self.graph.output)}
        ok, err = TensorQuantOverridesHelper(self.overrides).is_valid(self.inits, names - set(self.inits),
                                                                      self.activation_qType)
        if not ok:
            raise ValueError(err)

    def overridden_types(self):
        """The element types the overrides ask for (their own and their 'convert' ones)."""
        out = set()
        for entries in self.overrides.values():
            for d in entries:
                for q in (d.get("quant_type"), (d.get("convert") or {}).get("quant_type")):
                    if q is not None:
                        out.add(onnx_type(q))
        return out

    def adjust_tensor_ranges(self):
        """Relu / Clip inputs take their output's range (when they alone read it); Softmax outputs are [0, 1]."""
        uses = {}
        for n in self.graph.node:
            for i in n.input:
                uses[i] = uses.get(i, 0) + 1
        for node in self.graph.node:
            if not self.should_quantize_node(node):
                continue
            r = self.tensors_range
            if node.op_type in ("Relu", "Clip") and uses.get(node.input[0]) == 1 and node.output[0] in r \
                    and node.input[0] in r:
                r[node.input[0]] = r[node.output[0]]
            elif node.op_type == "Softmax" and node.output[0] in r:
                r[node.output[0]] = TensorData(lowest=np.float32(0.0), highest=np.float32(1.0))

    # --- selection -------------------------------------------------------------------------------------------
    def should_quantize_node(self, node):
        if self.nodes_to_quantize and node.name not in self.nodes_to_quantize:
            return False
        if node.name in self.nodes_to_exclude:
            return False
        return node.op_type in self.op_types_to_quantize if self.op_types_to_quantize else True

    def is_float(self, name):
        return bool(name) and self.types.get(name) in FLOAT_TYPES

    def float_dtype(self, name):
        return np.float16 if self.types.get(name) == TensorProto.FLOAT16 else np.float32

    def is_weight(self, name):
        return name in self.inits and self.inits[name].data_type in FLOAT_TYPES

    def consumers(self, name):
        return [n for n in self.graph.node if name in n.input]

    def add_init(self, array, name):
        """A new initializer: raw bytes for quantized data, typed fields (int32_data, float_data) for scales and
        zero points, as onnxruntime's tool writes them."""
        a = np.asarray(array)
        if a.size > 64 or a.dtype == np.int32 and a.ndim > 0:
            self.new_inits.append(numpy_helper.from_array(a, name))
        else:
            elem = onnx.helper.np_dtype_to_tensor_dtype(a.dtype)
            vals = a.astype(np.float32 if a.dtype.kind == "f" or elem in FLOAT8 else np.int64).ravel().tolist()
            self.new_inits.append(onnx.helper.make_tensor(name, elem, list(a.shape), vals))
        return name

    # --- activations -----------------------------------------------------------------------------------------
    def _override(self, name):
        ov = self.overrides.get(name)
        return dict(ov[0]) if ov else {}

    def activation_type(self, name):
        q = self._override(name).get("quant_type")
        return onnx_type(q) if q is not None else self.activation_qType

    def has_range(self, name):
        return name in self.tensors_range or "scale" in self._override(name)

    def activation_params(self, name, ov=None):
        """(zero point, scale, element type) of an activation from its range, or from its override (or from `ov`,
        the override a 'convert' entry gives its receiving nodes)."""
        if ov is None:
            ov, qtype = self._override(name), self.activation_type(name)
        else:
            qtype = onnx_type(ov.get("quant_type", self.activation_qType))
        fdt = self.float_dtype(name)
        if "scale" in ov:
            zdt = ONNX_TYPE_TO_NP_TYPE[qtype]
            return np.array(ov.get("zero_point", 0), dtype=zdt), np.array(ov["scale"], dtype=fdt), qtype
        td = self.tensors_range[name]
        lo, hi = td.range_value if isinstance(td, TensorData) else td
        lo, hi = np.float32(ov.get("rmin", lo)), np.float32(ov.get("rmax", hi))
        if qtype == TensorProto.FLOAT8E4M3FN:
            return np.array(0, dtype=ONNX_TYPE_TO_NP_TYPE[qtype]), np.array(max(abs(lo), abs(hi)) / 448.0 or 1.0,
                                                                             dtype=fdt), qtype
        symmetric = ov.get("symmetric", self.is_activation_symmetric)
        qmin, qmax = get_qmin_qmax_for_qType(qtype, ov.get("reduce_range", False), symmetric=symmetric)
        zp, scale = compute_scale_zp(lo, hi, qmin, qmax, symmetric, self.min_real_range)
        return zp, scale.astype(fdt), qtype

    # --- weights and biases ----------------------------------------------------------------------------------
    def biased_weights(self):
        """{weight: (input, bias)} of the Conv / ConvTranspose / Gemm nodes whose int32 bias may force a larger
        weight scale (none when QDQDisableWeightAdjustForInt32Bias is set)."""
        if self.extra_options.get("QDQDisableWeightAdjustForInt32Bias", False):
            return {}
        out = {}
        for n in self.graph.node:
            bias = n.input[2] if len(n.input) > 2 else ""
            if n.op_type in ("Conv", "ConvTranspose", "Gemm") and bias in self.inits and bias not in self.overrides \
                    and self.is_weight(n.input[1]) and self.should_quantize_node(n):
                out.setdefault(n.input[1], (n.input[0], n.input[2]))
        return out

    def _int32_bias_scale(self, name, scale):
        """The weight scale(s), raised where input scale × weight scale would quantize the bias beyond int32: the
        bias scale becomes the smallest that holds the bias's largest magnitude (times 1.0001)."""
        inp, bias = self.weight_bias.get(name, (None, None))
        if bias is None or not self.has_range(inp) or self._override(name).get("scale") is not None:
            return scale
        b = numpy_helper.to_array(self.inits[bias]).astype(np.float64)
        s = np.asarray(scale, np.float64)
        if s.ndim == 0 or s.size == 1:
            b = np.max(np.abs(b), initial=0.0)
        elif b.shape != s.shape:
            return scale
        else:
            b = np.abs(b)
        qrange = float(np.iinfo(np.int32).max) - float(np.iinfo(np.int32).min + 1)
        smallest = 1.0001 * 2.0 * b / qrange
        candidate = float(np.asarray(self.activation_params(inp)[1], np.float64)) * s
        raise_ = (candidate > 0) & (candidate < smallest)
        if not np.any(raise_):
            return scale
        return np.where(raise_, s * smallest / np.where(candidate > 0, candidate, 1.0), s).astype(
            np.asarray(scale).dtype).reshape(np.shape(scale))

    def weight_params(self, name, axis=None, qtype=None, symmetric=None, reduce_range=None):
        """(quantized array, zero point(s), scale(s), element type) of a float initializer. Its overrides may give
        the type, symmetric, reduce_range, rmin / rmax or scale / zero_point: one dict, or one per channel."""
        w = numpy_helper.to_array(self.inits[name])
        entries = [dict(e) for e in (self.overrides.get(name) or [{}])]
        ov = entries[0]
        qtype = onnx_type(ov.get("quant_type", qtype if qtype is not None else self.weight_qType))
        per_channel = axis is not None and not (len(entries) == 1 and "scale" in ov)
        default_symmetric = True if per_channel and symmetric is None else (
            self.is_weight_symmetric if symmetric is None else symmetric)  # per-channel weights: symmetric
        symmetric = ov.get("symmetric", default_symmetric)
        rr = ov.get("reduce_range", self.reduce_range if reduce_range is None else reduce_range)
        zdt = ONNX_TYPE_TO_NP_TYPE[qtype]
        if qtype == TensorProto.FLOAT8E4M3FN:
            scale = np.array(max(float(np.abs(w).max()), 1e-12) / 448.0, dtype=w.dtype)
            zp = np.array(0, dtype=zdt)
            return quantize_nparray(qtype, w, scale, zp), zp, scale, qtype
        qmin, qmax = get_qmin_qmax_for_qType(qtype, rr, symmetric=symmetric)
        if not per_channel:
            if "scale" in ov:
                zp, scale = np.array(ov.get("zero_point", 0), dtype=zdt), np.array(ov["scale"], dtype=w.dtype)
                return quantize_nparray(qtype, w, scale, zp), zp, scale, qtype
            lo = ov.get("rmin", w.min() if w.size else np.float32(0))
            hi = ov.get("rmax", w.max() if w.size else np.float32(0))
            zp, scale = compute_scale_zp(np.asarray(lo, w.dtype), np.asarray(hi, w.dtype), qmin, qmax, symmetric,
                                         self.min_real_range)
            scale = self._int32_bias_scale(name, scale)
            return quantize_nparray(qtype, w, scale, zp), zp, scale.astype(w.dtype), qtype
        axis = axis % w.ndim
        moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        chans = [entries[i] if i < len(entries) else ov for i in range(w.shape[axis])]
        if all("scale" in c for c in chans):
            zp = np.array([c.get("zero_point", 0) for c in chans]).astype(zdt)
            scale = np.array([c["scale"] for c in chans]).astype(w.dtype)
        else:
            lo = np.array([c.get("rmin", m) for c, m in zip(chans, moved.min(axis=1))], dtype=w.dtype)
            hi = np.array([c.get("rmax", m) for c, m in zip(chans, moved.max(axis=1))], dtype=w.dtype)
            zp, scale = compute_scale_zp(lo, hi, qmin, qmax, symmetric, self.min_real_range)
            scale = self._int32_bias_scale(name, scale)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = quantize_nparray(qtype, w, scale.reshape(shape), zp.reshape(shape))
        return q, zp, scale.astype(w.dtype), qtype

    def bias_params(self, bias_name, input_scale, weight_scale, beta=1.0):
        """(int32 bias, zero points, scale) with scale = input scale x weight scale(s)."""
        b = numpy_helper.to_array(self.inits[bias_name]).astype(np.float32) * np.float32(beta)
        scale = (np.asarray(input_scale, np.float32) * np.asarray(weight_scale, np.float32)).astype(np.float32)
        scale = np.where(scale == 0, np.float32(1.0), scale).astype(self.float_dtype(bias_name))
        # quantized with the scale as stored (float16 rounds it), so DequantizeLinear gives the bias back
        q = np.clip(np.rint(b / scale.astype(np.float32)), -2**31, 2**31 - 1).astype(np.int32)
        return q, np.zeros(scale.shape, np.int32), scale


def check_types(activation_type, weight_type):
    """onnxruntime's refusal: int8 activations with uint8 weights have no kernels."""
    a, w = onnx_type(activation_type), onnx_type(weight_type)
    if a == TensorProto.INT8 and w == TensorProto.UINT8:
        raise ValueError(f"ONNXRuntime quantization doesn't support data format: activation_type={QuantType.QInt8} "
                         f"!=QuantType.QInt8 while weight_type={QuantType.QUInt8}")
