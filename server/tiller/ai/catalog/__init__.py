"""The parts of the model catalogue (`tiller.ai.models.ModelCatalog` puts them together):
the models.dev dataset, tiller's presets, the user's models.toml, local server probes and
search."""
