"""Zarniwoop: one research/search layer for LLM agents.

from zarniwoop.contract import SearchRequest, SearchScope
from zarniwoop.runtime import Runtime

async with await Runtime.open("zarniwoop.yaml") as rt:
    result = await rt.dispatcher.search(SearchRequest.create("crispr off-target", "academic"), SearchScope())
"""

__version__ = "0.1.0"
