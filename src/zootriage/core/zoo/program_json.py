"""Static checks of the JSON a ``.pt2`` program carries, before torch ever reads it.

``torch.export.load`` turns two kinds of strings into code:

- shape expressions (``expr_str``) go through ``sympy.sympify``, which evaluates Python. We accept
  only the grammar torch writes: integers, symbol names (``s0``, ``u3``), ``Symbol('s0', <boolean
  assumptions>)``, ``+ - * // % **``, unary minus, comparisons, parentheses and calls of a few sympy
  functions (``Min``, ``Max``, ...), checked by walking the ``ast`` (never evaluated);
- node targets resolve by ``getattr`` from ``torch``, ``_operator`` or ``math`` and are called when
  the graph runs: ``torch.os.system`` would resolve. We accept operator overloads under
  ``torch.ops.{aten,prims,higher_order}``, and ``_operator``/``math`` functions by name.

Everything else in the JSON is data to torch; the schema checks here bound its shape (depth, string
lengths) and the payload configs (which member each tensor comes from, and that none is a pickled
Python object).
"""

from __future__ import annotations

import ast
import re
from typing import Any

MAX_EXPR_CHARS = 2000
MAX_DEPTH = 200
SYMBOL = re.compile(r"^[a-z]{1,8}[0-9]{1,9}$")
_SYMPY_FUNCTIONS = frozenset(
    {
        "Min", "Max", "FloorDiv", "Mod", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt",
        "ModularIndexing", "TruncToInt", "IntTrueDiv", "Abs", "Eq", "Ne",
    }
)
_ASSUMPTIONS = frozenset({"positive", "integer", "nonnegative", "real", "finite", "negative", "nonpositive"})
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.Div)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_TARGET = re.compile(
    r"^(torch\.ops\.(aten|prims|higher_order)\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?"
    r"|_operator\.[a-z_]+|math\.[a-z_0-9]+)$"
)
_DENIED_OPS = frozenset({"from_file", "_load"})  # aten ops that read files named by the graph


class UnsafeProgram(Exception):
    """The program's JSON holds something torch would evaluate or resolve outside the grammar."""


def check_expression(text: str) -> None:
    """Refuse a shape expression outside the grammar (see the module docstring)."""
    if not isinstance(text, str) or len(text) > MAX_EXPR_CHARS:
        raise UnsafeProgram("a shape expression that is not a short string")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise UnsafeProgram(f"a shape expression that does not parse: {text[:80]!r}") from exc
    _check_node(tree.body, text, 0)


def _check_node(node: ast.AST, text: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UnsafeProgram("a shape expression nested too deeply")
    if isinstance(node, ast.Constant) and type(node.value) in (int, bool):
        return
    if isinstance(node, ast.Name) and (SYMBOL.match(node.id) or node.id in _SYMPY_FUNCTIONS):
        return
    children: list[ast.AST]
    if isinstance(node, ast.BinOp) and isinstance(node.op, _BINOPS):
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        children = [node.operand]
    elif isinstance(node, ast.Compare) and all(isinstance(op, _COMPARE) for op in node.ops):
        children = [node.left, *node.comparators]
    elif (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SYMPY_FUNCTIONS
        and not node.keywords
    ):
        children = list(node.args)
    elif _is_symbol_call(node):
        return
    else:
        raise UnsafeProgram(f"a shape expression outside the allowed grammar: {text[:80]!r}")
    for child in children:
        _check_node(child, text, depth + 1)


def _is_symbol_call(node: ast.AST) -> bool:
    """``Symbol('s77', positive=True, integer=True)``: how torch writes a bare symbol with assumptions."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Symbol"
        and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str) and bool(SYMBOL.match(node.args[0].value))
        and all(
            k.arg in _ASSUMPTIONS and isinstance(k.value, ast.Constant) and type(k.value.value) is bool
            for k in node.keywords
        )
    )


def check_target(target: str) -> None:
    if not isinstance(target, str) or not _TARGET.match(target):
        raise UnsafeProgram(f"a graph node calls {str(target)[:80]!r}, which is not an operator")
    parts = target.split(".")
    if parts[0] == "torch" and parts[3] in _DENIED_OPS:  # the pattern gives torch.ops.<ns>.<op>
        raise UnsafeProgram(f"a graph node calls {target}, which reads files")


def check_model_json(data: Any) -> None:
    """Every shape expression, range-constraint symbol and node target in a serialized program."""
    if not isinstance(data, dict) or "graph_module" not in data:
        raise UnsafeProgram("models/*.json is not a serialized exported program")
    _walk(data, 0)


def _walk(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UnsafeProgram("the program's JSON is nested too deeply")
    if isinstance(value, list):
        for item in value:
            _walk(item, depth + 1)
        return
    if not isinstance(value, dict):
        return
    for key, item in value.items():
        if key == "expr_str":
            check_expression(item)
        elif key == "range_constraints":
            if not isinstance(item, dict) or not all(SYMBOL.match(str(k)) for k in item):
                raise UnsafeProgram("range constraints on something that is not a symbol")
        elif key == "target" and isinstance(item, str):
            check_target(item)
        elif key in ("as_custom_obj", "custom_obj") and item:
            raise UnsafeProgram("the program uses a custom (script) object, which is pickled code")
        _walk(item, depth + 1)


def payload_members(config: Any, kind: str, prefix: str) -> dict[str, bool]:
    """``{member file name: pickled?}`` from a weights or constants config, checked against its schema.

    Constants that are custom or opaque objects (``custom_obj_*``, ``opaque_obj_*``) are Python pickles
    of arbitrary classes: refused.
    """
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        raise UnsafeProgram(f"the {kind} config is not {{'config': {{...}}}}")
    members: dict[str, bool] = {}
    for fqn, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("path_name"), str):
            raise UnsafeProgram(f"the {kind} config entry {str(fqn)[:80]!r} has no path_name")
        name, pickled = entry["path_name"], entry.get("use_pickle", False)
        if not re.fullmatch(prefix + r"[0-9]{1,9}", name):
            raise UnsafeProgram(f"the {kind} {str(fqn)[:80]!r} is stored as {name[:80]!r}, not a tensor")
        if not isinstance(pickled, bool):
            raise UnsafeProgram(f"the {kind} config entry {str(fqn)[:80]!r} has a non-boolean use_pickle")
        _walk(entry.get("tensor_meta"), 0)
        members[name] = members.get(name, False) or pickled
    return members
