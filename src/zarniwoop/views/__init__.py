"""Read models over the running system, shaped for people and dashboards: the routing view
(`routing.py`: search cascades plus LLM alias resolutions) and the provider-call usage report
(`usage.py`). They read; they never change what they show."""
