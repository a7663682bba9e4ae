"""requirements.lock and requirements-dev.lock (written by `make lock`) agree with pyproject.toml.

The image installs the first, CI the second, both with `--require-hashes`. When a branch adds,
drops or narrows a dependency in pyproject.toml, this fails, naming the package, until `make lock`
is run again.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
# The interpreter the locks are made for (the image's; LOCK_FLAGS in the Makefile).
LOCK_ENV = {"python_version": "3.11", "python_full_version": "3.11.7", "sys_platform": "linux",
            "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


@dataclass
class Pin:
    name: str
    version: Version
    marker: Marker | None
    hashes: int = 0
    via: set[str] = field(default_factory=set)

    def applies(self) -> bool:
        return self.marker is None or self.marker.evaluate(LOCK_ENV)


def read_lock(path: Path) -> list[Pin]:
    """Every pin of a lock written by `uv pip compile --generate-hashes`, with what required it."""
    pins: list[Pin] = []
    via_block = False
    for line in path.read_text().splitlines():
        head = re.match(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$", line)
        if head:
            name, version, marker = head.groups()
            pins.append(Pin(canonicalize_name(name), Version(version), Marker(marker) if marker else None))
            via_block = False
        elif line.strip().startswith("--hash=sha256:"):
            pins[-1].hashes += 1
        elif line.strip().startswith("# via"):
            rest = line.strip()[len("# via"):].strip()
            via_block = not rest
            if rest:
                pins[-1].via.add(rest)
        elif via_block and line.startswith("    #   "):
            pins[-1].via.add(line.strip("# ").strip())
    return pins


# Distributions of this repository: installed from their folders, never pinned from an index.
LOCAL = {"leaderboard-scoring": "scoring/pyproject.toml"}


def declared(extra: str | None = None) -> list[Requirement]:
    """What pyproject.toml asks for, with a local distribution replaced by what it asks for."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    out: list[Requirement] = []
    for req in map(Requirement, reqs):
        local = LOCAL.get(canonicalize_name(req.name))
        if local is None:
            out.append(req)
        else:
            out += [Requirement(r) for r in tomllib.loads((ROOT / local).read_text())["project"]["dependencies"]]
    return out


OURS = ("leaderboard (pyproject.toml)", "leaderboard-scoring (scoring/pyproject.toml)")


def _disagreements(lock: Path, requirements: list[Requirement]) -> list[str]:
    pins = read_lock(lock)
    problems = []
    for req in requirements:
        if req.marker is not None and not req.marker.evaluate(LOCK_ENV):
            continue
        name = canonicalize_name(req.name)
        found = [p for p in pins if p.name == name and p.applies()]
        if not found:
            problems.append(f"{req} is required by pyproject.toml but not pinned in {lock.name}")
        elif not req.specifier.contains(found[0].version, prereleases=True):
            problems.append(f"{req} is required but {lock.name} pins {name}=={found[0].version}")
    wanted = {canonicalize_name(r.name) for r in requirements}
    for pin in pins:
        if any(v.startswith(OURS) for v in pin.via) and pin.name not in wanted:
            problems.append(f"{lock.name} pins {pin.name} for pyproject.toml, which no longer asks for it")
    return problems


@pytest.mark.parametrize("lock, extras", [("requirements.lock", ()), ("requirements-dev.lock", ("dev",))])
def test_lock_pins_exactly_what_pyproject_declares(lock, extras):
    requirements = declared() + [r for extra in extras for r in declared(extra)]
    problems = _disagreements(ROOT / lock, requirements)
    assert problems == [], "run `make lock`:\n" + "\n".join(problems)


def test_lock_every_pin_carries_hashes_and_the_two_locks_agree():
    runtime, dev = read_lock(ROOT / "requirements.lock"), read_lock(ROOT / "requirements-dev.lock")
    assert runtime and dev
    assert [p.name for p in runtime + dev if p.hashes == 0] == []
    dev_versions = {(p.name, str(p.marker)): p.version for p in dev}
    differ = [f"{p.name}: {p.version} / {dev_versions.get((p.name, str(p.marker)))}" for p in runtime
              if dev_versions.get((p.name, str(p.marker))) != p.version]
    assert differ == [], "the dev lock must pin the runtime lock's versions: run `make lock`"


def test_lock_reader_sees_versions_markers_hashes_and_origins(tmp_path):
    sample = tmp_path / "x.lock"
    sample.write_text(
        "# header\n"
        "django==5.2.19 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via leaderboard (pyproject.toml)\n"
        "numpy==2.4.6 ; python_full_version < '3.12' \\\n    --hash=sha256:cc\n    # via\n"
        "    #   leaderboard (pyproject.toml)\n    #   pandas\n"
        "numpy==2.5.5 ; python_full_version >= '3.12' \\\n    --hash=sha256:dd\n    # via pandas\n")
    pins = read_lock(sample)
    assert [(p.name, str(p.version), p.hashes, p.applies()) for p in pins] == [
        ("django", "5.2.19", 2, True), ("numpy", "2.4.6", 1, True), ("numpy", "2.5.5", 1, False)]
    assert pins[1].via == {OURS[0], "pandas"}
    assert _disagreements(sample, [Requirement("Django>=5.2,<6"), Requirement("numpy>=1.26")]) == []
    assert _disagreements(sample, [Requirement("Django>=6"), Requirement("numpy>=1.26"), Requirement("sentry-sdk")]) == [
        "Django>=6 is required but x.lock pins django==5.2.19",
        "sentry-sdk is required by pyproject.toml but not pinned in x.lock"]
    assert _disagreements(sample, [Requirement("numpy>=1.26")]) == [
        "x.lock pins django for pyproject.toml, which no longer asks for it"]
