"""Configuration: the YAML file, the layered settings service, boot validation and the provider factory."""
