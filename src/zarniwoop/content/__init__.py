"""The content store: a hit's body loaded on demand (provider reference or SSRF-guarded GET) into
the project's workspace. `store.py` holds `ContentStore` and `LoadedContent`."""
