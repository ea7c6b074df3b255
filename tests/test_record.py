"""interrupt_sidecar.record: the value classes written out by hand keep a frozen
dataclass's contract (equal by fields, hashable, shown by fields, never changed)."""

from __future__ import annotations

import pytest
from interrupt_sidecar.domain.types import Instant, InterruptReason, Trip
from interrupt_sidecar.osedge.process_groups import GroupIdentity


def test_equal_and_hashed_by_their_fields_and_type() -> None:
    assert Instant(1, 2) == Instant(1, 2)
    assert Instant(1, 2) != Instant(2, 1)
    assert hash(Instant(1, 2)) == hash(Instant(1, 2))
    assert {GroupIdentity(5, None, 5): "pinned"}[GroupIdentity(5, None, 5)] == "pinned"
    # Another record type with the same values is another value.
    assert GroupIdentity(1, 2, 3) != Trip(InterruptReason.USER_SIGINT, "", Instant(1, 2))


def test_shown_by_their_fields() -> None:
    assert repr(Instant(1, 2)) == "Instant(mono_ns=1, wall_ns=2)"


def test_never_changed_once_built() -> None:
    at = Instant(1, 2)
    with pytest.raises(AttributeError):
        at.mono_ns = 3
    with pytest.raises(AttributeError):
        del at.wall_ns
    with pytest.raises(AttributeError):
        at.other = 1
    assert at == Instant(1, 2)
