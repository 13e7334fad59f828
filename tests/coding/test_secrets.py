"""Which variables a tool's child process loses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heron.coding.secrets import SecretPolicy, child_environment, is_secret_name, models_json_names


def test_credential_names() -> None:
    for name in (
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "DB_PASSWORD",
        "CLIENT_SECRET_ID",
        "HERON_API_KEY",
        "api_key",
        "GCP_CREDENTIALS",
        "SSH_PRIVATE_KEY",
    ):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "AWS_REGION", "TOKENIZERS_PARALLELISM", "KEYBOARD", "TERM"):
        assert not is_secret_name(name), name


def test_models_json_names_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "a": {
                        "apiKey": "MY_KEY",
                        "headers": {"X-Auth": "AUTH_VAR", "X-Lit": "literal value"},
                        "models": [{"id": "m", "headers": {"X": "MODEL_HDR"}}],
                    },
                    "b": {"apiKey": "!pass show key"},
                    "c": "not an object",
                }
            }
        )
    )
    assert models_json_names(path) == {"MY_KEY", "AUTH_VAR", "MODEL_HDR"}
    path.write_text("{broken")
    assert models_json_names(path) == set()
    assert models_json_names(tmp_path / "missing.json") == set()


def test_policy(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_text(json.dumps({"providers": {"x": {"apiKey": "ODD"}}}))
    policy = SecretPolicy.for_heron(tmp_path, pass_through=["GITHUB_TOKEN"], secret_values=["sk-live-123456", None])
    environ = {
        "PATH": "/bin",
        "ODD": "v",
        "GITHUB_TOKEN": "g",
        "ANTHROPIC_API_KEY": "a",
        "ELSEWHERE": "sk-live-123456",
        "SHORT": "x",
    }
    assert policy.child_environment(environ) == {"PATH": "/bin", "GITHUB_TOKEN": "g", "SHORT": "x"}
    assert policy.removed(environ) == ["ANTHROPIC_API_KEY", "ELSEWHERE", "ODD"]
    assert policy.redact("key sk-live-123456 here") == "key [redacted] here"
    assert child_environment({"A_TOKEN": "t", "B": "b"}) == {"B": "b"}


def test_encoded_forms_of_a_key_are_redacted_too() -> None:
    """base64 (at any of the three offsets a key can start at, wrapped at 76 columns or not),
    URL-encoding and hex: what ``| base64`` or ``xxd -p`` make of a key read from a file."""
    import base64
    import subprocess
    from urllib.parse import quote

    from heron.coding.secrets import Redactor

    key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij/+="
    redactor = Redactor()
    redactor.add([key])
    for prefix in ("", "a", "ab", "OPENAI_API_KEY="):
        encoded = base64.b64encode(f"{prefix}{key}\n".encode()).decode()
        assert "[redacted]" in redactor.text(encoded), prefix
        assert "[redacted]" in redactor.text(base64.urlsafe_b64encode(f"{prefix}{key}".encode()).decode()), prefix
    wrapped = subprocess.run(
        ["base64"], input=("x" * 70 + key + "\n").encode(), capture_output=True, check=True
    ).stdout.decode()
    assert "\n" in wrapped.strip()  # the key crosses a line break
    cleaned = redactor.text(f"result:\n{wrapped}done")
    assert "[redacted]" in cleaned and not any(line in wrapped for line in cleaned.splitlines()[1:-1])
    assert redactor.text(quote(key, safe="")) == "[redacted]"
    assert redactor.text(key.encode().hex()) == "[redacted]"
    innocent = "a line of text\nYWJjZGVmZ2hpamtsbW5vcA==\nQUJDREVGR0hJSktMTU5PUA==\n"
    assert redactor.text(innocent) == innocent  # base64 of other text is left alone


@pytest.mark.timeout(120)
def test_long_lines_cost_time_linear_in_their_length() -> None:
    """A 5 MB line of letters and then a newline (a minified file, a big write) once took
    hours to redact - quadratic in the line - whenever a key was known: it hung the test
    suite in CI. The same wrapped key inside such text is still found. (The timeout is
    thousands of times what a linear pass takes; the quadratic pass never ends within it.)"""
    import base64

    from heron.coding.secrets import Redactor, url_passwords

    key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij/+="
    redactor = Redactor()
    redactor.add([key])
    for letter in ("x", "a/", "1"):
        long_line = letter * (5_000_000 // len(letter))
        assert redactor.text(long_line + "\nend") == long_line + "\nend"
        assert url_passwords(long_line + " http://me:pw-123456@proxy") == {"pw-123456"}
    wrapped = base64.encodebytes(("x" * 70 + key).encode()).decode()
    assert "[redacted]" in redactor.text("y" * 1_000_000 + " then\n" + wrapped + "done")
