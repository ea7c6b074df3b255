"""PID-reuse safety in a private PID namespace (see pid_reuse_scenario.py): a registered
group dies, its number goes to an unrelated group leader, the trip must not touch it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.termination.support import assert_scenario_passed, run_in_private_pid_namespace

SCENARIO = Path(__file__).resolve().parent / "pid_reuse_scenario.py"
SCENARIO_TIMEOUT_S = 40.0


@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 10)
def test_a_recycled_pgid_leader_survives_the_trip_and_the_refusal_is_reported() -> None:
    verdict = run_in_private_pid_namespace(SCENARIO, SCENARIO_TIMEOUT_S)
    assert_scenario_passed(
        verdict,
        {
            "pid_1",
            "init_group_refused",
            "group_registered",
            "group_exited_with_its_code",
            "old_pid_free",
            "stranger_leads_group_with_old_number",
            "stranger_is_another_process",
            "refusal_reported_on_watch",
            "nothing_signalled",
            "stranger_survives_the_trip",
            "stranger_survives_the_end",
            "refusal_in_daemon_log",
        },
    )
