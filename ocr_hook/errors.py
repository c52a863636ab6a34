"""Fatal errors the entry points turn into one-line messages and exit codes."""

from __future__ import annotations


class FatalError(Exception):
    """Nothing was reviewed: usage, configuration or git error (exit 2)."""

    exit_code = 2


class GitError(FatalError):
    """git failed or the repository is in a state we cannot review."""


class ConfigError(FatalError):
    """A setting is unknown, has the wrong type, or a config file cannot be read."""
