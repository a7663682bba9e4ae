"""Benchmark kinds, registered by name. Adding a kind is adding one module to this package."""
from __future__ import annotations

import importlib
import pkgutil

from scoring.kinds.base import Kind

_REGISTRY: dict[str, Kind] = {}
_loaded = False


def register(kind_cls: type[Kind]) -> type[Kind]:
    """Register a kind under its name; a second kind with the same name is an error."""
    if not kind_cls.name:
        raise ValueError(f"{kind_cls.__name__} has no name")
    existing = _REGISTRY.get(kind_cls.name)
    # The same class registered again (a module reloaded) is fine; another class is not.
    if existing is not None and (type(existing).__module__, type(existing).__qualname__) != (
            kind_cls.__module__, kind_cls.__qualname__):
        raise ValueError(f"two kinds are named {kind_cls.name!r}: {type(existing).__module__}."
                         f"{type(existing).__qualname__} and {kind_cls.__module__}.{kind_cls.__qualname__}")
    _REGISTRY[kind_cls.name] = kind_cls()
    return kind_cls


def unregister(name: str) -> None:
    """Forget the kind registered as ``name`` (a test or a script that registered one for a while)."""
    _REGISTRY.pop(name, None)


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
    # Every module of this package except base is a kind: adding a kind is adding a module.
    # Imported on first use, once, so importing scoring.kinds stays cheap.
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    _loaded = True
