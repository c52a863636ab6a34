"""sha256 without loading OpenSSL: what the keys, fingerprints and digests of a run are made with.

`import hashlib` loads OpenSSL's libcrypto (~3 ms of a run answered from the cache, on a 2-core machine);
CPython's own sha256 (`_sha256` before 3.12, `_sha2` since) gives the same digests and loads in a fraction of
that. Interpreters built without it use hashlib.
"""

from __future__ import annotations

from typing import Any


def _constructor() -> Any:
    try:
        from _sha2 import sha256  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.11
        except ImportError:
            from hashlib import sha256
    return sha256


sha256 = _constructor()


def sha256_hex(data: bytes) -> str:
    return str(sha256(data).hexdigest())
