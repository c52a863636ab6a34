"""Access to the shipped `config/` data, which the wheel carries as the package ocr_hook.config."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import yaml

# libyaml's loader when it is compiled in: it parses the shipped files many times faster.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _config_dir() -> str:
    # The package's own directory, found through its __file__: importlib.resources would cost more
    # at start-up than every other step of an idle run together (and os.path, unlike pathlib, is
    # loaded already).
    import ocr_hook.config

    return os.path.dirname(ocr_hook.config.__file__)


@cache
def read_text(name: str) -> str:
    """A shipped config file by its path under config/, e.g. "defaults.yaml" or "prompts/main.md"."""
    with open(os.path.join(_config_dir(), *name.split("/")), encoding="utf-8") as handle:
        return handle.read()


@cache
def read_yaml(name: str) -> Any:
    return yaml.load(read_text(name), Loader=_Loader)
