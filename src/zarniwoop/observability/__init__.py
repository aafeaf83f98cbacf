"""Metrics (Prometheus, DESIGN §10) and outage logging."""
