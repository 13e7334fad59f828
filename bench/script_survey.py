"""The 20-file survey with plain tool calls and with one ``script`` call (issue 30).

The task: count the functions in each of 20 Python files and report the three largest.
A scripted model (the faux provider) does it twice in a real ``CodingSession`` (every
tool, permission check and budget of the runtime in the path):

* **plain**: one answer with 20 ``read`` calls; every file's text comes back as a result;
* **script**: one ``script`` call whose Python reads the 20 files through ``read`` (the
  same tool, through the same permission and hook path) and returns the three largest.

The model's answer is computed from what each request carried (the files' texts, or the
script's return value), so both runs must give the same answer. Reported: the size of the
next request (the one after the tool results, which the model answers from) - all of it
and its messages alone - and how much smaller it is with ``script``. ``--quick``: 5
files of fewer functions (CI proves the script runs).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, table, write_json
from heron.ai.providers.faux import FauxProvider, FauxReply, serialise_request, text
from heron.ai.registry import unregister_provider
from heron.ai.types import Context, ToolCall, ToolResultMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.session.store import SessionStore

SURVEY = """\
counts = {}
for i in range(FILES):
    name = f"src/module_{i:02d}.py"
    counts[name] = sum(1 for line in read(name).splitlines() if line.startswith("def "))
top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
print(f"surveyed {len(counts)} files")
top
"""


def make_project(root: Path, files: int, scale: int) -> None:
    """``files`` modules of 8 to at most 8 + 3*scale functions each (deterministic sizes)."""
    src = root / "src"
    src.mkdir(parents=True)
    for i in range(files):
        functions = 8 + (i * 7) % (3 * scale + 1)
        body = "".join(
            f'def handler_{i}_{n}(request, context=None):\n    """Handle case {n} of module {i}."""\n'
            f"    value = request.get('field_{n}', {n})\n    return context or value * {n + 1}\n\n\n"
            for n in range(functions)
        )
        (src / f"module_{i:02d}.py").write_text(body)


def answer_from(results: list[ToolResultMessage]) -> str:
    """The model's answer from what it was sent: the read texts, or the script's return value."""
    if len(results) == 1 and results[0].tool_name == "script":
        top = json.loads(results[0].text().split("Return value:\n", 1)[1])
    else:
        counts: dict[str, int] = {}
        for result in results:  # a read's details name the file it read
            counts[result.details["path"]] = len(re.findall(r"(?m)^def ", result.text()))
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return "; ".join(f"{name}: {count}" for name, count in top)


async def run(root: Path, files: int, mode: str) -> dict[str, Any]:
    faux = FauxProvider.install("faux-bench-survey")
    try:
        if mode == "plain":
            paths = [f"src/module_{i:02d}.py" for i in range(files)]
            calls = [ToolCall(id=f"r{i}", name="read", arguments={"path": path}) for i, path in enumerate(paths)]
        else:
            calls = [ToolCall(id="s1", name="script", arguments={"code": SURVEY.replace("FILES", str(files))})]
        requests: list[Context] = []
        answers: list[str] = []

        def reply(context: Context) -> FauxReply:
            requests.append(context)
            if len(requests) == 1:
                return FauxReply(content=calls)
            results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
            answers.append(answer_from(results))
            return text(answers[-1])

        faux.set_fallback(reply)
        store = SessionStore.create(root)
        session = CodingSession(cwd=root, model=faux.model(), store=store, settings=settings_from_dict({}))
        started = time.monotonic()
        await session.prompt(f"Count the functions in each of the {files} files in src/ and name the three largest.")
        elapsed = time.monotonic() - started
        next_request = requests[1]
        whole = serialise_request(next_request)
        fixed = serialise_request(Context(system_prompt=next_request.system_prompt, tools=next_request.tools))
        return {
            "answer": answers[0],
            "request_chars": len(whole),
            "request_tokens": len(whole) // 4,
            "message_chars": len(whole) - len(fixed),
            "wall_s": round(elapsed, 3),
        }
    finally:
        unregister_provider("faux-bench-survey")


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    files, scale = (5, 3) if args.quick else (20, 40)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HERON_HOME"] = str(Path(tmp) / "home")
        for mode in ("plain", "script"):
            root = Path(tmp) / mode
            make_project(root, files, scale)
            results[mode] = asyncio.run(run(root, files, mode))
    plain, script = results["plain"], results["script"]
    if plain["answer"] != script["answer"]:
        raise SystemExit(f"the answers differ: {plain['answer']!r} vs {script['answer']!r}")
    smaller = 1 - script["request_chars"] / plain["request_chars"]
    smaller_messages = 1 - script["message_chars"] / plain["message_chars"]
    rows = [
        [mode, r["request_chars"], r["request_tokens"], r["message_chars"], f"{r['wall_s']:.2f}"]
        for mode, r in results.items()
    ]
    print(f"{files} files; the answer (both): {plain['answer']}")
    print(table(["survey", "next request chars", "~tokens", "of which messages", "wall s"], rows))
    print(f"next request {smaller:.1%} smaller with script (its messages {smaller_messages:.1%} smaller)")
    data = {"files": files, "runs": results, "request_smaller": smaller, "messages_smaller": smaller_messages}
    print(f"wrote {write_json('script_survey', data, args.json, args.quick)}")


if __name__ == "__main__":
    main()
