"""Argument helpers shared by the command modules."""

from __future__ import annotations

import argparse

from core.cli import UserError
from core.datahome import DEFAULT_DB


def add_db_arg(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("--db", default=None if required else str(DEFAULT_DB), required=required,
                   help=f"DuckDB store file (default {DEFAULT_DB})")


def open_store(path: str, read_only: bool = True):
    """Open a store, turning store errors into clean CLI errors (exit 2)."""
    from core.store import Store, StoreError

    try:
        return Store.open(path, read_only=read_only)
    except StoreError as exc:
        raise UserError(str(exc)) from None
