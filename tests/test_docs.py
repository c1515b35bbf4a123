"""The README and docs/ state what is true now, and their generated parts cannot drift.

Expected values: docs/cli.md and the generated blocks are compared with what
``mmaprobe.docgen`` reads from the parser, the catalog and the committed suite; the counts are
checked once more against ``mmaprobe models``' own output; the history rule and the links are
properties of the text; the README's test command is compared with ``.ci/run``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mmaprobe import cli, docgen

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Project history belongs in git, not in the docs: no issue numbers, work sessions or rounds of
# work. Technical words stay allowed: "round to nearest", "rounding", "rounds up", make_session.
HISTORY = [re.compile(p, re.I) for p in (
    r"\bissues?\s*#?\d+",
    r"(?<![\w&/#])#\d+\b",
    r"\bsessions?\b",
    r"\bround\s+\d+\b",
    r"\b(first|second|third|fourth|fifth|previous|earlier|last|this|next|later)\s+rounds?\b",
    r"\bthis (change|session)\b",
    r"\bpreviously\b",
    r"\bpredates?\b",
    r"\b(before|after|since) (issue|the change)\b",
)]

# Pages that other parts of the project write; a link to one is checked once it exists.
WRITTEN_ELSEWHERE = {"docs/inputs.md"}


def history(text: str) -> list[str]:
    return [m.group(0) for p in HISTORY for m in p.finditer(text)]


def test_generated_parts_are_current():
    """docs/cli.md (from the parser) and every generated block equal what docgen computes now."""
    generated = docgen.blocks()
    stale = [str(p.relative_to(ROOT)) for p in docgen.targets()
             if not p.exists() or p.read_text() != docgen.render(p, generated)]
    assert not stale, f"out of date (run python -m mmaprobe.docgen): {stale}"


def test_cli_reference_names_every_command_and_option():
    text = (ROOT / "docs" / "cli.md").read_text()
    for name, parser, _ in docgen._commands(cli.build_parser()):
        assert f"## `mmaprobe {name}`" in text
        for action in parser._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help", "--debug", "--no-cache"):
                    assert opt in text, (name, opt)


def test_counts_are_what_mmaprobe_models_prints(capsys):
    """The README's model count is the number of lines `mmaprobe models` prints."""
    assert cli.main(["models"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line and not line[0].isspace()]
    readme = (ROOT / "README.md").read_text()
    assert f"**{len(listed)} models**" in readme
    assert f"| models | {len(listed)} |" in (ROOT / "docs" / "results.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_speaks_of_project_history(page):
    bad = [(i, line.strip()[:100], history(line)) for i, line in enumerate(page.read_text().splitlines(), 1)
           if history(line)]
    assert not bad, f"{page.name}: {bad}"


def test_the_history_rule_tells_history_from_arithmetic():
    """The rule catches the phrases that record history and keeps the technical ones."""
    for text in ("since issue 21", "issue #6", "see #22", "moved this session", "Second round: seconds",
                 "in round 3", "as previously measured", "these rows predate the zero rules"):
        assert history(text), text
    for text in ("round to nearest even", "RNE rounding", "rounds up on a tie", "make_session('z3')",
                 "Z3Session", "products rounded first", "a 16-bit round-off", "0x3c00"):
        assert not history(text), text


def _slug(heading: str) -> str:
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_between_pages_resolve(page):
    """Every relative link names an existing file (and heading, for page#anchor links)."""
    text = page.read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if not dest.exists():
            if rel not in WRITTEN_ELSEWHERE:
                broken.append(target)
            continue
        if anchor and dest.suffix == ".md":
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", dest.read_text(), re.M)}
            if anchor not in slugs:
                broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_readme_starts_with_the_two_commands():
    """The README is short, and its first code block holds the main job and the test command;
    the test command is .ci/run's (which only adds pip's -q)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2 and "mmaprobe distinguish" in commands[0]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [commands[1].replace("pip install -e", "pip install -q -e")]
