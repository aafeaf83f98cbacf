"""Persistence: the database (SQLite by default), secrets at rest, and the stores built on them."""
