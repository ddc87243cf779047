"""Searching the catalogue the way a model picker does: every word of the query must occur
in the model's `provider/id`, its name or its provider's name (case-insensitive); exact
ids come first, then ids that start with the query, then the rest in catalogue order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..types import Model


@dataclass(frozen=True)
class ModelListing:
    model: Model
    ready: bool  # the provider can be called now (key present, or local server running)


@dataclass(frozen=True)
class ModelPage:
    models: list[ModelListing]
    total: int  # matches before paging


def search(candidates: Iterable[tuple[ModelListing, str]], query: str) -> list[ModelListing]:
    """`candidates` are (listing, provider display name) in catalogue order."""
    needle = query.strip().lower()
    words = needle.split()
    ranked: list[tuple[int, int, ModelListing]] = []
    for position, (listing, provider_name) in enumerate(candidates):
        model = listing.model
        haystack = f"{model.ref} {model.name} {provider_name}".lower()
        if all(word in haystack for word in words):
            ranked.append((_rank(model, needle), position, listing))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [listing for _, _, listing in ranked]


def page(listings: list[ModelListing], offset: int, limit: int | None) -> ModelPage:
    offset = max(offset, 0)
    end = None if limit is None else offset + max(limit, 0)
    return ModelPage(listings[offset:end], len(listings))


def _rank(model: Model, needle: str) -> int:
    if not needle:
        return 0
    model_id = model.id.lower()
    if needle in (model_id, model.ref.lower()):
        return 0
    if model_id.startswith(needle) or model.ref.lower().startswith(needle):
        return 1
    return 2
