"""The dispatcher and what it needs: gate, cooldowns, pacing, coalescing, caching."""
