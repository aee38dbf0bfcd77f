"""Built-in presets (YAML plans) shipped with zerotui."""
