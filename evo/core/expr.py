"""A tiny, safe integer expression language for launch declarations.

Model output is never passed to `eval`: the text is parsed with `ast` and only the node types
below are interpreted. Names are the variables given by the caller (M, N, K, num_sms);
functions are cdiv, min, max. Division is integer (floor) division.
"""
from __future__ import annotations

import ast
import operator
import threading
from collections.abc import Callable

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


_FUNCS: dict[str, Callable[..., int]] = {"cdiv": _cdiv, "min": min, "max": max}
MAX_TEXT = 400
_PARSE_LOCK = threading.Lock()


class ExprError(ValueError):
    pass


class Expr:
    """A parsed expression; `evaluate(env)` returns an int (or bool for comparisons)."""

    def __init__(self, text: str, *, names: frozenset[str]):
        text = text.strip().replace("&&", " and ").replace("||", " or ")
        if not text:
            raise ExprError("empty expression")
        if len(text) > MAX_TEXT:
            raise ExprError(f"expression longer than {MAX_TEXT} characters")
        try:
            with _PARSE_LOCK:  # CPython 3.11's parser is not safe to run on several threads at once
                tree = ast.parse(text, mode="eval")
        except SyntaxError as e:
            raise ExprError(f"cannot parse {text!r}: {e.msg}") from None
        self.text = text
        self._tree = tree.body
        self._check(self._tree, names)

    def _check(self, node: ast.AST, names: frozenset[str]) -> None:
        if isinstance(node, ast.Constant):
            if type(node.value) is not int:
                raise ExprError(f"only integer constants are allowed, got {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id not in names:
                raise ExprError(f"unknown name {node.id!r} (allowed: {', '.join(sorted(names))})")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise ExprError(f"operator {type(node.op).__name__} is not allowed")
            self._check(node.left, names)
            self._check(node.right, names)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
                raise ExprError(f"operator {type(node.op).__name__} is not allowed")
            self._check(node.operand, names)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self._check(v, names)
        elif isinstance(node, ast.Compare):
            if any(type(op) not in _CMPOPS for op in node.ops):
                raise ExprError("only ==, !=, <, <=, >, >= comparisons are allowed")
            self._check(node.left, names)
            for c in node.comparators:
                self._check(c, names)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
                raise ExprError(f"only the functions {', '.join(_FUNCS)} may be called")
            if len(node.args) < 2 or (node.func.id == "cdiv" and len(node.args) != 2):
                raise ExprError(f"{node.func.id} takes two arguments")
            for a in node.args:
                self._check(a, names)
        else:
            raise ExprError(f"{type(node).__name__} is not allowed in a launch expression")

    def evaluate(self, env: dict[str, int]) -> int:
        return self._eval(self._tree, env)

    def _eval(self, node: ast.AST, env: dict[str, int]):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, env), self._eval(node.right, env)
            if isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod)) and right == 0:
                raise ExprError(f"division by zero in {self.text!r}")
            if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= right < 64:
                raise ExprError(f"shift out of range in {self.text!r}")
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, env)
            if isinstance(node.op, ast.Not):
                return not value
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BoolOp):
            values = (self._eval(v, env) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, env)
            for op, comp in zip(node.ops, node.comparators):
                right = self._eval(comp, env)
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [self._eval(a, env) for a in node.args]
            if node.func.id == "cdiv" and args[1] == 0:
                raise ExprError(f"cdiv by zero in {self.text!r}")
            return _FUNCS[node.func.id](*args)
        raise AssertionError("checked at parse time")
