"""ocr-hook: an LLM code reviewer for pre-commit and CI."""

__version__ = "0.1.0"
