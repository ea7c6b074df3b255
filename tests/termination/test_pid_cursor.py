"""The process table skips listing /proc when no PID was handed out since its last listing,
and still sees every change that needs none (see pid_cursor_scenario.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.termination.support import assert_scenario_passed, run_in_private_pid_namespace

SCENARIO = Path(__file__).resolve().parent / "pid_cursor_scenario.py"
SCENARIO_TIMEOUT_S = 40.0


@pytest.mark.timeout(SCENARIO_TIMEOUT_S + 10)
def test_updates_without_a_new_pid_skip_the_listing_and_miss_nothing() -> None:
    verdict = run_in_private_pid_namespace(SCENARIO, SCENARIO_TIMEOUT_S)
    assert_scenario_passed(
        verdict,
        {
            "pid_1",
            "cursor_on",
            "no_listing_without_a_new_pid",
            "an_exit_is_seen_without_a_listing",
            "a_new_pid_is_listed",
            "a_zombie_shows_without_a_listing",
            "a_reaped_zombie_goes_without_a_listing",
            "a_reparented_child_is_read_again_without_a_listing",
            "an_escaped_descendant_is_found_without_a_listing",
            "the_kill_took_the_whole_tree",
            "past_the_window_the_listing_comes_back",
            "cursor_off_where_proc_is_another_namespace",
        },
    )
