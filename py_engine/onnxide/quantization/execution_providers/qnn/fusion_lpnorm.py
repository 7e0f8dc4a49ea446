"""ReduceL2 → Clip(min ε) → [Expand] → Div(x, ·) becomes LpNormalization(x, axis, p=2) (QNN has no ReduceL2)."""

from ....proto.onnx_api import helper
from ...fusions import Fusion


class FusionLpNormalization(Fusion):
    def __init__(self, model):
        super().__init__(model, "LpNormalization", "ReduceL2")

    def fuse(self, rl2, input_name_to_nodes, output_name_to_node):
        x = rl2.input[0]
        keepdims = next((a.i for a in rl2.attribute if a.name == "keepdims"), 1)
        attr = next((a for a in rl2.attribute if a.name == "axes"), None)
        axes = list(attr.ints) if attr is not None else None
        if axes is None and len(rl2.input) > 1 and rl2.input[1]:
            v = self.constant(rl2.input[1])
            axes = None if v is None else [int(a) for a in v.ravel()]
        if not keepdims or axes is None or len(axes) != 1:
            return
        clip = self.only_child(rl2.output[0], "Clip", input_name_to_nodes)
        if clip is None or len(clip.input) < 2 or self.constant(clip.input[1]) is None \
                or (len(clip.input) > 2 and clip.input[2]):
            return
        chain, tail = [rl2, clip], clip.output[0]
        expand = self.only_child(tail, "Expand", input_name_to_nodes)
        if expand is not None:
            chain.append(expand)
            tail = expand.output[0]
        div = self.only_child(tail, "Div", input_name_to_nodes)
        if div is None or list(div.input) != [x, tail]:
            return
        chain.append(div)
        self.nodes_to_remove.extend(chain)
        self.nodes_to_add.append(helper.make_node("LpNormalization", [x], [div.output[0]],
                                                  name=self.create_unique_node_name(), axis=axes[0], p=2))
