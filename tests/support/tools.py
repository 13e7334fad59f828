"""The tool metadata the context tests read: the built-in tools by their names, as a
session with the default tools has them (:class:`heron.agent.tool_meta.ToolCatalog`)."""

from heron.agent.tool_meta import ToolCatalog
from heron.coding.tools import builtin_meta

BUILTIN = ToolCatalog(fallback=builtin_meta)
