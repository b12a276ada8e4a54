"""What a contract's rules find, read from its module's source: each ``Finding(code, ...)``
its ``resolve`` (proposing) or its ``recheck`` (approving) can reach through the module's own
functions, with the parameters it fills. The tests hold the declared sentences against them."""

from __future__ import annotations

import ast
import inspect
from typing import Any, Literal

Stage = Literal["resolve", "recheck"]
_NOT_PARAMS = ("field", "message", "problem")


def _findings_in(node: ast.AST, stage: Stage) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for call in ast.walk(node):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in ("Finding", "RevisionNeededError")
        ):
            continue
        code = call.args[0]
        assert isinstance(code, ast.Constant | ast.JoinedStr), "a code is a literal"
        params = {k.arg for k in call.keywords if k.arg not in (None, *_NOT_PARAMS)}
        problem = next((k.value for k in call.keywords if k.arg == "problem"), None)
        said = problem if stage == "resolve" and problem is not None else code
        for name in _codes(said):
            found.setdefault(name, set()).update(params)
    return found


def _codes(node: ast.expr) -> set[str]:
    """The codes a literal names: ``f"unknown_{field}"`` stands for each of its fields."""
    if isinstance(node, ast.Constant):
        return {str(node.value)}
    if isinstance(node, ast.JoinedStr):
        return {"".join(str(v.value) if isinstance(v, ast.Constant) else "*" for v in node.values)}
    return set()


def _called(node: ast.AST) -> set[str]:
    return {
        call.func.id
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    }


def findings(contract: Any, stage: Stage) -> dict[str, set[str]]:
    """Each code ``stage`` can raise (a ``*`` in it stands for a field name) -> its params."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(type(contract))))
    functions = {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.col_offset == 0
    }
    method = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == stage and node.col_offset > 0
    )
    seen: set[str] = set()
    todo = [method]
    found: dict[str, set[str]] = {}
    while todo:
        node = todo.pop()
        for code, params in _findings_in(node, stage).items():
            found.setdefault(code, set()).update(params)
        for name in _called(node) - seen:
            seen.add(name)
            if name in functions:
                todo.append(functions[name])
    return found
