"""Weight-only blockwise quantization of MatMul weights to 2 / 4 / 8 bits (round to nearest): com.microsoft
MatMulNBits (QOperator) or a blocked DequantizeLinear feeding the MatMul (QDQ, opset 21); Gather tables to 4 bits
(com.microsoft GatherBlockQuantized)."""
import numpy as np

from ..errors import InvalidArgument
from ..proto.onnx_api import TensorProto, helper, numpy_helper, onnx
from .graph_utils import ensure_opset
from .hqq import hqq_quantize_blocks
from .onnx_model import ONNXModel
from .quant_utils import QuantFormat, ms_domain


class WeightOnlyQuantConfig:
    def __init__(self, algorithm, quant_format=QuantFormat.QOperator, op_types_to_quantize=None, quant_axes=None,
                 customized_weight_config=None):
        self.algorithm, self.quant_format = algorithm, quant_format
        self.op_types_to_quantize = set(op_types_to_quantize or ["MatMul"])
        self.quant_axes = dict(quant_axes or (("MatMul", 0), ("Gather", 1)))
        self.customized_weight_config = customized_weight_config or {}


class DefaultWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    """Blockwise round-to-nearest quantization along K (onnxruntime's default weight-only algorithm)."""

    def __init__(self, block_size=128, is_symmetric=False, accuracy_level=None, quant_format=QuantFormat.QOperator,
                 op_types_to_quantize=None, quant_axes=None, bits=4, channel_wised_quantize=False):
        super().__init__("DEFAULT", quant_format, op_types_to_quantize, quant_axes)
        self.block_size, self.is_symmetric, self.accuracy_level = block_size, is_symmetric, accuracy_level
        self.bits, self.channel_wised_quantize = bits, channel_wised_quantize


class HQQWeightOnlyQuantConfig(WeightOnlyQuantConfig):
    """HQQ (half-quadratic quantization) in blocks along K: float zero points (quantization/hqq.py)."""

    def __init__(self, block_size=128, bits=4, axis=1, quant_format=QuantFormat.QOperator, op_types_to_quantize=None,
                 quant_axes=None):
        super().__init__("HQQ", quant_format, op_types_to_quantize, quant_axes)
        if axis != 1 or quant_format != QuantFormat.QOperator:
            raise InvalidArgument("HQQ quantizes in blocks along K (axis=1) to MatMulNBits (QOperator) only")
        self.block_size, self.bits, self.axis = block_size, bits, axis
        self.is_symmetric, self.accuracy_level = False, None


def quantize_blocks(w, block_size, bits, symmetric):
    """Codes [N, k_blocks, block_size] (unsigned, zero point applied), scales [N, k_blocks], zero points
    [N, k_blocks] of a [K, N] weight, K zero-padded to whole blocks. Symmetric: the value of largest magnitude maps
    to -2^(bits-1), zero point 2^(bits-1); asymmetric: [min(0, lo), max(0, hi)] over 0 .. 2^bits - 1."""
    k, n = w.shape
    k_blocks = -(-k // block_size)
    wt = np.zeros((n, k_blocks * block_size), np.float32)
    wt[:, :k] = w.T.astype(np.float32)
    blocks = wt.reshape(n, k_blocks, block_size)
    qmax = 2 ** bits - 1
    if symmetric:
        idx = np.abs(blocks).argmax(axis=2)
        peak = np.take_along_axis(blocks, idx[..., None], axis=2)[..., 0]
        scale = peak / np.float32(-(2 ** (bits - 1)))
        zp = np.full(scale.shape, 2 ** (bits - 1), np.float32)
    else:
        lo, hi = np.minimum(blocks.min(axis=2), 0), np.maximum(blocks.max(axis=2), 0)
        scale = (hi - lo) / np.float32(qmax)
        safe = np.where(scale == 0, np.float32(1), scale)
        zp = np.clip(np.rint(-lo / safe), 0, qmax)
    scale = np.where(scale == 0, np.float32(1), scale).astype(np.float32)
    codes = np.clip(np.rint(blocks / scale[..., None]) + zp[..., None], 0, qmax).astype(np.uint8)
    return codes, scale, zp.astype(np.uint8)


def pack(values, bits):
    """Little-endian bit packing along the last axis: 8 / bits values a byte, the first in the low bits."""
    per = 8 // bits
    v = values.astype(np.uint8)
    pad = (-v.shape[-1]) % per
    if pad:
        v = np.concatenate([v, np.zeros(v.shape[:-1] + (pad,), np.uint8)], axis=-1)
    v = v.reshape(v.shape[:-1] + (-1, per))
    out = np.zeros(v.shape[:-1], np.uint8)
    for i in range(per):
        out |= (v[..., i] << (bits * i)).astype(np.uint8)
    return out


class MatMulNBitsQuantizer:
    """Replaces each selected MatMul whose B is a 2-D float initializer."""

    def __init__(self, model, bits=4, block_size=128, is_symmetric=False, accuracy_level=None,
                 nodes_to_exclude=None, nodes_to_include=None, quant_format=QuantFormat.QOperator,
                 op_types_to_quantize=None, quant_axes=None, channel_wised_quantize=False, algo_config=None):
        if isinstance(model, str):
            model = onnx.load(model)
        self.model = model if isinstance(model, ONNXModel) else ONNXModel(model)
        cfg = algo_config or DefaultWeightOnlyQuantConfig(block_size, is_symmetric, accuracy_level, quant_format,
                                                          op_types_to_quantize, quant_axes, bits)
        if not isinstance(cfg, (DefaultWeightOnlyQuantConfig, HQQWeightOnlyQuantConfig)):
            raise InvalidArgument(f"weight-only algorithm {cfg.algorithm} is not implemented by onnxide's tool")
        self.algo_config = cfg
        self.nodes_to_exclude = set(nodes_to_exclude or [])
        self.nodes_to_include = set(nodes_to_include or [])
        if cfg.bits not in (2, 4, 8) or cfg.block_size < 16 or cfg.block_size & (cfg.block_size - 1):
            raise InvalidArgument(f"bits must be 2, 4 or 8 and block_size a power of 2 >= 16, got {cfg.bits} and "
                                  f"{cfg.block_size}")

    def _selected(self, node):
        if node.op_type not in self.algo_config.op_types_to_quantize or node.op_type not in ("MatMul", "Gather"):
            return False
        if node.name in self.nodes_to_exclude:
            return False
        return not self.nodes_to_include or node.name in self.nodes_to_include

    def process(self):
        cfg, graph = self.algo_config, self.model.graph()
        inits = {i.name: i for i in graph.initializer}
        qdq = cfg.quant_format == QuantFormat.QDQ
        out_nodes, used, used_ms = [], False, False
        for node in list(graph.node):
            if node.op_type == "Gather":
                data = inits.get(node.input[0]) if self._selected(node) else None
                gbq = self._gather(node, data) if data is not None else None
                out_nodes.append(gbq or node)
                if gbq is not None:
                    used_ms = True
                    if not any(data.name in x.input for x in graph.node if x is not node):
                        graph.initializer.remove(data)
                continue
            b = inits.get(node.input[1]) if self._selected(node) else None
            if b is None or b.data_type != TensorProto.FLOAT or len(b.dims) != 2:
                out_nodes.append(node)
                continue
            w = numpy_helper.to_array(b)
            k, n = w.shape
            if cfg.algorithm == "HQQ":
                codes, scale, zp = hqq_quantize_blocks(w, cfg.block_size, cfg.bits)
            else:
                codes, scale, zp = quantize_blocks(w, cfg.block_size, cfg.bits, cfg.is_symmetric)
            used = True
            if qdq:
                out_nodes.extend(self._qdq(node, b.name, codes, scale, zp, k, n))
            else:
                out_nodes.append(self._nbits(node, b.name, codes, scale, zp, k, n))
            if not any(b.name in x.input for x in graph.node if x is not node):
                graph.initializer.remove(b)
        del graph.node[:]
        graph.node.extend(out_nodes)
        if used and qdq:
            for o in self.model.model.opset_import:
                if o.domain in ("", "ai.onnx") and o.version < 21:
                    o.version = 21
        if (used and not qdq) or used_ms:
            ensure_opset(self.model.model, ms_domain, 1)
        self.model.topological_sort()
        return self.model.model

    def _gather(self, node, data):
        """com.microsoft GatherBlockQuantized for a Gather from a float table quantized in blocks along its last axis
        (quant_axes['Gather']): int4 codes (symmetric) or uint4 codes and zero points. None when it does not apply
        (a table that is not float / float16, or a gather along the quantized axis)."""
        cfg = self.algo_config
        if data.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16) or not data.dims:
            return None
        rank = len(data.dims)
        ga = next((a.i for a in node.attribute if a.name == "axis"), 0) % rank
        qa = cfg.quant_axes.get("Gather", 1) % rank
        if qa != rank - 1 or ga == qa:
            return None
        if cfg.bits != 4:
            raise InvalidArgument(f"Gather weight-only quantization takes 4 bits, got {cfg.bits}")
        w = numpy_helper.to_array(data)
        rows, e = int(np.prod(w.shape[:-1])), w.shape[-1]
        codes, scale, zp = quantize_blocks(w.reshape(rows, e).T, cfg.block_size, 4, cfg.is_symmetric)
        q = codes.reshape(rows, -1)[:, :e].astype(np.int16).reshape(w.shape)
        blocks = list(w.shape[:-1]) + [scale.shape[1]]
        graph = self.model.graph()
        elem = TensorProto.INT4 if cfg.is_symmetric else TensorProto.UINT4
        graph.initializer.append(helper.make_tensor(data.name + "_Q4", elem, list(w.shape),
                                                    (q - 8 if cfg.is_symmetric else q).ravel().tolist()))
        graph.initializer.append(numpy_helper.from_array(scale.reshape(blocks).astype(w.dtype), data.name + "_scales"))
        inputs = [data.name + "_Q4", node.input[1], data.name + "_scales"]
        if not cfg.is_symmetric:
            graph.initializer.append(helper.make_tensor(data.name + "_zero_points", elem, blocks,
                                                        zp.astype(np.int16).ravel().tolist()))
            inputs.append(data.name + "_zero_points")
        return helper.make_node("GatherBlockQuantized", inputs, list(node.output),
                                name=(node.name or node.output[0]) + "_Q4", domain=ms_domain, gather_axis=ga,
                                quantize_axis=qa, block_size=cfg.block_size, bits=4)

    def _nbits(self, node, b_name, codes, scale, zp, k, n):
        cfg, graph = self.algo_config, self.model.graph()
        k_blocks = codes.shape[1]
        graph.initializer.append(numpy_helper.from_array(pack(codes, cfg.bits), b_name + "_Q%d" % cfg.bits))
        graph.initializer.append(numpy_helper.from_array(scale.reshape(-1), b_name + "_scales"))
        inputs = [node.input[0], b_name + "_Q%d" % cfg.bits, b_name + "_scales"]
        if not cfg.is_symmetric:  # packed codes, or (HQQ) float zero points of the scales' type
            z = zp.reshape(-1) if zp.dtype.kind == "f" else pack(zp, cfg.bits).reshape(-1)
            graph.initializer.append(numpy_helper.from_array(z, b_name + "_zero_points"))
            inputs.append(b_name + "_zero_points")
        kw = {"accuracy_level": cfg.accuracy_level} if cfg.accuracy_level is not None else {}
        assert k_blocks * cfg.block_size >= k
        return helper.make_node("MatMulNBits", inputs, list(node.output), name=(node.name or node.output[0]) +
                                "_Q%d" % cfg.bits, domain=ms_domain, K=k, N=n, bits=cfg.bits,
                                block_size=cfg.block_size, **kw)

    def _qdq(self, node, b_name, codes, scale, zp, k, n):
        """[K, N] int4 / uint4 (or 2 / 8-bit) weight with [k_blocks, N] scales, dequantized along K."""
        cfg, graph = self.algo_config, self.model.graph()
        if cfg.bits != 4:
            raise InvalidArgument("the QDQ format of weight-only quantization takes 4 bits")
        q = codes.reshape(n, -1)[:, :k].T.astype(np.int16)
        if cfg.is_symmetric:
            elem, vals, zp_vals = TensorProto.INT4, q - 8, None
        else:
            elem, vals, zp_vals = TensorProto.UINT4, q, zp.T.astype(np.int16)
        graph.initializer.append(helper.make_tensor(b_name + "_DQ_Q4", elem, [k, n], vals.ravel().tolist()))
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(scale.T), b_name + "_DQ_scales"))
        inputs = [b_name + "_DQ_Q4", b_name + "_DQ_scales"]
        if zp_vals is not None:
            graph.initializer.append(helper.make_tensor(b_name + "_DQ_zero_points", elem, list(zp_vals.shape),
                                                        zp_vals.ravel().tolist()))
            inputs.append(b_name + "_DQ_zero_points")
        dq_out = b_name + "_DQ_output"
        dq = helper.make_node("DequantizeLinear", inputs, [dq_out], name=b_name + "_DQ", axis=0,
                              block_size=cfg.block_size)
        mm = helper.NodeProto()
        mm.CopyFrom(node)
        mm.input[1] = dq_out
        return [dq, mm]
