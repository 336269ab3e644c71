"""The code version a result was made with: the package version plus the git commit when there is one."""

from __future__ import annotations

from pathlib import Path

from core import __version__
from core.datahome import REPO_ROOT


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
