"""Services above the dispatcher: project lifecycle, rich fan-out, the curated pipeline, content store."""
