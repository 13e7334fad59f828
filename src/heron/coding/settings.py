"""Settings from ``settings.json`` files, and the choice of model and API key.

Two files, both optional, in pi's camelCase form (``docs/configuration.md`` lists every
key): ``$HERON_HOME/settings.json`` (the user's) and ``<cwd>/.heron/settings.json`` (the
project's). The project wins; nested objects are merged key by key, so a project can
change ``compaction.reserveTokens`` without restating the rest of ``compaction``.

A settings file must never stop heron from starting: a file that is not JSON is ignored
as a whole, a key with a value of the wrong type is ignored alone, an unknown key (a
typo, usually) is ignored, and each case becomes a warning that names the file and the
key, so the user can fix it. Each file is checked on its own before merging, so a
warning always points at the file that holds the bad value.

:func:`resolve_model` picks the model and key for a session, or raises
:class:`SetupError` whose message tells the user exactly how to configure one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from heron.ai.models import heron_home
from heron.ai.types import ThinkingLevel
from heron.coding.setting_checks import (
    NON_NEGATIVE,
    POSITIVE,
    BadSettingValue,
    check_bool,
    check_idle_policy,
    check_int,
    check_object,
    check_patterns,
    check_reflect,
    check_share,
    check_startup,
    check_string,
    check_summary_request,
    check_thinking,
    check_tools,
    check_working_budget,
    type_name,
)
from heron.context.compaction.boundaries import BACKGROUND_AT, SOFT_THRESHOLD
from heron.context.compaction.idle import IdlePolicy, parse_policy
from heron.context.compaction.native import NATIVE_TRIGGER_SHARE
from heron.context.continuity.frontier import FrontierSettings
from heron.context.continuity.goal_loop import GoalSettings, goal_settings
from heron.context.pruning.cold_cache import COLD_KEEP_TURNS
from heron.context.pruning.prune import PRUNE_HIGH_WATER, PRUNE_KEEP_TURNS, PRUNE_LOW_WATER
from heron.context.tool_output.limits import DEFAULT_LIMITS, ToolLimits
from heron.context.window.working_budget import AUTO, WorkingBudgetSetting, parse_setting

SETTINGS_FILE = "settings.json"
LOCAL_SETTINGS_FILE = "settings.local.json"
DEFAULT_RESUME_TURNS = 10  # turns shown when a session is resumed (resume.turns)


# --- the settings -------------------------------------------------------------
# Read once at start and never printed (the user sees settings.json and the warnings), so
# no generated __repr__: one function fewer compiled at import per class. Equality stays
# (the tests compare settings), and so does frozen (see Settings).


@dataclass(frozen=True, slots=True, repr=False)
class CompactionSettings:
    """When to compact and what to keep (both also capped at 25% of the window; docs/context.md)."""

    enabled: bool = True
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000
    # Compact past this many tokens whatever the window allows: tokens, "auto" (from the model's
    # prices) or None ("off") - heron.context.window.working_budget
    working_budget: WorkingBudgetSetting = AUTO
    soft_threshold: float = SOFT_THRESHOLD  # share of the hard threshold: compact at step boundaries past it
    # "shared": the summary request repeats the conversation's cached prefix (where the
    # server caches prompts); "separate": the summariser's own short request
    request: str = "shared"
    # Provider-native compaction and server-side clearing (docs/context.md, "Provider-native compaction")
    native: bool = False
    server_clearing: bool = False
    native_trigger: float = NATIVE_TRIGGER_SHARE  # share of the threshold the provider compacts at
    native_instructions: str | None = None
    background: bool = True  # summarise beside the turn past ``background_at`` (heron.context.compaction.background)
    background_at: float = BACKGROUND_AT  # share of the hard threshold past which that summary starts


@dataclass(frozen=True, slots=True, repr=False)
class RetrySettings:
    """Backoff for transient provider errors (see docs/ai.md, "Retries")."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2_000
    max_delay_ms: int = 60_000


@dataclass(frozen=True, slots=True, repr=False)
class PruningSettings:
    """Stubbing of old tool results before compaction (docs/context.md, "Pruning"): a step
    starts above ``high_water`` and prunes down to ``low_water`` (shares of the input
    budget, window - reserve), never touching the last ``keep_turns`` assistant messages."""

    enabled: bool = True
    high_water: float = PRUNE_HIGH_WATER
    low_water: float = PRUNE_LOW_WATER
    keep_turns: int = PRUNE_KEEP_TURNS
    # Past this idle time a step is free (0: never; None: 300 s, none for a local server).
    cache_ttl_seconds: int | None = None
    # ...and spares only the results of the last this many assistant messages.
    cold_keep_turns: int = COLD_KEEP_TURNS


@dataclass(frozen=True, slots=True, repr=False)
class ContextFileSettings:
    """Budgets for AGENTS.md / CLAUDE.md in the system prompt (docs/context.md, "Context files")."""

    per_file_chars: int = 12_000
    total_chars: int = 60_000


@dataclass(frozen=True, slots=True, repr=False)
class ToolRunSettings:
    """``tools``: how many tool calls of one answer run at once."""

    max_parallel: int = 8


@dataclass(frozen=True, slots=True, repr=False)
class SpillSettings:
    """``spill``: the cap of one full-output file and how long such files are kept."""

    max_bytes: int = 100 * 1024 * 1024
    retention_days: int = 14


@dataclass(frozen=True, slots=True, repr=False)
class TimeoutSettings:
    """``timeouts``: how long a request may wait, in milliseconds (see docs/ai.md)."""

    first_byte_ms: int = 60_000  # no byte of the response yet
    idle_ms: int = 120_000  # no content (keep-alives do not count)
    request_ms: int = 900_000  # the whole request
    reading_tokens_per_second: int = 20  # a local server's reading speed until one is measured


@dataclass(frozen=True, slots=True, repr=False)
class BashSettings:
    """``bash``: the timeout of a command given none, and the longest one the model may ask for."""

    default_timeout_ms: int = 600_000
    max_timeout_ms: int = 3_600_000


@dataclass(frozen=True, slots=True, repr=False)
class ScriptSettings:
    """``script``: the script tool on or off, its longest run and its tool calls per script."""

    enabled: bool = True
    max_timeout_ms: int = 120_000
    max_calls: int = 200


@dataclass(frozen=True, slots=True, repr=False)
class MemorySettings:
    """``memory``: the project memory directory (MEMORY.md) and the pre-compaction flush."""

    enabled: bool = True
    directory: str | None = None  # None: $HERON_HOME/projects/<encoded cwd>/memory
    flush: bool = True
    stale_after_days: int = 90  # staleAfterDays: a note not changed or confirmed for this long is marked stale
    reflect: str = "end"  # off | end | compaction: when the background reflection pass runs


@dataclass(frozen=True, slots=True, repr=False)
class SubagentSettings:
    """``subagents``: how deep sub-agents may nest and how many run at once."""

    max_depth: int = 2
    max_parallel: int = 4


@dataclass(frozen=True, slots=True, repr=False)
class Settings:
    """The merged settings of the settings files (user, project, local), read once at start;
    frozen so no part of a session can change what another part reads."""

    default_provider: str | None = None
    default_model: str | None = None
    default_thinking_level: ThinkingLevel | None = None
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    retry: RetrySettings = field(default_factory=RetrySettings)
    pruning: PruningSettings = field(default_factory=PruningSettings)
    tool_limits: ToolLimits = DEFAULT_LIMITS
    context_files: ContextFileSettings = field(default_factory=ContextFileSettings)
    shell_path: str | None = None
    default_tools: tuple[str, ...] | None = None  # None: heron's default tool set
    tools: ToolRunSettings = field(default_factory=ToolRunSettings)
    spill: SpillSettings = field(default_factory=SpillSettings)
    # context.checkInvariants: run the context rules on every request (warnings + ledger)
    check_invariants: bool = False
    bash: BashSettings = field(default_factory=BashSettings)
    script: ScriptSettings = field(default_factory=ScriptSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    timeouts: TimeoutSettings = field(default_factory=TimeoutSettings)
    subagents: SubagentSettings = field(default_factory=SubagentSettings)
    # resume.turns: how many earlier turns a resumed interactive session shows
    resume_turns: int = DEFAULT_RESUME_TURNS
    # checkpoints.keepDays: checkpoint snapshots older than this are pruned (heron.coding.checkpoints)
    checkpoint_keep_days: int = 30
    # checkpoints.exclude: gitignore patterns added after the built-in list of generated directories
    # (heron.coding.checkpoints.base.DEFAULT_EXCLUDES); "!name/" takes one of those back in
    checkpoint_exclude: tuple[str, ...] = ()
    # mcp.startup: "eager" starts MCP servers with the session, "lazy" at their first tool call (docs/mcp.md)
    mcp_startup: str = "eager"
    # limits.maxTurns: model calls per prompt; None: the mode's default (heron.coding.run_limits)
    max_turns: int | None = None
    # continuity.*: recent steps and invoked skills re-injected after a compaction (docs/continuity.md)
    continuity: FrontierSettings = field(default_factory=FrontierSettings)
    # goal.*: the goal loop (heron.context.continuity.goal_loop)
    goal: GoalSettings = field(default_factory=GoalSettings)
    # idle.policy: before an idle session's cache expires (heron.context.compaction.idle)
    idle_policy: IdlePolicy = "auto"
    # extensions.handlerTimeoutMs: how long one extension handler may run before it is abandoned
    extension_timeout_ms: int = 30_000
    # What loading found: problems to show the user, and the files that were read.
    warnings: tuple[str, ...] = ()
    sources: tuple[Path, ...] = ()


# --- the schema ---------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# Key on disk -> its check (returns the clean value or raises BadSettingValue), or the schema of a nested object.
SCHEMA: dict[str, Any] = {
    "defaultProvider": check_string,
    "defaultModel": check_string,
    "defaultThinkingLevel": check_thinking,
    "shellPath": check_string,
    "defaultTools": check_tools,
    "compaction": {
        "enabled": check_bool,
        "reserveTokens": POSITIVE,
        "keepRecentTokens": POSITIVE,
        "workingBudget": check_working_budget,
        "softThreshold": check_share,
        "request": check_summary_request,
        "native": check_bool,
        "serverClearing": check_bool,
        "nativeTrigger": check_share,
        "nativeInstructions": check_string,
        "background": check_bool,
        "backgroundAt": check_share,
    },
    "retry": {
        "enabled": check_bool,
        "maxRetries": NON_NEGATIVE,
        "baseDelayMs": NON_NEGATIVE,
        "maxDelayMs": NON_NEGATIVE,
    },
    "pruning": {
        "enabled": check_bool,
        "highWater": check_share,
        "lowWater": check_share,
        "keepTurns": NON_NEGATIVE,
        "cacheTtlSeconds": NON_NEGATIVE,
        "coldKeepTurns": NON_NEGATIVE,
    },
    "toolLimits": {
        _camel(f.name): check_share if f.type == "float" else POSITIVE for f in dataclasses.fields(ToolLimits)
    },
    "contextFiles": {"perFileChars": POSITIVE, "totalChars": NON_NEGATIVE},
    "tools": {"maxParallel": POSITIVE},
    "spill": {"maxBytes": POSITIVE, "retentionDays": POSITIVE},
    "context": {"checkInvariants": check_bool},
    "bash": {"defaultTimeoutMs": POSITIVE, "maxTimeoutMs": POSITIVE},
    "script": {"enabled": check_bool, "maxTimeoutMs": POSITIVE, "maxCalls": POSITIVE},
    # Read per file by heron.coding.permissions / hooks / secrets (a project file may not do what a user's may).
    "permissions": check_object,
    "hooks": check_object,
    "sandbox": check_object,  # read per file by heron.coding.sandbox.policy (a project may tighten, not loosen)
    "env": {"passThrough": check_tools},
    "resume": {"turns": NON_NEGATIVE},
    "memory": {
        "enabled": check_bool,
        "directory": check_string,
        "flush": check_bool,
        "staleAfterDays": POSITIVE,
        "reflect": check_reflect,
    },
    "timeouts": {
        "firstByteMs": check_int(1_000),
        "idleMs": check_int(1_000),
        "requestMs": check_int(1_000),
        "readingTokensPerSecond": POSITIVE,
    },
    "subagents": {"maxDepth": NON_NEGATIVE, "maxParallel": POSITIVE},
    "checkpoints": {"keepDays": POSITIVE, "exclude": check_patterns},
    "mcp": {"startup": check_startup},
    "limits": {"maxTurns": POSITIVE},
    "continuity": {"recentSteps": NON_NEGATIVE, "skillTokens": POSITIVE, "skillsTokens": NON_NEGATIVE},
    "goal": {"maxTurns": NON_NEGATIVE, "evaluator": check_string},
    "idle": {"policy": check_idle_policy},
    "extensions": {"handlerTimeoutMs": check_int(100)},
}


def _clean(data: Mapping[str, Any], schema: Mapping[str, Any], where: str, warnings: list[str]) -> dict[str, Any]:
    """The keys of ``data`` that fit ``schema``; one warning per key that does not."""
    clean: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}{key}"
        check = schema.get(key)
        if check is None:
            warnings.append(f"unknown setting {path!r} (ignored)")
        elif isinstance(check, Mapping):
            if not isinstance(value, dict):
                warnings.append(f"setting {path!r} must be an object, not {type_name(value)} (defaults used)")
                continue
            clean[key] = _clean(value, check, f"{path}.", warnings)
        else:
            try:
                clean[key] = check(value)
            except BadSettingValue as exc:
                warnings.append(f"setting {path!r} {exc} (default used)")
    return clean


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``; objects present in both are merged recursively."""
    merged = dict(base)
    for key, value in override.items():
        previous = merged.get(key)
        if isinstance(previous, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(previous, value)
        else:
            merged[key] = value
    return merged


def read_settings_file(path: Path, warnings: list[str]) -> dict[str, Any] | None:
    """The checked contents of one file; None when it is missing or unusable as a whole."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        warnings.append(f"{path}: cannot read: {exc} (file ignored)")
        return None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} (file ignored)")
        return None
    if not isinstance(data, dict):
        warnings.append(f"{path}: the top level must be an object, not {type_name(data)} (file ignored)")
        return None
    problems: list[str] = []
    clean = _clean(data, SCHEMA, "", problems)
    warnings.extend(f"{path}: {problem}" for problem in problems)
    return clean


def settings_paths(cwd: Path, home: Path | None = None) -> list[Path]:
    """The user's then the project's settings file (the later one wins); the project's
    local file (:data:`LOCAL_SETTINGS_FILE`, kept out of git) is read after both."""
    home = home if home is not None else heron_home()
    return [home / SETTINGS_FILE, Path(cwd) / ".heron" / SETTINGS_FILE]


def _pruning(data: Mapping[str, Any]) -> PruningSettings:
    defaults = PruningSettings()
    return PruningSettings(
        enabled=data.get("enabled", defaults.enabled),
        high_water=data.get("highWater", defaults.high_water),
        low_water=data.get("lowWater", defaults.low_water),
        keep_turns=data.get("keepTurns", defaults.keep_turns),
        cache_ttl_seconds=data.get("cacheTtlSeconds", defaults.cache_ttl_seconds),
        cold_keep_turns=data.get("coldKeepTurns", defaults.cold_keep_turns),
    )


def _sub(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _continuity(data: Mapping[str, Any]) -> FrontierSettings:
    default = FrontierSettings()
    return FrontierSettings(
        recent_steps=data.get("recentSteps", default.recent_steps),
        skill_tokens=data.get("skillTokens", default.skill_tokens),
        skills_tokens=data.get("skillsTokens", default.skills_tokens),
    )


def _compaction(compaction: Mapping[str, Any]) -> CompactionSettings:
    """``compaction`` as settings.json holds it (already checked), missing keys as defaults."""
    defaults = CompactionSettings()
    return CompactionSettings(
        enabled=compaction.get("enabled", defaults.enabled),
        reserve_tokens=compaction.get("reserveTokens", defaults.reserve_tokens),
        keep_recent_tokens=compaction.get("keepRecentTokens", defaults.keep_recent_tokens),
        working_budget=parse_setting(compaction.get("workingBudget", defaults.working_budget)),
        soft_threshold=compaction.get("softThreshold", defaults.soft_threshold),
        request=compaction.get("request", defaults.request),
        native=compaction.get("native", defaults.native),
        server_clearing=compaction.get("serverClearing", defaults.server_clearing),
        native_trigger=compaction.get("nativeTrigger", defaults.native_trigger),
        native_instructions=compaction.get("nativeInstructions", defaults.native_instructions),
        background=compaction.get("background", defaults.background),
        background_at=compaction.get("backgroundAt", defaults.background_at),
    )


def _timeouts(data: Mapping[str, Any]) -> TimeoutSettings:
    return TimeoutSettings(**{f.name: data.get(_camel(f.name), f.default) for f in dataclasses.fields(TimeoutSettings)})


def settings_from_dict(
    data: Mapping[str, Any], warnings: tuple[str, ...] = (), sources: tuple[Path, ...] = ()
) -> Settings:
    """:class:`Settings` from already-checked camelCase data; missing keys take defaults."""
    compaction, retry = _sub(data, "compaction"), _sub(data, "retry")
    limits, files = _sub(data, "toolLimits"), _sub(data, "contextFiles")
    defaults_r, defaults_f = RetrySettings(), ContextFileSettings()
    tools = data.get("defaultTools")
    return Settings(
        default_provider=data.get("defaultProvider"),
        default_model=data.get("defaultModel"),
        default_thinking_level=cast("ThinkingLevel | None", data.get("defaultThinkingLevel")),
        compaction=_compaction(compaction),
        retry=RetrySettings(
            enabled=retry.get("enabled", defaults_r.enabled),
            max_retries=retry.get("maxRetries", defaults_r.max_retries),
            base_delay_ms=retry.get("baseDelayMs", defaults_r.base_delay_ms),
            max_delay_ms=retry.get("maxDelayMs", defaults_r.max_delay_ms),
        ),
        pruning=_pruning(_sub(data, "pruning")),
        tool_limits=dataclasses.replace(
            DEFAULT_LIMITS,
            **{f.name: limits[_camel(f.name)] for f in dataclasses.fields(ToolLimits) if _camel(f.name) in limits},
        ),
        context_files=ContextFileSettings(
            per_file_chars=files.get("perFileChars", defaults_f.per_file_chars),
            total_chars=files.get("totalChars", defaults_f.total_chars),
        ),
        shell_path=data.get("shellPath"),
        default_tools=tuple(tools) if tools is not None else None,
        tools=ToolRunSettings(max_parallel=_sub(data, "tools").get("maxParallel", ToolRunSettings().max_parallel)),
        spill=SpillSettings(
            max_bytes=_sub(data, "spill").get("maxBytes", SpillSettings().max_bytes),
            retention_days=_sub(data, "spill").get("retentionDays", SpillSettings().retention_days),
        ),
        check_invariants=bool(_sub(data, "context").get("checkInvariants", False)),
        bash=BashSettings(
            default_timeout_ms=_sub(data, "bash").get("defaultTimeoutMs", BashSettings().default_timeout_ms),
            max_timeout_ms=_sub(data, "bash").get("maxTimeoutMs", BashSettings().max_timeout_ms),
        ),
        script=ScriptSettings(
            enabled=_sub(data, "script").get("enabled", True),
            max_timeout_ms=_sub(data, "script").get("maxTimeoutMs", ScriptSettings().max_timeout_ms),
            max_calls=_sub(data, "script").get("maxCalls", ScriptSettings().max_calls),
        ),
        resume_turns=_sub(data, "resume").get("turns", DEFAULT_RESUME_TURNS),
        checkpoint_keep_days=_sub(data, "checkpoints").get("keepDays", 30),
        checkpoint_exclude=tuple(_sub(data, "checkpoints").get("exclude", ())),
        mcp_startup=_sub(data, "mcp").get("startup", "eager"),
        max_turns=_sub(data, "limits").get("maxTurns"),
        continuity=_continuity(_sub(data, "continuity")),
        goal=goal_settings(_sub(data, "goal")),
        idle_policy=parse_policy(_sub(data, "idle").get("policy", "auto")),
        extension_timeout_ms=_sub(data, "extensions").get("handlerTimeoutMs", 30_000),
        timeouts=_timeouts(_sub(data, "timeouts")),
        memory=MemorySettings(
            enabled=_sub(data, "memory").get("enabled", True),
            directory=_sub(data, "memory").get("directory"),
            flush=_sub(data, "memory").get("flush", True),
            stale_after_days=_sub(data, "memory").get("staleAfterDays", 90),
            reflect=_sub(data, "memory").get("reflect", "end"),
        ),
        subagents=SubagentSettings(
            max_depth=_sub(data, "subagents").get("maxDepth", SubagentSettings().max_depth),
            max_parallel=_sub(data, "subagents").get("maxParallel", SubagentSettings().max_parallel),
        ),
        warnings=warnings,
        sources=sources,
    )


def load_settings(cwd: Path, home: Path | None = None) -> Settings:
    """The merged settings for a session in ``cwd``; never raises for a bad file."""
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    sources: list[Path] = []
    seen: set[str] = set()
    for path in [*settings_paths(cwd, home), Path(cwd) / ".heron" / LOCAL_SETTINGS_FILE]:
        real = os.path.realpath(path)
        if real in seen:  # running in the directory that holds $HERON_HOME: one file, read once
            continue
        seen.add(real)
        data = read_settings_file(path, warnings)
        if data is not None:
            sources.append(path)
            merged = deep_merge(merged, data)
    return settings_from_dict(merged, tuple(warnings), tuple(sources))


# The choice of the model lives in its own module; its names stay importable from here.
from heron.coding.model_choice import (  # noqa: E402
    API_CHOICES,
    BASE_URL_KEY_ENV,
    CUSTOM_PROVIDER,
    DEFAULT_MODELS,
    MODELS_JSON_EXAMPLE,
    NOT_CONFIGURED_EXIT,
    SETUP_POINTER,
    ResolvedModel,
    SetupError,
    _key_for,
    auth_hint,
    describe_key,
    key_and_source,
    missing_key_message,
    resolve_model,
    setup_help,
)

__all__ = [
    "API_CHOICES",
    "BASE_URL_KEY_ENV",
    "CUSTOM_PROVIDER",
    "DEFAULT_MODELS",
    "MODELS_JSON_EXAMPLE",
    "NOT_CONFIGURED_EXIT",
    "SETUP_POINTER",
    "ResolvedModel",
    "SetupError",
    "_key_for",
    "auth_hint",
    "describe_key",
    "key_and_source",
    "missing_key_message",
    "resolve_model",
    "setup_help",
]
