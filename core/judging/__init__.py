"""Judging pipeline: configuration, prompts, output parsing, resumable concurrent runs.

One finished call is one stored judgment, committed at once under the
idempotency key (battle, judge, order, prompt version, variant), so a run that
is killed at any moment resumes without losing or duplicating work.
"""
