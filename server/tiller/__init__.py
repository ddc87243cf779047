"""tiller: an agent server for code editors."""

__version__ = "0.1.0"
