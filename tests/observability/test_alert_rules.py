"""The alert rules: valid for promtool, unit-tested alert by alert, each with a runbook."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import yaml

from tests.observability.support import RULES, RULES_TEST, RUNBOOK, binary, load_rules

RUNBOOK_PREFIX = "https://github.com/interrupt-sidecar/interrupt-sidecar/blob/main/docs/runbook.md#"


def alerts() -> list[dict[str, Any]]:
    return [rule for group in load_rules()["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_checks_the_rules_file() -> None:
    result = subprocess.run(
        [binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_pass() -> None:
    result = subprocess.run(
        [binary("promtool"), "test", "rules", RULES_TEST.name],
        capture_output=True,
        text=True,
        cwd=RULES_TEST.parent,
        timeout=30,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_quiet_and_firing() -> None:
    tests = yaml.safe_load(RULES_TEST.read_text())["tests"]
    quiet: set[str] = set()
    firing: set[str] = set()
    for test in tests:
        for case in test.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - quiet == set(), "alerts without a case where they must not fire"
    assert names - firing == set(), "alerts without a case where they must fire"


def test_every_alert_has_severity_summary_description_and_a_runbook_anchor_that_exists() -> None:
    anchors = {_anchor(line) for line in RUNBOOK.read_text().splitlines() if line.startswith("## ")}
    for rule in alerts():
        name = rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), name
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], name
        url = annotations["runbook_url"]
        assert url.startswith(RUNBOOK_PREFIX), url
        assert url.removeprefix(RUNBOOK_PREFIX) in anchors, f"{name}: no '## ' heading for {url} in {RUNBOOK}"


def test_the_issue_s_alerts_are_all_there() -> None:
    names = {rule["alert"] for rule in alerts()}
    assert names >= {
        "InterruptSidecarDown",
        "InterruptSidecarNotServing",
        "InterruptSidecarCancelLatencySLOBreach",
        "InterruptSidecarGraceOverrunRatio",
        "InterruptSidecarSigkillEscalationRatio",
        "InterruptSidecarKillRefused",
        "InterruptSidecarHolderLossSpike",
        "InterruptSidecarLeaseLossSpike",
    }


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to dashes."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
