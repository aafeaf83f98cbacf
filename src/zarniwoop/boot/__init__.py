"""What the application container (`runtime.py`) builds from the config, one job a module:
`seeding.py` (the config file seeds the settings, validated before they are kept), `search_side.py`
(the dispatcher over the embedded stores or over Redis), `shared_state.py` (the Redis of
`redis_url`, checked at start-up), `retention.py` (what the retention job deletes, and how often).

A floor of its own, just below `runtime.py`: these take their real collaborators (settings,
database, factory, clock), never the container; `zarniwoop.runtime` re-exports their public names.
"""
