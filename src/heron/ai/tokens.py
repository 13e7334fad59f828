"""Token estimates and dollar costs.

heron never loads a tokenizer: ceil(chars/4) is what every harness uses between
provider reports, and the provider's own usage replaces it as soon as one arrives.
"""

from __future__ import annotations

import json
import math

from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

IMAGE_TOKENS = 1_200
CHARS_PER_TOKEN = 4


def estimate_text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def message_chars(message: UserMessage | AssistantMessage | ToolResultMessage) -> tuple[int, int]:
    """Characters of a message as the model reads them, and how many images it holds."""
    chars = 0
    images = 0
    content = message.content
    if isinstance(content, str):
        return len(content), 0
    for block in content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ThinkingContent):
            chars += len(block.thinking)
        elif isinstance(block, ToolCall):
            chars += len(block.name) + len(json.dumps(block.arguments, separators=(",", ":"), ensure_ascii=False))
        elif isinstance(block, ImageContent):
            images += 1
    return chars, images


def estimate_message_tokens(message: UserMessage | AssistantMessage | ToolResultMessage) -> int:
    chars, images = message_chars(message)
    return math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS


def estimate_context_tokens(context: Context) -> int:
    """Whole-request estimate: system prompt, tool schemas and every message."""
    chars = len(context.system_prompt or "")
    for tool in context.tools or []:
        chars += len(tool.name) + len(tool.description)
        chars += len(json.dumps(tool.parameters, separators=(",", ":"), ensure_ascii=False))
    tokens = math.ceil(chars / CHARS_PER_TOKEN)
    for message in context.messages:
        tokens += estimate_message_tokens(message)
    return tokens


def calculate_cost(model: Model, usage: Usage) -> Usage:
    """Fill ``usage.cost`` from the model's per-million prices (mutates and returns it)."""
    price = model.cost
    cost = usage.cost
    cost.input = usage.input * price.input / 1_000_000
    cost.output = usage.output * price.output / 1_000_000
    cost.cache_read = usage.cache_read * price.cache_read / 1_000_000
    cost.cache_write = usage.cache_write * price.cache_write / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    if not usage.total_tokens:
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    return usage
