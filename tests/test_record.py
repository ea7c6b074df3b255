"""interrupt_sidecar.record: the value classes written out by hand keep a frozen
dataclass's contract (equal by fields, hashable, shown by fields, never changed)."""

from __future__ import annotations

import pytest
from interrupt_sidecar.domain.types import Instant, InterruptReason, Trip
from interrupt_sidecar.osedge.process_groups import GroupIdentity
from interrupt_sidecar.record import Record


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


def _record_classes() -> list[type[Record]]:
    """Every Record subclass the daemon defines (its modules imported first)."""
    import importlib
    import pkgutil

    import interrupt_sidecar

    for module in pkgutil.walk_packages(interrupt_sidecar.__path__, "interrupt_sidecar."):
        if ".mcp" not in module.name and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: list[type[Record]] = []
    pending: list[type[Record]] = [Record]
    while pending:
        for sub in pending.pop().__subclasses__():
            found.append(sub)
            pending.append(sub)
    return found


def test_every_record_declares_each_field_once_in_slots_annotations_and_init() -> None:
    # A record's fields are written out three times (what dataclasses would generate at
    # import): a field missing from __slots__ cannot be set, one missing from __init__ is
    # never set and reads raise AttributeError. Checked for every record, with a sentinel
    # per parameter, so a forgotten init_field fails here and not in production.
    import inspect

    classes = _record_classes()
    assert len(classes) >= 15, [c.__name__ for c in classes]
    for cls in classes:
        slots = set(cls.__slots__)
        annotations = set(inspect.get_annotations(cls))
        assert annotations == slots, f"{cls.__qualname__}: annotations {annotations} != __slots__ {slots}"
        own_init = cls.__dict__.get("__init__")  # a record without fields has none
        parameters = [p for p in inspect.signature(own_init).parameters if p != "self"] if own_init else []
        assert set(parameters) == slots, f"{cls.__qualname__}: __init__ takes {parameters}, fields are {slots}"
        sentinels = {name: object() for name in parameters}
        built = cls(**sentinels)
        for name in slots:
            value = getattr(built, name)  # raises if __init__ forgot it
            assert value is sentinels[name] or value == [], f"{cls.__qualname__}.{name} is not the value given"


def test_secrets_are_never_shown() -> None:
    # As the dataclasses' repr=False fields were: a repr ends up in logs and tracebacks.
    from interrupt_sidecar.config import ServeConfig
    from interrupt_sidecar.domain.execution import RemoteParent

    parent = RemoteParent("dns:///parent:50051", "exec-1", credential="s3cret-bearer")
    assert "s3cret" not in repr(parent) and "exec-1" in repr(parent)
    assert parent.as_dict()["credential"] == "s3cret-bearer"  # the journal keeps it (owner-only)
    config = ServeConfig(
        listen=(),
        metrics_listen=None,
        state_dir=None,
        grace_ns=1,
        loop="auto",
        auth_token="s3cret-token",
        tls_cert=b"s3cret-cert",
        tls_key=b"s3cret-key",
        tls_client_ca=b"s3cret-ca",
    )
    assert "s3cret" not in repr(config) and "grace_ns=1" in repr(config)
