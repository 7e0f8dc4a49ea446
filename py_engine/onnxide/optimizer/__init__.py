"""The graph optimizer shared by every EP: passes grouped by onnxruntime's levels (basic / extended / all).

Each pass is a function `(model) -> bool` (True when it changed the graph) that edits the main graph in place;
`optimize` repeats a level's passes until nothing changes. Fused ops are ordinary registered ops, so every EP
runs an optimized graph (the numpy kernels at least).
"""
from ..ir.infer import infer_shapes
from . import constant_folding, eliminate, fuse_conv, fuse_patterns, shape_values, transpose

BASIC = [eliminate.remove_identity_like, constant_folding.fold_constants, eliminate.remove_dead_nodes,
         eliminate.common_subexpressions, transpose.cancel_transposes, shape_values.simplify_reshape_targets]
EXTENDED = [fuse_conv.fold_batchnorm_into_conv, fuse_patterns.fuse_layernorm, fuse_patterns.fuse_gelu,
            fuse_patterns.fuse_matmul_add, fuse_conv.fuse_activation]


def passes_for(level):
    level = int(level)
    if level <= 0:
        return []
    return BASIC + (EXTENDED if level >= 2 else [])


def optimize(model, level, max_rounds=8):
    """Run the passes of `level` (ORT's GraphOptimizationLevel value) to a fixed point; returns the model."""
    passes = passes_for(level)
    infer_shapes(model)
    for _ in range(max_rounds):
        changed = False
        for p in passes:
            changed |= bool(p(model))
        if not changed:
            break
        infer_shapes(model)
    return model
