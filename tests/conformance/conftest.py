"""The conformance table: scenario × language → pass / fail / skip, printed after the run."""

from __future__ import annotations

import pytest

#: (scenario, language) -> "pass" | "FAIL" | "skip"
RESULTS: dict[tuple[str, str], str] = {}
LANGUAGES = ["python", "go", "typescript", "java", "rust"]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "test_conformance.py::test_scenario[" not in report.nodeid:
        return
    scenario, language = report.nodeid.split("[", 1)[1].rstrip("]").split("-")
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            RESULTS[(scenario, language)] = "skip"
        elif report.failed:
            RESULTS[(scenario, language)] = "FAIL"
        else:
            RESULTS.setdefault((scenario, language), "pass")
    elif report.when == "teardown" and report.failed:
        RESULTS[(scenario, language)] = "FAIL"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RESULTS:
        return
    scenarios = sorted({scenario for scenario, _ in RESULTS})
    languages = [language for language in LANGUAGES if any(lang == language for _, lang in RESULTS)]
    width = max(len(s) for s in scenarios)
    write = terminalreporter.write_line
    write("")
    write("conformance: scenario x language")
    write(" | ".join([f"{'scenario':<{width}}", *(f"{language:<10}" for language in languages)]))
    write("-+-".join(["-" * width, *("-" * 10 for _ in languages)]))
    for scenario in scenarios:
        cells = [f"{RESULTS.get((scenario, language), '-'):<10}" for language in languages]
        write(" | ".join([f"{scenario:<{width}}", *cells]))
