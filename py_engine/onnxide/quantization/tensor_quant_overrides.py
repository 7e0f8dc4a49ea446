"""The TensorQuantOverrides option: {tensor: [dict per tensor or per channel]}, its checks, and the quantized type a
tensor has for its producer and for each consumer (a 'convert' entry gives some consumers another type)."""
from dataclasses import dataclass

from .quant_utils import QuantType

_SCALE_ZP_INCOMPATIBLE = ("rmax", "rmin", "symmetric", "reduce_range")


@dataclass(frozen=True)
class QuantTypeInfo:
    """A tensor's quantized type and whether it is symmetric."""

    quant_type: QuantType
    symmetric: bool = False

    @classmethod
    def load_from_dict(cls, d, default_qtype=None, default_symmetric=False):
        return cls(d.get("quant_type", default_qtype), d.get("symmetric", default_symmetric))

    def save_to_dict(self, d, default_symmetric=False):
        """Writes quant_type, and symmetric where it differs from the default."""
        d["quant_type"] = self.quant_type
        if self.symmetric != default_symmetric:
            d["symmetric"] = self.symmetric


class TensorQuantOverridesHelper:
    """The overrides dict, read and changed as a mapping; get_dict() gives the (same) dict back."""

    def __init__(self, raw_overrides):
        self.overrides = raw_overrides if raw_overrides is not None else {}

    def __contains__(self, name):
        return name in self.overrides

    def __getitem__(self, name):
        return self.overrides[name]

    def __setitem__(self, name, value):
        self.overrides[name] = value

    def __iter__(self):
        return iter(self.overrides)

    def __len__(self):
        return len(self.overrides)

    def __bool__(self):
        return bool(self.overrides)

    def get(self, name, default=None):
        return self.overrides.get(name, default)

    def items(self):
        return self.overrides.items()

    def pop(self, name, default=None):
        return self.overrides.pop(name, default)

    def get_dict(self):
        return self.overrides

    def get_per_tensor_overrides(self, name, default_val=None):
        entries = self.overrides.get(name)
        return dict(entries[0]) if entries else ({} if default_val is None else default_val)

    def get_node_output_qtype_info(self, output_name, default_qtype, default_symmetric=False):
        """The type the producer of output_name writes."""
        entries = self.overrides.get(output_name)
        if not entries:
            return QuantTypeInfo(default_qtype, default_symmetric)
        return QuantTypeInfo.load_from_dict(entries[0], default_qtype, default_symmetric)

    def get_node_input_qtype_info(self, input_name, node_name, default_qtype, default_symmetric=False):
        """The type node_name reads input_name in: the convert type when node_name is one of its recv_nodes."""
        entries = self.overrides.get(input_name)
        if not entries:
            return QuantTypeInfo(default_qtype, default_symmetric)
        convert = entries[0].get("convert")
        if convert and node_name in convert.get("recv_nodes", ()):
            return QuantTypeInfo.load_from_dict(convert, default_qtype, default_symmetric)
        return QuantTypeInfo.load_from_dict(entries[0], default_qtype, default_symmetric)

    def is_valid(self, initializers, activation_names, default_activation_qtype=None):
        """(True, None), or (False, the reason) for the first bad override: an unknown tensor, a scale without a
        zero point (or the reverse), a range option beside them, a per-channel list on an activation."""
        for name, entries in self.overrides.items():
            if name not in initializers and name not in activation_names:
                return False, f"Tensor '{name}' in TensorQuantOverrides is not present in the model"
            if not isinstance(entries, list) or not entries:
                return False, f"Tensor quantization overrides for '{name}' must be a non-empty list of dicts"
            if name not in initializers and len(entries) > 1:
                return False, f"Tensor '{name}' is not an initializer: it cannot have per-channel overrides"
            for d in entries:
                if ("scale" in d) != ("zero_point" in d):
                    return False, "Must provide both 'scale' and 'zero_point' if one of the overrides is provided"
                if "scale" in d:
                    bad = [k for k in _SCALE_ZP_INCOMPATIBLE if k in d]
                    if bad:
                        return False, (f"Tensor override option(s) [{', '.join(bad)}] are invalid with 'scale' and "
                                       "'zero_point'")
                convert = d.get("convert")
                if convert is not None:
                    if name in initializers:
                        return False, f"Cannot use 'convert' override for initializers ('{name}')"
                    if "quant_type" not in convert:
                        return False, f"'convert' options (tensor '{name}') must specify a 'quant_type'"
                    if d.get("quant_type", default_activation_qtype) == convert["quant_type"]:
                        return False, f"'convert' quant_type of tensor '{name}' must differ from its own"
        return True, None
