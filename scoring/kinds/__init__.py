"""Benchmark kinds, registered by name. Adding a kind is one module plus one line here."""
from __future__ import annotations

from scoring.kinds.base import Kind

_REGISTRY: dict[str, Kind] = {}


def register(kind_cls: type[Kind]) -> type[Kind]:
    _REGISTRY[kind_cls.name] = kind_cls()
    return kind_cls


def get_kind(name: str) -> Kind:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r}; known kinds: {', '.join(sorted(_REGISTRY))}") from None


def kind_names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def _load() -> None:
    # Import the kind modules lazily so importing scoring.kinds stays cheap.
    import importlib

    for mod in KIND_MODULES:
        importlib.import_module(f"scoring.kinds.{mod}")


KIND_MODULES = ("properties", "impact")
