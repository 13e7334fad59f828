"""Gemini's streamed function-call arguments (``partialArgs`` on Vertex AI).

A call opened with ``willContinue`` receives its arguments as a list of updates, each a
simple JSON path (``$.a.b[0]``) and one value; a string value may continue in the next
update. Folded here into the call's argument object.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


@dataclass
class PartialCall:
    """A function call whose arguments arrive as ``partialArgs`` (Vertex AI)."""

    key: tuple[str, int]
    args: JSON = field(default_factory=dict)
    open_strings: set[str] = field(default_factory=set)
    sent: str = ""  # argument text already streamed as deltas
    diverged: bool = False  # an update rewrote text already sent: replace at the end


_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[\s*'((?:[^'\\]|\\.)*)'\s*\]|\[\s*\"((?:[^\"\\]|\\.)*)\"\s*\]")


def parse_json_path(path: str) -> list[str | int] | None:
    """Steps of a simple RFC 9535 path (``$.a.b[0]['c d']``); ``None`` if not one."""
    if not path.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_STEP.match(path, pos)
        if match is None:
            return None
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(name if name is not None else single if single is not None else double)
        pos = match.end()
    return steps


def _partial_value(arg: Any) -> tuple[bool, Any]:
    if arg.string_value is not None:
        return True, arg.string_value
    if arg.bool_value is not None:
        return True, bool(arg.bool_value)
    if arg.number_value is not None:
        number = float(arg.number_value)
        return True, int(number) if number.is_integer() else number
    if arg.null_value is not None:
        return True, None
    return False, None


def apply_partial_args(call: PartialCall, partial_args: list[Any]) -> bool:
    """Fold ``partialArgs`` into ``call.args``; whether the last one left a string open."""
    last_open = False
    for arg in partial_args:
        path = arg.json_path or ""
        steps = parse_json_path(path)
        present, value = _partial_value(arg)
        if not steps or not present:
            last_open = False
            continue
        append = isinstance(value, str) and path in call.open_strings
        _assign(call.args, steps, value, append)
        if isinstance(value, str) and arg.will_continue:
            call.open_strings.add(path)
            last_open = True
        else:
            call.open_strings.discard(path)
            last_open = False
    return last_open


def _assign(root: JSON, steps: list[str | int], value: Any, append: bool) -> None:
    node: Any = root
    for step, following in itertools.pairwise(steps):
        empty: Any = [] if isinstance(following, int) else {}
        node = _child(node, step, empty)
        if node is None:
            return
    last = steps[-1]
    if isinstance(last, int):
        if not isinstance(node, list):
            return
        node.extend([None] * (last + 1 - len(node)))
        current = node[last]
    else:
        if not isinstance(node, dict):
            return
        current = node.get(last)
    if append and isinstance(current, str):
        value = current + value
    node[last] = value


def _child(node: Any, step: str | int, empty: Any) -> Any:
    if isinstance(step, int):
        if not isinstance(node, list):
            return None
        node.extend([None] * (step + 1 - len(node)))
        if not isinstance(node[step], type(empty)):
            node[step] = empty
        return node[step]
    if not isinstance(node, dict):
        return None
    if not isinstance(node.get(step), type(empty)):
        node[step] = empty
    return node[step]
