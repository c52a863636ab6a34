"""Access to the shipped `config/` data, which the wheel carries as the package ocr_hook.config."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

# libyaml's loader when it is compiled in: it parses the shipped files many times faster.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _config_dir() -> Path:
    # The package's own directory, found through its __file__: importlib.resources would cost more
    # at start-up than every other step of an idle run together.
    import ocr_hook.config

    return Path(ocr_hook.config.__file__).parent


@cache
def read_text(name: str) -> str:
    """A shipped config file by its path under config/, e.g. "defaults.yaml" or "prompts/main.md"."""
    return _config_dir().joinpath(*name.split("/")).read_text(encoding="utf-8")


@cache
def read_yaml(name: str) -> Any:
    return yaml.load(read_text(name), Loader=_Loader)
