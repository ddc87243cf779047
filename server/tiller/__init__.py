"""tiller: an agent server for code editors."""
