"""The CLI called in-process: ``run_cli("import", "--db", db, path)``.

A ``python -m core`` subprocess pays the interpreter and the numpy/pandas/scipy/duckdb imports again (about
1–2 s each on CI's cores); most tests that call the CLI test what a command prints and stores, not the
process boundary, so they call :func:`core.cli.main` here and read what it wrote.  The tests whose subject
*is* the process (kills, leases, exit codes of ``python -m core``, two processes on one store, the first
start) keep their subprocesses; CONTRIBUTING.md lists them.

The result has a subprocess's shape (``returncode``, ``stdout``, ``stderr``), so a test moves from one to the
other by changing the call alone.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: str | os.PathLike | None) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_cli(
    *args: str | os.PathLike, env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None
) -> CliResult:
    """Run ``python -m core ARGS`` in this process; what it printed and its exit code.

    ``env`` replaces the environment for the call (as ``subprocess.run(env=…)`` does) and ``cwd`` the working
    directory; both are restored afterwards.  argparse's own exits (``--help``, a usage error) are exit codes
    here, as they are for the process."""
    from core.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with _environment(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliResult(int(code), out.getvalue(), err.getvalue())


__all__ = ["CliResult", "run_cli"]
