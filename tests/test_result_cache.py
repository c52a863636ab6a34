import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ocr_hook.findings import Category, Finding, Severity, fingerprint
from ocr_hook.store.result_cache import FORMAT_VERSION, ResultCache, cache_key, default_cache_dir

REPO_ROOT = Path(__file__).resolve().parent.parent


def finding(**changes: object) -> Finding:
    values: dict[str, object] = {
        "path": "src/app.py",
        "start_line": 12,
        "end_line": 14,
        "severity": Severity.HIGH,
        "category": Category.SECURITY,
        "message": "SQL built by string formatting",
        "suggestion": "cursor.execute(sql, (user_id,))",
        "anchored": True,
        "fingerprint": fingerprint("src/app.py", Category.SECURITY, "cursor.execute(sql % user_id)"),
        "existing_code": "cursor.execute(sql % user_id)",
        "anchor_note": None,
        "suppressed": None,
        "extra": {},
    }
    values.update(changes)
    return Finding(**values)  # type: ignore[arg-type]


KEY = cache_key({"diff": "x", "model": "m"})


def test_cache_key_is_canonical_and_sensitive_to_every_part() -> None:
    a = cache_key({"model": "m", "diff": "d"})
    assert a == cache_key({"diff": "d", "model": "m"})  # order does not matter
    assert len(a) == 64 and all(c in "0123456789abcdef" for c in a)
    assert a != cache_key({"model": "m", "diff": "d2"})
    assert a != cache_key({"model": "m", "diff": "d", "prompts": ""})
    # No ambiguity from joining: the parts are JSON-encoded.
    assert cache_key({"a": "b,c"}) != cache_key({"a": "b", "c": ""})
    # Paths decoded with surrogateescape are valid keys too.
    assert cache_key({"path": "caf\udce9.py"}) != cache_key({"path": "caf\u00e9.py"})


def test_round_trip_of_every_field(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache")
    findings = [
        finding(),
        finding(path="odd/caf\udce9 \u00e9\u6f22.py", start_line=0, end_line=0, anchored=False,
                severity=Severity.LOW, category=Category.DOCUMENTATION, suggestion=None,
                anchor_note="quoted code not found", suppressed="baseline",
                extra={"rule": "x", "\u2603": "\n\t\"quoted\""}, message="multi\nline \x1b[31m"),
    ]
    cache.put(KEY, findings)
    loaded = cache.get(KEY)
    assert loaded == findings
    assert loaded is not None and loaded[1].extra == findings[1].extra  # extra is not part of ==
    assert all(type(f.severity) is Severity and type(f.category) is Category for f in loaded)


def test_empty_findings_are_a_hit_not_a_miss(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    assert cache.get(KEY) is None
    cache.put(KEY, [])
    assert cache.get(KEY) == []


def test_layout_permissions_and_lazy_creation(tmp_path: Path) -> None:
    directory = tmp_path / "deep" / "cache"
    cache = ResultCache(directory)
    assert cache.get(KEY) is None
    assert not directory.exists()  # reading creates nothing
    cache.put(KEY, [finding()])
    entry = directory / KEY[:2] / f"{KEY}.json"
    assert entry.is_file()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    document = json.loads(entry.read_text())
    assert document["format"] == FORMAT_VERSION and document["key"] == KEY
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary files left


def test_overwrite_replaces(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    cache.put(KEY, [finding()])
    cache.put(KEY, [finding(message="second")])
    loaded = cache.get(KEY)
    assert loaded is not None and [f.message for f in loaded] == ["second"]


def _write_entry(cache: ResultCache, key: str, content: bytes) -> Path:
    path = cache.directory / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _document(**changes: object) -> bytes:
    from ocr_hook.store.result_cache import finding_to_json

    document: dict[str, object] = {"format": FORMAT_VERSION, "key": KEY, "findings": [finding_to_json(finding())]}
    document.update(changes)
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"\xff\xfe not utf-8",
        b"[]",
        b"null",
        _document()[:-5],
        _document(format=FORMAT_VERSION + 1),
        _document(format=None),
        _document(key="0" * 64),  # an entry copied under another name
        _document(findings={"not": "a list"}),
        _document(findings=[{"path": "a.py"}]),
        _document(findings=[dict(json.loads(_document())["findings"][0], severity="blocker")]),
        _document(findings=[dict(json.loads(_document())["findings"][0], start_line="12")]),
        _document(findings=[dict(json.loads(_document())["findings"][0], start_line=True)]),
        _document(findings=[dict(json.loads(_document())["findings"][0], anchored=1)]),
        _document(findings=[dict(json.loads(_document())["findings"][0], extra={"a": 1})]),
        _document(findings=["text"]),
        b"[" * 100_000,
    ],
    ids=lambda c: repr(c[:30]),
)
def test_corrupt_entries_are_misses(tmp_path: Path, content: bytes) -> None:
    cache = ResultCache(tmp_path)
    _write_entry(cache, KEY, content)
    assert cache.get(KEY) is None
    cache.put(KEY, [finding()])  # and a fresh write repairs the entry
    assert cache.get(KEY) == [finding()]


def test_the_valid_document_used_above_is_a_hit(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    _write_entry(cache, KEY, _document())
    assert cache.get(KEY) == [finding()]


def test_unreadable_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    (tmp_path / KEY[:2] / f"{KEY}.json").mkdir(parents=True)  # a directory where the file should be
    assert cache.get(KEY) is None


def test_unwritable_cache_records_the_error_and_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ResultCache(blocker / "cache")
    cache.put(KEY, [finding()])
    assert cache.last_error is not None and "cannot write the result cache" in cache.last_error
    assert cache.get(KEY) is None


def test_keys_must_come_from_cache_key(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")
    with pytest.raises(ValueError):
        cache.put("ABC", [])


def test_default_cache_dir_follows_xdg_then_home() -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"}, platform="linux") == Path(
        "/x/cache/ocr-hook")
    assert default_cache_dir({"HOME": "/home/u"}, platform="linux") == Path("/home/u/.cache/ocr-hook")
    # A relative XDG_CACHE_HOME would land in the current directory (the work tree): ignored.
    assert default_cache_dir({"XDG_CACHE_HOME": "cache", "HOME": "/home/u"}, platform="linux") == Path(
        "/home/u/.cache/ocr-hook")
    assert default_cache_dir({"HOME": "/home/u"}, platform="darwin") == Path("/home/u/.cache/ocr-hook")


def test_default_cache_dir_on_windows_uses_localappdata() -> None:
    found = default_cache_dir({"LOCALAPPDATA": "C:\\Users\\u\\AppData\\Local", "HOME": "/home/u"},
                              platform="win32")
    assert found.parts[-2:] == ("ocr-hook", "Cache")
    assert str(found).startswith("C:\\Users\\u\\AppData\\Local")


def test_default_cache_dir_without_home_is_per_user_and_absolute() -> None:
    found = default_cache_dir({}, platform="linux")
    assert found.is_absolute()
    assert found.name.startswith("ocr-hook-")
    assert Path.cwd() not in found.parents


_HAMMER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from ocr_hook.findings import Category, Finding, Severity
    from ocr_hook.store.result_cache import ResultCache, cache_key

    cache = ResultCache(Path(sys.argv[1]))
    me = sys.argv[2]
    keys = [cache_key({"n": str(n)}) for n in range(8)]

    def findings(writer, n):
        # Big enough that a torn write would be visible as truncated JSON.
        return [Finding(path=f"f{n}.py", start_line=i, end_line=i, severity=Severity.LOW,
                        category=Category.STYLE, message=writer * 200, suggestion=None, anchored=True,
                        fingerprint=f"{n}-{i}") for i in range(1, 40)]

    expected = {w: {n: findings(w, n) for n in range(8)} for w in ("A", "B")}
    hits = 0
    for round_ in range(60):
        for n, key in enumerate(keys):
            cache.put(key, findings(me, n))
            got = cache.get(key)
            # Either writer's whole entry is acceptable; anything else is a torn or mixed entry.
            if got not in (expected["A"][n], expected["B"][n]):
                print("BAD", round_, n, None if got is None else len(got))
                sys.exit(1)
            hits += 1
    if cache.last_error:
        print("WRITE ERROR", cache.last_error)
        sys.exit(1)
    print("OK", hits)
    """
)


def test_two_processes_hammering_the_same_keys(tmp_path: Path) -> None:
    script = tmp_path / "hammer.py"
    script.write_text(_HAMMER)
    directory = tmp_path / "shared"
    procs = [
        # (a bytecode cache each: see test_memory_store's hammer)
        subprocess.Popen([sys.executable, str(script), str(directory), writer, str(REPO_ROOT)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / f"pyc-{writer}")})
        for writer in ("A", "B")
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out + err
        assert out.startswith("OK 480")
    leftovers = [p for p in directory.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    assert leftovers == []
    assert len([p for p in directory.rglob("*.json")]) == 8
    assert os.listdir(directory)  # entries exist after the run
