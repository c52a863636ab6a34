"""The TLS trust the SDK would build for itself, built once per process for each trust setting.

Loading the CA bundle is a large part of building an SDK client (tens of milliseconds, on every run). A cold
run builds one client, so nothing changes for it; a long-lived process (the warm worker builds the context
once before it forks its runs, the MCP server runs many reviews) reuses it while the inputs it was made from
are the same: SSL_CERT_FILE and SSL_CERT_DIR as the SDK's HTTP library reads them, and the CA files and
directories themselves (a bundle updated in between is read again).
"""

from __future__ import annotations

import os
import ssl

_last: tuple[tuple[object, ...], ssl.SSLContext] | None = None  # one trust setting at a time


def _stat(path: str | None) -> tuple[int, int, int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _inputs() -> tuple[object, ...]:
    cafile, capath = os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None
    paths = ssl.get_default_verify_paths()
    return (cafile, _stat(cafile), capath, _stat(capath),
            _stat(paths.openssl_cafile), _stat(paths.openssl_capath))


def default_context() -> ssl.SSLContext:
    """What the SDK's HTTP client builds with `verify=True` (the SDK's own default), memoised."""
    global _last
    key = _inputs()
    if _last is None or _last[0] != key:
        import httpx2

        _last = key, httpx2.create_ssl_context(verify=True, trust_env=True)
    return _last[1]
