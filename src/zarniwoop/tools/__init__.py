"""The five LLM tools, one schema each, shared by MCP, HTTP and the Python API (DESIGN §6).

Modality is a parameter, never a tool axis: a new modality is a new enum value, not a new tool.
"""

from .base import ToolContext, ToolResult, ToolSpec
from .inputs import (
    RICH_MODALITIES,
    ResearchInvestigateInput,
    ResearchProvidersInput,
    ResearchRichInput,
    ResearchSearchExpertInput,
    ResearchSearchInput,
)
from .registry import TOOL_NAMES, TOOLS, Toolbox, parse_arguments, tool_spec

__all__ = [
    "RICH_MODALITIES",
    "TOOLS",
    "TOOL_NAMES",
    "ResearchInvestigateInput",
    "ResearchProvidersInput",
    "ResearchRichInput",
    "ResearchSearchExpertInput",
    "ResearchSearchInput",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
    "parse_arguments",
    "tool_spec",
]
