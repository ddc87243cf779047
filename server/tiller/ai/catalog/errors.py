"""The catalogue's errors."""


class ModelError(ValueError):
    """A model reference that cannot be resolved."""


class ModelConfigError(ModelError):
    """A models.toml that cannot be used; the message names the file and the entry. A
    `ModelError` too: the parts of the file that depend on the dataset are applied on the
    first lookup, and whoever resolves a model reports both alike."""
