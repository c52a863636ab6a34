"""The findings stage: from the model's comments to the findings every report reads.

Pure code only (no requests, no I/O beyond the files it is handed): the types (`model`), anchoring quoted
code to lines (`anchoring`, `normalise`), dedupe, the filter mode, suppressions, line hashes and fixes. The
requests this stage needs (re-location, the review filter) live in `ocr_hook.agent`.
"""

from ocr_hook.findings.model import (
    Category,
    Comment,
    Finding,
    Fix,
    Severity,
    fingerprint,
    normalise_code,
    shown_suggestion,
)

__all__ = [
    "Category",
    "Comment",
    "Finding",
    "Fix",
    "Severity",
    "fingerprint",
    "normalise_code",
    "shown_suggestion",
]
