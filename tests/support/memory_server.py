"""A scripted chat-completions server for project memory's end-to-end tests (docs/memory.md).

Every answer is a function of the request, so a process per turn and one process get the
same answers. It plays:

* the pre-compaction flush: a ``write`` of one note (named after the last prompt, with the
  key heron uses when ``secret`` is set), then "Saved.";
* a reflection: one request writing a merged ``MEMORY.md`` and two notes empty (a
  duplicate and a contradicted one), then ``CONFIRMED: build.md``; held until
  ``release_reflection`` is set, or never answered when ``hang_reflection`` (with
  ``hang_after_writes``, only its second request is never answered: the writes are done);
* a compaction's summary request: a short summary;
* an ordinary prompt: a long answer (``long_answers``) or, when ``writes`` names the memory
  directory, a ``write`` of ``deploy.md`` there and then a short answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from heron.coding.memory import FLUSH_PROMPT
from heron.coding.memory_reflect import REFLECT_PROMPT
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sse import openai_reply
from tests.support.summaries import is_summary_body

FLUSH_MARK = FLUSH_PROMPT.split("]", 1)[0]
REFLECT_MARK = REFLECT_PROMPT.split("]", 1)[0]
LONG = "Thinking it through carefully, step by step, with all the details. " * 110  # ~7.5k chars


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else json.dumps(content)


def seed_notes(memory: Path) -> None:
    """An index and four notes: two say the same thing, one the session will contradict."""
    memory.mkdir(parents=True, exist_ok=True)
    index = "# Memory\n- [build](build.md)\n- [tests](tests.md)\n- [tests again](tests-copy.md)\n- [nose](nose.md)\n"
    (memory / "MEMORY.md").write_text(index)
    (memory / "build.md").write_text("make build\n")
    (memory / "tests.md").write_text("run pytest -q\n")
    (memory / "tests-copy.md").write_text("run pytest -q\n")
    (memory / "nose.md").write_text("the tests run with nose\n")


class MemoryServer:
    def __init__(
        self,
        *,
        writes: Path | None = None,
        secret: str = "",
        hang_reflection: bool = False,
        hang_after_writes: bool = False,
    ) -> None:
        self.writes, self.secret, self.hang_reflection = writes, secret, hang_reflection
        self.hang_after_writes = hang_after_writes
        self.reflection_wrote = threading.Event()  # the pass's second request came: its writes are done
        self.bodies: list[dict[str, Any]] = []
        self.kinds: list[str] = []
        self.release_reflection = threading.Event()
        self.release_reflection.set()
        self.reflection_asked = threading.Event()
        self._lock = threading.Lock()
        self.local = LocalServer(responder=self)

    @property
    def url(self) -> str:
        return f"{self.local.url}/v1"

    def close(self) -> None:
        self.release_reflection.set()
        self.local.close()

    @staticmethod
    def kind(body: dict[str, Any]) -> str:
        if is_summary_body(body):
            return "summary"
        users = [text_of(m) for m in body["messages"] if m["role"] == "user"]
        if any(u.startswith(REFLECT_MARK) for u in users):
            return "reflection"
        return "flush" if any(u.startswith(FLUSH_MARK) for u in users) else "main"

    def __call__(self, request: Recorded) -> Reply:
        if request.method != "POST" or not request.body:  # a probe of the server: not a model request
            return json_reply(404, {"error": {"message": "Not Found", "type": "not_found_error"}})
        body = request.json()
        kind = self.kind(body)
        with self._lock:
            self.bodies.append(body)
            self.kinds.append(kind)
        last = body["messages"][-1]
        if kind == "summary":
            return openai_reply("## Goal\nKeep going.\n\n## Progress\n- Parts answered.")
        if kind == "flush":
            return openai_reply("Saved.") if last["role"] == "tool" else self._flush(body)
        if kind == "reflection":
            return self._reflection(last)
        if self.writes is None:
            users = [text_of(m) for m in body["messages"] if m["role"] == "user"]
            return openai_reply(f"Answer to {users[-1][:30]}. {LONG}")
        if last["role"] == "tool":
            return openai_reply("Noted. And the tests run with pytest, not nose.")
        path = str(self.writes / "deploy.md")
        return openai_reply("", [("w1", "write", {"path": path, "content": "deploy with make ship\n"})])

    def _flush(self, body: dict[str, Any]) -> Reply:
        last = text_of(body["messages"][-1])
        found = re.search(r"memory directory (\S+) \(keep", last)
        assert found, last[:300]
        prompts = [text_of(m) for m in body["messages"] if m["role"] == "user" and not text_of(m).startswith("[")]
        tag = hashlib.sha1(prompts[-1].encode()).hexdigest()[:6]
        content = f"- a fact from {prompts[-1][:20]}\n" + (f"- the key is {self.secret}\n" if self.secret else "")
        arguments = {"path": f"{found.group(1)}/note-{tag}.md", "content": content}
        return openai_reply("", [(f"call_{tag}", "write", arguments)])

    def _reflection(self, last: dict[str, Any]) -> Reply:
        self.reflection_asked.set()
        if self.hang_reflection:
            return Reply(stall="silent")
        self.release_reflection.wait(timeout=300)
        if last["role"] == "tool" and self.hang_after_writes:
            self.reflection_wrote.set()
            return Reply(stall="silent")
        if last["role"] == "tool":
            return openai_reply("Merged the duplicates and took out the wrong note.\nCONFIRMED: build.md")
        found = re.search(r"memory in (\S+) so it", text_of(last))
        assert found
        top = found.group(1)
        index = "# Memory\n- [build](build.md)\n- [tests](tests.md)\n"
        calls = [
            ("r1", "write", {"path": f"{top}/MEMORY.md", "content": index}),
            ("r2", "write", {"path": f"{top}/tests-copy.md", "content": ""}),
            ("r3", "write", {"path": f"{top}/nose.md", "content": ""}),
        ]
        return openai_reply("", calls)
