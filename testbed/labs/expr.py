"""The two small languages of a questions file: paths into a result, and expressions over them.

A path walks a result's JSON: `figures.dual_tor.loss`; a number indexes a list
(`figures.rows.0.M`); `rows[M=4]` picks the element of the list `rows` whose `M` is 4 (so a
question still finds its row whatever M values the student ran).

An expression is Python's arithmetic, comparisons and `a if c else b` over the question's
variables and a few functions (abs, min, max, round, len, sum, values); nothing else is
evaluated, so a questions file cannot run code.
"""
from __future__ import annotations

import ast
import operator
import re

SELECT = re.compile(r"^(?P<key>[^\[\]]+)\[(?P<field>[^=\]]+)=(?P<value>[^\]]+)\]$")
BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.Pow: operator.pow}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}
FUNCTIONS = {"abs": abs, "min": min, "max": max, "round": round, "len": len, "sum": sum,
             "values": lambda d: list(d.values())}


class Missing(LookupError):
    """A path that does not exist in the result (the student ran something else)."""


def lookup(data, path: str):
    """The value at `path` in `data` (Missing if there is none)."""
    here = data
    for part in path.split("."):
        chosen = SELECT.match(part)
        key = chosen["key"] if chosen else part
        here = _step(here, key, path)
        if chosen:
            rows = [r for r in here if isinstance(r, dict) and str(r.get(chosen["field"])) == chosen["value"]]
            if not rows:
                raise Missing(f"{path}: no element with {chosen['field']}={chosen['value']}")
            here = rows[0]
    return here


def _step(here, key: str, path: str):
    if isinstance(here, dict) and key in here:
        return here[key]
    if isinstance(here, list) and key.lstrip("-").isdigit() and -len(here) <= int(key) < len(here):
        return here[int(key)]
    raise Missing(f"{path}: no {key!r}")


def parse(text: str) -> ast.Expression:
    """Parse and check an expression (ValueError on anything outside the small language)."""
    tree = ast.parse(text, mode="eval")
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Name,
               ast.Load, ast.Constant, ast.Call, ast.And, ast.Or, ast.List, ast.Tuple,
               *BINARY, *UNARY, *COMPARE)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise ValueError(f"{type(node).__name__} is not allowed in {text!r}")  # noqa: TRY004
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
            raise ValueError(f"only {', '.join(FUNCTIONS)} may be called in {text!r}")
    return tree


def names(text: str) -> set[str]:
    """The variables an expression reads."""
    calls = {n.func.id for n in ast.walk(parse(text)) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name)} - calls


def evaluate(text: str, variables: dict):
    return _eval(parse(text).body, variables)


def _eval(node, env):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.BinOp):
        return BINARY[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp):
        return UNARY[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, env)
            if not COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, env) for a in node.args])
    raise ValueError(f"cannot evaluate {type(node).__name__}")
