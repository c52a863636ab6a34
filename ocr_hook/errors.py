"""Fatal errors the entry points turn into one-line messages and exit codes."""

from __future__ import annotations

# Anything else that escapes a command is a bug of ours: one line and this code, never 1 ("findings"),
# 2 (usage/config/git) or 3 (incomplete), which a CI script may act on.
INTERNAL_ERROR_EXIT = 4


class FatalError(Exception):
    """Nothing was reviewed: usage, configuration or git error (exit 2)."""

    exit_code = 2


class GitError(FatalError):
    """git failed or the repository is in a state we cannot review."""


class ConfigError(FatalError):
    """A setting is unknown, has the wrong type, or a config file cannot be read."""


class NoReviewer(ConfigError):
    """Nothing to review with: no API key and no Claude Code login. Its message is a short block of ocr-hook's
    own lines (the ways in), which the command line prints as lines, not escaped onto one."""
