"""The ``script`` tool's child process: run the model's code, report its outcome to heron.

The code is heron's first message on the tool channel (never a file or an argument). It
runs as the body of a function, so ``return value`` ends it with that value, and a last
line that is an expression is returned too (as in a notebook). The value goes back to
heron as JSON; an exception goes back as the last frames of its traceback, the frames of
this runner and of :mod:`heron_tools` left out. Standard library only.
"""

from __future__ import annotations

import ast
import builtins
import json
import linecache
import os
import sys
import traceback
from typing import Any

import heron_tools  # type: ignore[import-not-found]  # a sibling on the child's sys.path, not a heron module

FILENAME = "<script>"
FUNCTION = "__heron_script__"
MAX_FRAMES = 6
_HERE = os.path.dirname(os.path.abspath(__file__))


def _compile(code: str) -> Any:
    """The code as the body of one function; star imports (not allowed in a function) stay
    at module level, before it."""
    tree = ast.parse(code, FILENAME)
    hoisted = [n for n in tree.body if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
    body = [n for n in tree.body if n not in hoisted]
    if body and isinstance(body[-1], ast.Expr):
        last = body[-1]
        body[-1] = ast.copy_location(ast.Return(value=last.value), last)
    function = ast.parse(f"def {FUNCTION}():\n    pass\n").body[0]
    assert isinstance(function, ast.FunctionDef)
    function.body = body or [ast.Pass()]
    module = ast.Module(body=[*hoisted, function], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, FILENAME, "exec")


def _traceback(exc: BaseException) -> str:
    """The traceback without this runner's frames and heron_tools', at most the last few."""
    summary = traceback.TracebackException.from_exception(exc)
    frames = [f for f in summary.stack if os.path.dirname(os.path.abspath(f.filename)) != _HERE]
    for frame in frames:
        if frame.filename == FILENAME and frame.name == FUNCTION:
            frame.name = "<module>"  # the script's top level, as the model wrote it
    dropped = max(0, len(frames) - MAX_FRAMES)
    summary.stack = traceback.StackSummary.from_list(frames[-MAX_FRAMES:])
    text = "".join(summary.format())
    if dropped:
        text = text.replace("Traceback (most recent call last):\n", f"Traceback (last {MAX_FRAMES} frames):\n", 1)
    return text.rstrip("\n")


def _run(code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    try:
        compiled = _compile(code)
    except SyntaxError as exc:
        return {"type": "error", "kind": "syntax", "traceback": "".join(traceback.format_exception_only(exc)).rstrip()}
    try:
        exec(compiled, namespace)
        value = namespace[FUNCTION]()
    except SystemExit as exc:
        if exc.code in (None, 0):
            return {"type": "result", "returned": False}
        return {"type": "error", "kind": "exit", "traceback": f"The script called sys.exit({exc.code!r})"}
    except BaseException as exc:  # noqa: BLE001 - everything the script raised is its result
        return {"type": "error", "kind": "exception", "traceback": _traceback(exc)}
    if value is None:
        return {"type": "result", "returned": False}
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return {
            "type": "error",
            "kind": "return",
            "traceback": f"The script's return value ({type(value).__name__}) cannot be given back as JSON: {exc}. "
            "Return numbers, strings, lists and dicts of them (or str(value)).",
        }
    return {"type": "result", "returned": True, "value": value}


def main() -> None:
    start = heron_tools.connect()
    code = str(start.get("code", ""))
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(keepends=True), FILENAME)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    namespace.update(heron_tools.functions())
    outcome = _run(code, namespace)
    sys.stdout.flush()
    sys.stderr.flush()
    heron_tools.finish(outcome)


if __name__ == "__main__":
    main()
