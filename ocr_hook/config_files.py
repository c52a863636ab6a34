"""Access to the shipped `config/` data, which the wheel carries as the package ocr_hook.config."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def read_text(name: str) -> str:
    """A shipped config file by its path under config/, e.g. "defaults.yaml" or "prompts/main.md"."""
    node = resources.files("ocr_hook.config")
    for part in name.split("/"):
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


@cache
def read_yaml(name: str) -> Any:
    return yaml.safe_load(read_text(name))
