"""The domain's enums carry the wire's numbers: conversion at the boundary is int()."""

from __future__ import annotations

import enum

import pytest
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason, ToolOutcome
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb


@pytest.mark.parametrize(
    ("domain", "wire", "prefix", "unspecified_member"),
    [
        (InterruptReason, pb.InterruptReason, "INTERRUPT_REASON_", False),
        (InterruptBehavior, pb.InterruptBehavior, "INTERRUPT_BEHAVIOR_", False),
        (ToolOutcome, pb.ToolOutcome, "TOOL_OUTCOME_", True),
    ],
)
def test_domain_enum_matches_the_proto(
    domain: type[enum.IntEnum], wire: object, prefix: str, unspecified_member: bool
) -> None:
    wire_values = {name.removeprefix(prefix): number for name, number in wire.items()}  # type: ignore[attr-defined]
    if not unspecified_member:
        del wire_values["UNSPECIFIED"]
    assert {m.name: int(m) for m in domain} == wire_values
