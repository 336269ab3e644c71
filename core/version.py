"""Which code made a result.

:func:`code_version` (the package version plus the git commit when there is
one) names it for people: reports and bundles carry it.  :func:`results_version`
keys persisted results: it changes exactly when the computing code or a
numerical library does, so an edit not yet committed never serves results of
the code before it, and a commit that touches only documentation, tests or
pages does not send a large store back through its precompute.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from core import __version__
from core.datahome import REPO_ROOT

PACKAGE_ROOT = Path(__file__).resolve().parent
# Libraries whose arithmetic or parsing a persisted result depends on.
NUMERICAL_LIBRARIES = ("numpy", "pandas", "scipy", "duckdb", "pyarrow")


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """The checked-out commit, read from ``.git`` without running git (None outside a checkout)."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        loose = git / ref
        if loose.exists():
            return loose.read_text().strip()[:12]
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:12]
    except OSError:
        return None
    return None


def code_version() -> str:
    commit = git_commit()
    return f"{__version__}+{commit}" if commit else __version__


def source_digest(root: Path = PACKAGE_ROOT) -> str:
    """A digest of every ``.py`` file under ``root`` (relative path and bytes), in path order."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def results_version() -> str:
    """The package version, the digest of ``core``'s source and the numerical libraries' versions (read once
    per process: ~40 ms)."""
    from importlib import metadata

    libraries = []
    for name in NUMERICAL_LIBRARIES:
        try:
            libraries.append(f"{name}{metadata.version(name)}")
        except metadata.PackageNotFoundError:
            libraries.append(f"{name}-")
    libs = hashlib.sha256(",".join(libraries).encode()).hexdigest()[:8]
    return f"{__version__}+src.{source_digest()}.lib.{libs}"
