"""Which variables a tool's child process loses."""

from __future__ import annotations

import json
from pathlib import Path

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
