"""Turning a classifier into a module whose forward returns ``(penultimate, logits)``.

The penultimate features are the input of the final linear layer. Three generic ways to reach it, none
of which lists architectures:

- timm: ``forward_features`` then ``forward_head(pre_logits=True)`` (its documented contract);
- any ``nn.Module`` (torchvision): the ``nn.Linear`` whose output *is* the model's output, found by one
  probe forward on the meta device, read with a forward pre-hook;
- a ``torch.export`` program: the graph is rewired to also return the first argument of the linear
  node that produces the output (or of a node the user names).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx
from torch import nn

from zootriage.core.errors import PenultimateNotFound

_LINEAR_INPUT = {  # op -> position of its activation input; how export spells a linear layer
    torch.ops.aten.linear.default: 0,
    torch.ops.aten.addmm.default: 1,
    torch.ops.aten.mm.default: 0,
}
_PASS_THROUGH = {  # ops that only reshape the logits after the head
    torch.ops.aten.view.default,
    torch.ops.aten.reshape.default,
    torch.ops.aten.flatten.using_ints,
    torch.ops.aten.squeeze.dim,
    torch.ops.aten.squeeze.dims,
    torch.ops.aten.clone.default,
}


class TimmPenultimate(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        model: Any = self.model
        feats = model.forward_features(x)
        return model.forward_head(feats, pre_logits=True), model.forward_head(feats)


class HeadInputPenultimate(nn.Module):
    """Runs the whole model and keeps what entered ``head`` on the way."""

    def __init__(self, model: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.model = model
        self._seen: list[torch.Tensor] = []
        head.register_forward_pre_hook(self._keep)

    def _keep(self, _module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        self._seen.append(inputs[0])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self._seen.clear()
        logits = self.model(x)
        if len(self._seen) != 1:
            raise PenultimateNotFound(f"the head layer ran {len(self._seen)} times in one forward")
        return self._seen.pop().flatten(1), logits


def find_output_linear(model: nn.Module, input_shape: tuple[int, ...]) -> str:
    """Qualified name of the ``nn.Linear`` whose output is returned by ``model`` (the classifier head).

    The probe runs on the meta device (on a copy when ``model`` holds real weights), so it computes
    nothing.
    """
    on_meta = all(p.is_meta for p in model.parameters())
    probe = model if on_meta else _meta_copy(model)
    outputs: dict[int, str] = {}
    handles = [
        module.register_forward_hook(lambda _m, _i, out, name=name: outputs.__setitem__(id(out), name))
        for name, module in probe.named_modules()
        if isinstance(module, nn.Linear)
    ]
    try:
        with torch.no_grad():
            result = probe(torch.empty((1, *input_shape), device="meta"))
    finally:
        for handle in handles:
            handle.remove()
    if not isinstance(result, torch.Tensor) or id(result) not in outputs:
        raise PenultimateNotFound(
            f"{type(model).__name__}: its output is not produced by an nn.Linear layer, so there is no "
            "penultimate layer to read"
        )
    return outputs[id(result)]


def _meta_copy(model: nn.Module) -> nn.Module:
    import copy

    with torch.device("meta"):
        clone = copy.deepcopy(model).to("meta")
    return clone.eval()


def exported_penultimate(
    program: torch.export.ExportedProgram, node_name: str | None = None
) -> tuple[fx.GraphModule, str]:
    """A module returning ``(penultimate, logits)`` from an exported classifier, and the node used.

    Logits are the program's first output. With no ``node_name`` the penultimate node is the activation
    input of the linear op that produces them (looking through reshapes); otherwise the named node.
    """
    module = program.module()
    graph = module.graph
    output = next(n for n in graph.nodes if n.op == "output")
    flat = output.args[0]
    logits = flat[0] if isinstance(flat, (tuple, list)) else flat
    if not isinstance(logits, fx.Node):
        raise PenultimateNotFound("the exported program's first output is not a tensor")
    if node_name is None:
        penultimate = _linear_input(logits)
    else:
        named = {n.name: n for n in graph.nodes}
        if node_name not in named:
            names = ", ".join(n.name for n in graph.nodes if n.op == "call_function")
            raise PenultimateNotFound(f"no node named {node_name!r} in the program (nodes: {names})")
        penultimate = named[node_name]
    output.args = ((penultimate, logits),)
    graph._codegen = fx.graph.CodeGen()  # plain tuple output instead of the program's pytree spec
    module.recompile()
    return module, penultimate.name


def _linear_input(node: fx.Node) -> fx.Node:
    seen = node
    while seen.op == "call_function" and seen.target in _PASS_THROUGH:
        seen = seen.args[0]  # type: ignore[assignment]
    if seen.op == "call_function" and seen.target in _LINEAR_INPUT:
        found = seen.args[_LINEAR_INPUT[seen.target]]
        if isinstance(found, fx.Node):
            return found
    raise PenultimateNotFound(
        f"the program's output comes from {seen.name!r} ({seen.target}), not a linear layer; "
        "name the penultimate node explicitly"
    )
