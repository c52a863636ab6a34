"""The scope rules the command line and the MCP server share (ocr_hook.changes.scope.choose_scope)."""

from __future__ import annotations

import pytest

from ocr_hook.changes.scope import Scope, ScopeConflict, ScopeError, ScopeIncomplete, choose_scope


def test_nothing_given_is_staged() -> None:
    assert choose_scope() == Scope("staged")


@pytest.mark.parametrize(("named", "refs", "expected"), [
    ((), {"base": "main"}, Scope("base", base="main")),
    ((), {"from_ref": "v1", "to_ref": "HEAD"}, Scope("range", from_ref="v1", to_ref="HEAD")),
    ((), {"commit": "abc"}, Scope("commit", commit="abc")),
    (("push",), {}, Scope("push")),
    (("range",), {"from_ref": "v1", "to_ref": "HEAD"}, Scope("range", from_ref="v1", to_ref="HEAD")),
])
def test_one_complete_scope(named: tuple[str, ...], refs: dict[str, str], expected: Scope) -> None:
    assert choose_scope(named, **refs) == expected


def test_two_scopes_conflict_listed_in_a_fixed_order() -> None:
    with pytest.raises(ScopeConflict) as caught:
        choose_scope(("push",), commit="abc", base="main")
    assert caught.value.kinds == ("base", "commit", "push")
    assert str(caught.value) == "choose one scope, got base and commit and push"


def test_half_a_range_is_incomplete() -> None:
    with pytest.raises(ScopeIncomplete) as caught:
        choose_scope(to_ref="HEAD")
    assert (caught.value.kind, caught.value.missing) == ("range", ("from_ref",))


def test_a_named_scope_reports_what_it_lacks_before_a_conflict() -> None:
    with pytest.raises(ScopeIncomplete) as caught:
        choose_scope(("range",), from_ref="v1", base="main")
    assert (caught.value.kind, caught.value.missing) == ("range", ("to_ref",))


def test_an_unknown_scope_is_a_value_error() -> None:
    with pytest.raises(ScopeError, match="unknown scope 'tomorrow'"):
        choose_scope(("tomorrow",))
    assert issubclass(ScopeError, ValueError)
