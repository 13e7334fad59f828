"""``heron -p`` end to end: another process changes a file between the model's read and
its write; the write is refused (the other line survives) and the model receives the
refusal; ``overwrite: true`` then replaces the file."""

from __future__ import annotations

from tests.cli.test_print_json_e2e import Project, openai_args, project  # noqa: F401 - the fixture
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply


def test_write_after_an_external_change_is_refused(project: Project) -> None:  # noqa: F811
    notes = project.cwd / "notes.txt"
    notes.write_text("first line\n")
    after_refusal: list[str] = []

    def respond(request: Recorded) -> Reply:
        results = [m for m in request.json()["messages"] if m["role"] == "tool"]
        if not results:
            return openai_reply("", [("c_read", "read", {"path": "notes.txt"})])
        if len(results) == 1:  # the model has read the file; another process appends now
            with notes.open("a") as f:
                f.write("the other process's line\n")
            return openai_reply("", [("c_write", "write", {"path": "notes.txt", "content": "first line\nmine\n"})])
        if len(results) == 2:
            after_refusal.append(notes.read_text())
            return openai_reply(
                "", [("c_force", "write", {"path": "notes.txt", "content": "replaced\n", "overwrite": True})]
            )
        return openai_reply("done")

    server = LocalServer(respond)
    try:
        result = project.run("-p", "update the notes", *openai_args(server))
        assert result.code == 0, result.err
        refused = server.requests[2].json()["messages"][-1]
        assert refused["role"] == "tool" and refused["tool_call_id"] == "c_write"
        assert "notes.txt has changed on disk since you last read or wrote it" in refused["content"]
        assert "- the other process's line" in refused["content"]
        # the refused write changed nothing: the other process's line was there until the
        # model chose overwrite: true
        assert after_refusal == ["first line\nthe other process's line\n"]
        forced = server.requests[3].json()["messages"][-1]
        assert forced["tool_call_id"] == "c_force" and "Wrote 9 bytes" in forced["content"]
        assert notes.read_text() == "replaced\n"
    finally:
        server.close()
