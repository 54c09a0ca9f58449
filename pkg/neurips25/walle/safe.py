"""Validate and run generated rule code safely (section 5 of the chapter).

In WALL-E an LLM writes each learned rule as a Python function that the agent then executes. Executing
model-written code is executing untrusted code, so before anything runs we

1. bound the source size and parse it with :mod:`ast` (no execution);
2. walk every node and allow only a whitelist: one function ``def rule_x(state, action)`` made of
   ``if``/``return``/comparisons/boolean logic/constants/subscripts, ``dict.get`` and a few pure builtins —
   no imports, loops, lambdas, comprehensions, classes, ``with``/``try``, no arithmetic (``x = x + x``
   repeated would build exponentially large values), no names or attributes with
   underscores (which closes the ``().__class__.__bases__[0].__subclasses__()`` escape), no ``open``/``eval``;
3. ``exec`` the checked tree with restricted globals (a tiny ``__builtins__``), in a fresh namespace;
4. call the function under a line-step limit (``sys.settrace``), on copies of the state.

Loop-free whitelisted code cannot run long, so (4) is defence in depth for anything the whitelist missed.
Python-level sandboxes are not a security boundary against a determined attacker; a real deployment would
also isolate the process. Here the point is that nothing the learner emits runs unchecked.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any, Callable

from ..runtime import check_int

__all__ = ["UnsafeCodeError", "RuleTimeoutError", "CodeRule", "validate_rule_source", "compile_rule",
           "call_limited", "SAFE_BUILTINS"]

SAFE_BUILTINS = {"len": len, "min": min, "max": max, "int": int}
ALLOWED_NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.If, ast.Expr, ast.Assign,
    ast.Compare, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
    ast.Name, ast.Load, ast.Store, ast.Constant, ast.Subscript, ast.Attribute, ast.Call, ast.Dict, ast.Tuple,
    ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.In, ast.NotIn,
)
ALLOWED_ATTRS = {"get"}
RULE_ARGS = ["state", "action"]


class UnsafeCodeError(ValueError):
    """Generated code was refused before execution."""


class RuleTimeoutError(RuntimeError):
    """A rule exceeded its step limit while running."""


@dataclass(frozen=True)
class CodeRule:
    """A validated, executable rule: its name, its source and the compiled function."""

    name: str
    source: str
    fn: Callable[..., Any]

    def __call__(self, state: dict, action: str, max_steps: int | None = 200):
        state = {"inventory": dict(state["inventory"]), "near": tuple(state["near"])}  # rules get copies
        if max_steps is None:
            return self.fn(state, action)
        return call_limited(self.fn, (state, action), max_steps)


def _refuse(node: ast.AST, why: str):
    line = getattr(node, "lineno", "?")
    raise UnsafeCodeError(f"rule source refused (line {line}): {why}")


def validate_rule_source(source: str, max_chars: int = 2000, max_nodes: int = 400) -> tuple[ast.Module, str]:
    """Parse ``source`` and check it against the whitelist; return (tree, function name) or raise
    :class:`UnsafeCodeError` naming the offending construct."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if len(source) > max_chars:
        raise UnsafeCodeError(f"rule source refused: {len(source)} characters > max_chars={max_chars}")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as e:
        raise UnsafeCodeError(f"rule source refused: syntax error: {e.msg} (line {e.lineno})") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > max_nodes:
        raise UnsafeCodeError(f"rule source refused: {len(nodes)} AST nodes > max_nodes={max_nodes}")
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef):
        _refuse(tree, "the module must define exactly one function and nothing else")
    fdef = body[0]
    a = fdef.args
    if ([x.arg for x in a.args] != RULE_ARGS or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs
            or a.defaults or fdef.decorator_list or fdef.returns):
        _refuse(fdef, f"the function signature must be exactly ({', '.join(RULE_ARGS)}) with no decorators")
    local = set(RULE_ARGS) | {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for n in nodes:
        if not isinstance(n, ALLOWED_NODES):
            _refuse(n, f"node type {type(n).__name__} is not allowed")
        if isinstance(n, ast.FunctionDef) and n is not fdef:
            _refuse(n, "nested functions are not allowed")
        if isinstance(n, ast.Name):
            if n.id.startswith("_"):
                _refuse(n, f"name {n.id!r} starts with an underscore")
            if n.id not in local and n.id not in SAFE_BUILTINS:
                _refuse(n, f"name {n.id!r} is not allowed (only arguments, locals and {sorted(SAFE_BUILTINS)})")
        if isinstance(n, ast.Attribute) and n.attr not in ALLOWED_ATTRS:
            _refuse(n, f"attribute {n.attr!r} is not allowed (only {sorted(ALLOWED_ATTRS)})")
        if isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)) and len(n.value) > 200:
            _refuse(n, "string constants longer than 200 characters are not allowed")
    for n in nodes:  # second pass, so that a bad name inside a call is reported as such
        if isinstance(n, ast.Call):
            ok = (isinstance(n.func, ast.Name) and n.func.id in SAFE_BUILTINS) or (
                isinstance(n.func, ast.Attribute) and n.func.attr in ALLOWED_ATTRS)
            if not ok or n.keywords:
                _refuse(n, "only dict.get(...) and the safe builtins may be called, without keywords")
    if fdef.name.startswith("_"):
        _refuse(fdef, f"function name {fdef.name!r} starts with an underscore")
    return tree, fdef.name


def compile_rule(source: str, **limits: int) -> CodeRule:
    """Validate ``source`` (see :func:`validate_rule_source`), then exec it with restricted globals."""
    tree, name = validate_rule_source(source, **limits)
    namespace: dict[str, Any] = {"__builtins__": dict(SAFE_BUILTINS)}
    exec(compile(tree, f"<rule {name}>", "exec"), namespace)  # noqa: S102 - validated tree, restricted globals
    return CodeRule(name, source, namespace[name])


def call_limited(fn: Callable[..., Any], args: tuple, max_steps: int = 200):
    """Call ``fn(*args)``, raising :class:`RuleTimeoutError` after ``max_steps`` traced line events."""
    max_steps = check_int(max_steps, "max_steps")
    steps = 0

    def tracer(frame, event, arg):
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > max_steps:
                raise RuleTimeoutError(f"rule exceeded max_steps={max_steps} line events")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return fn(*args)
    finally:
        sys.settrace(previous)
