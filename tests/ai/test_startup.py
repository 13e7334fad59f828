"""Start-up: a one-shot run loads no provider SDK. (Byte-code: Python's own switch is
respected, tests/cli/test_boot.py.)"""

from __future__ import annotations

import subprocess
import sys


def test_print_mode_providers_load_no_sdk() -> None:
    code = (
        "import sys, heron.cli.app, heron.coding.runtime\n"
        "import heron.ai.providers.openai_chat, heron.ai.providers.anthropic, heron.ai.providers.openai_responses\n"
        "import heron.ai.providers.google\n"
        "assert not {'openai', 'anthropic', 'google.genai'} & set(sys.modules), 'an SDK was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
