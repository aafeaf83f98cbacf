"""LLM resource management (DESIGN §8). Placeholder package marker on branch llm-calls: the public
surface of `zarniwoop.llm` is defined on branch llm-resolution; take theirs on merge."""
