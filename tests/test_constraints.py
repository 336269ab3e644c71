"""constraints.txt pins what requirements*.txt ask for: every requirement, at a version its range allows,
and the environment the tests run in was installed under those pins (make's install uses ``-c``)."""

from __future__ import annotations

from importlib.metadata import version

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT


def _requirements(name: str) -> list[Requirement]:
    out: list[Requirement] = []
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            out += _requirements(line[3:].strip())
        else:
            out.append(Requirement(line))
    return out


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            assert pinned, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            pins[canonicalize_name(name)] = pinned
    return pins


def test_every_requirement_is_pinned_inside_its_range():
    pins = _pins()
    for req in _requirements("requirements-test.txt"):
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (requirements) has no pin in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} outside {req}"


def test_the_environment_was_installed_under_the_pins():
    pins = _pins()
    for req in _requirements("requirements-test.txt"):
        assert version(req.name) == pins[canonicalize_name(req.name)], req.name
