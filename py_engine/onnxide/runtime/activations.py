"""The ai.onnx element-wise activation ops EPs run through one parametrised activation kernel: per op, the first
opset an EP takes, its attributes with their defaults, and the (activation name, a, b) those attributes give. Each EP
maps the names to its own kernel codes."""

UNARY = {
    "Relu": (6, {}, lambda at: ("relu", 0.0, 0.0)),
    "LeakyRelu": (6, {"alpha": 0.01}, lambda at: ("leaky", at["alpha"], 0.0)),
    "Sigmoid": (6, {}, lambda at: ("sigmoid", 0.0, 0.0)),
    "Tanh": (6, {}, lambda at: ("tanh", 0.0, 0.0)),
    "HardSigmoid": (6, {"alpha": 0.2, "beta": 0.5}, lambda at: ("hardsigmoid", at["alpha"], at["beta"])),
    "HardSwish": (14, {}, lambda at: ("hardswish", 0.0, 0.0)),
    "Elu": (6, {"alpha": 1.0}, lambda at: ("elu", at["alpha"], 0.0)),
    "Selu": (6, {"alpha": 1.67326319, "gamma": 1.05070102}, lambda at: ("selu", at["alpha"], at["gamma"])),
    "Exp": (6, {}, lambda at: ("exp", 0.0, 0.0)),
    "Sqrt": (6, {}, lambda at: ("sqrt", 0.0, 0.0)),
    "Erf": (9, {}, lambda at: ("erf", 0.0, 0.0)),
    "Abs": (6, {}, lambda at: ("abs", 0.0, 0.0)),
    "Neg": (6, {}, lambda at: ("neg", 0.0, 0.0)),
    "Gelu": (20, {"approximate": "none"},
             lambda at: {"none": ("gelu", 0.0, 0.0), "tanh": ("gelu_tanh", 0.0, 0.0)}.get(at["approximate"])),
    "Swish": (24, {"alpha": 1.0}, lambda at: ("swish", at["alpha"], 0.0)),
    "Clip": (6, {"min": -3.4028234663852886e+38, "max": 3.4028234663852886e+38},
             lambda at: ("clip", at["min"], at["max"])),
}


def unary_activation(op_type, opdef, attrs, supported):
    """(activation name, a, b) for a node of `op_type` with `attrs` under `opdef`, or None when the op, its opset,
    an attribute or the resulting activation (not in `supported`) is not one the EP runs this way."""
    entry = UNARY.get(op_type)
    if entry is None or (op_type == "Clip" and opdef.since >= 11):  # from 11 Clip's limits are inputs
        return None
    since, defaults, params = entry
    if opdef.since < since or set(attrs) - set(defaults):
        return None
    vals = {k: opdef.attrs.get(k, v) for k, v in defaults.items()}
    vals.update(attrs)
    p = params(vals)
    return p if p is not None and p[0] in supported else None
