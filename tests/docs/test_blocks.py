"""The documentation's shape: every code block runs or says why not, links lead somewhere,
each page says whom it is for, the README stays short, and the performance page shows the
run in bench/results/latest.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.blocks import DATA_LANGUAGES, DOCS, ROOT, all_blocks, blocks, doc_files

HERE = Path(__file__).resolve().parent
README_HARD_LIMIT = 300
#: Pages other work writes; links to them are allowed before they land. Remove a name once
#: its page is in docs/.
PENDING_PAGES: frozenset[str] = frozenset()


def used_doctest_names() -> set[str]:
    """The names the tests of this folder pass to ``docblock`` (or to a helper that calls it)."""
    names: set[str] = set()
    for test in HERE.glob("test_*.py"):
        names.update(re.findall(r'(?:docblock|helm_install_as_template)\(\s*"([^"]+)"', test.read_text()))
    return names


def test_every_command_or_program_block_is_run_or_marked_illustrative() -> None:
    unmarked = [
        f"{block.where} ({block.language or 'no language'})"
        for block in all_blocks()
        if block.marker is None and block.language not in DATA_LANGUAGES
    ]
    assert not unmarked, (
        "these blocks are commands or programs but neither run in tests/docs "
        "(<!-- doctest: NAME -->) nor say why they cannot (<!-- illustrative: why -->): " + ", ".join(unmarked)
    )


def test_every_block_names_its_language() -> None:
    nameless = [block.where for block in all_blocks() if not block.language]
    assert not nameless, f"blocks without a language after the fence: {nameless}"


def test_illustrative_blocks_give_a_reason() -> None:
    bare = [block.where for block in all_blocks() if block.marker == "illustrative" and len(block.value) < 10]
    assert not bare, f"illustrative blocks must say why they are not run (and what proves them): {bare}"


def test_every_doctest_block_is_run_by_a_test_and_every_name_exists() -> None:
    marked = [block.value for block in all_blocks() if block.marker == "doctest"]
    duplicates = {name for name in marked if marked.count(name) > 1}
    assert not duplicates, f"doctest names must be unique: {duplicates}"
    used = used_doctest_names()
    assert not set(marked) - used, f"marked `doctest` but run by no test in tests/docs: {set(marked) - used}"
    assert not used - set(marked), f"tests ask for blocks that no page marks: {used - set(marked)}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {_slug(m[1]) for m in re.finditer(r"^#{1,6}\s+(.*)$", text, flags=re.M)}


def _links(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)  # not inside code blocks
    text = re.sub(r"`[^`\n]*`", "", text)  # nor code spans
    return [(m[1], m[2]) for m in re.finditer(r"\[([^\]]*)\]\(([^)\s]+)\)", text)]


@pytest.mark.parametrize("page", [*doc_files(), ROOT / "CHANGELOG.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings_that_exist(page: Path) -> None:
    broken = []
    for text, target in _links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not fetched
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        relative = destination.relative_to(ROOT).as_posix() if destination.is_relative_to(ROOT) else str(destination)
        if not destination.exists():
            if relative not in PENDING_PAGES:
                broken.append(f"[{text}]({target}): no {relative}")
            continue
        if anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
            broken.append(f"[{text}]({target}): no heading #{anchor} in {relative}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_each_docs_page_starts_by_saying_whom_it_is_for(page: Path) -> None:
    lines = [line for line in page.read_text().splitlines() if line.strip() and not line.lstrip().startswith("<!--")]
    assert lines[0].startswith("# "), f"{page.name}: starts with a title"
    assert re.match(r"^\W*(for|who)\b", lines[1], flags=re.I), (
        f"{page.name}: the line after the title says whom the page is for; got {lines[1]!r}"
    )


def test_readme_is_short_and_keeps_no_lab_notebook() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_HARD_LIMIT, "the README is read in five minutes: move detail to docs/"
    dated = re.findall(r"\b\d{1,2}:\d{2} UTC\b", text)
    assert not dated, f"dated runs belong in git history and the changelog, not the README: {dated}"


def _latest_run_section(page: str) -> str:
    start = page.index("## The latest full run")
    return page[start : page.index("\n## ", start + 1)]


def test_performance_page_shows_the_run_in_bench_results_latest() -> None:
    latest = (ROOT / "bench" / "results" / "latest.md").read_text()
    section = _latest_run_section((DOCS / "performance.md").read_text())
    stamp = latest.splitlines()[0].rpartition("— ")[2]
    assert stamp in section, f"docs/performance.md must show the run of bench/results/latest.md ({stamp})"
    # Every figure in the page's tables is one of that run's (a figure copied from another
    # run, or left behind when latest.md changes, fails here).
    table_lines = [line for line in section.splitlines() if line.startswith("|")]
    figures = set(re.findall(r"\d+\.\d+", "\n".join(table_lines)))
    missing = sorted(figure for figure in figures if figure not in latest)
    assert not missing, f"figures in docs/performance.md that bench/results/latest.md does not have: {missing}"


def test_readme_headline_figures_are_in_the_latest_run() -> None:
    readme = (ROOT / "README.md").read_text()
    headline = readme[readme.index("## Performance") :].split("\n## ", 1)[0]
    latest = (ROOT / "bench" / "results" / "latest.md").read_text()
    figures = re.findall(r"\d+\.\d+", headline)
    assert figures, "the README's Performance section gives its headline figures"
    missing = [figure for figure in figures if figure not in latest]
    assert not missing, f"README headline figures not in bench/results/latest.md: {missing}"


def test_the_block_parser_sees_markers_and_fences(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# T\n\n<!-- doctest: one -->\n```sh\necho 1\n```\n\n```python\nx = 1\n```\n\n"
        "1. step\n\n   <!-- illustrative: because it needs a cluster -->\n   ```sh\n   kubectl get pods\n   ```\n"
    )
    found = list(blocks(page))
    assert [(b.language, b.marker, b.value, b.text) for b in found] == [
        ("sh", "doctest", "one", "echo 1\n"),
        ("python", None, "", "x = 1\n"),
        ("sh", "illustrative", "because it needs a cluster", "kubectl get pods\n"),
    ]
