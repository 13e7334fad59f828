"""Start-up: heron keeps its own byte-code cache under PYTHONDONTWRITEBYTECODE=1 (and
only its own), and a one-shot run loads no provider SDK."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "heron"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(SRC, root / "heron", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "othermod.py").write_text("VALUE = 1\n")
    return root


def _run(root: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=root, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_own_modules_are_cached_and_nothing_else(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _run(
        root,
        """
        from heron.cli.bytecode import keep_own_bytecode
        keep_own_bytecode()
        import heron.ai.types, othermod
    """,
    )
    assert list((root / "heron" / "ai" / "__pycache__").glob("types.*.pyc"))
    assert list((root / "heron" / "cli" / "__pycache__").glob("bytecode.*.pyc"))  # imported before the finder
    assert not (root / "__pycache__").exists()  # not heron's: left alone, as the variable asks


def test_second_start_loads_from_the_cache(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    probe = """
        from heron.cli.bytecode import keep_own_bytecode, is_current
        keep_own_bytecode()
        import sys, heron.ai.types
        print(is_current(heron.ai.types.__file__), sys.dont_write_bytecode)
    """
    assert _run(root, probe).split() == ["True", "True"]
    cache = next((root / "heron" / "ai" / "__pycache__").glob("types.*.pyc"))
    written = cache.stat().st_mtime_ns
    assert _run(root, probe).split() == ["True", "True"]
    assert cache.stat().st_mtime_ns == written  # current: not rewritten


def test_a_changed_source_is_recompiled(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    probe = """
        from heron.cli.bytecode import keep_own_bytecode
        keep_own_bytecode()
        import heron.ai.thinking as t
        print(getattr(t, "MARKER", "none"))
    """
    assert _run(root, probe).strip() == "none"
    source = root / "heron" / "ai" / "thinking.py"
    source.write_text(source.read_text() + "\nMARKER = 'changed'\n")
    os.utime(source, (source.stat().st_atime + 5, source.stat().st_mtime + 5))
    assert _run(root, probe).strip() == "changed"


def test_unwritable_cache_folder_is_skipped(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    blocker = root / "heron" / "ai" / "__pycache__"
    blocker.write_text("not a directory")
    out = _run(
        root,
        """
        from heron.cli.bytecode import keep_own_bytecode
        keep_own_bytecode()
        import heron.ai.types
        print("imported")
    """,
    )
    assert out.strip() == "imported"


def test_print_mode_providers_load_no_sdk() -> None:
    code = (
        "import sys, heron.cli.app, heron.coding.runtime\n"
        "import heron.ai.providers.openai_chat, heron.ai.providers.anthropic, heron.ai.providers.openai_responses\n"
        "import heron.ai.providers.google\n"
        "assert not {'openai', 'anthropic', 'google.genai'} & set(sys.modules), 'an SDK was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
