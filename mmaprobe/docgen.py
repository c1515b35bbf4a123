"""The generated parts of the documentation: ``docs/cli.md`` (the command-line reference, read
from the argparse parser :func:`mmaprobe.cli.build_parser`) and blocks in other pages: the
counts in ``README.md`` and ``docs/results.md`` (read from the catalog, the harness registries
and the committed pairwise suite) and the NVIDIA kernel table in ``docs/harness.md``, so no count
or registry in the docs is typed by hand.

    python -m mmaprobe.docgen            # rewrite docs/cli.md and the blocks in place
    python -m mmaprobe.docgen --check    # exit 1 naming every file that is not current

A block is the text between the lines ``<!-- generated: NAME -->`` and ``<!-- end generated -->``;
``tests/test_docs.py`` checks that every generated text equals what is committed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"help", "debug", "no_cache"}          # every command takes --debug and --no-cache: said once


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=100, max_help_position=40)


def _commands(parser, prefix: str = ""):
    """(name, parser, help) for every command and subcommand, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{prefix}{name}", sub, helps.get(name) or ""
                yield from _commands(sub, f"{prefix}{name} ")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def cli_markdown() -> str:
    """docs/cli.md: per command its usage line and a table of its arguments, from the parser."""
    from .cli import build_parser
    root = build_parser()
    out = ["# Command-line reference", "",
           "Generated from the parser (`mmaprobe.cli.build_parser`) by `python -m mmaprobe.docgen`; "
           "`tests/test_docs.py` checks that this file is current. Every command also takes `--debug` "
           "(print the traceback of an internal error) and `--no-cache` (neither read nor write the "
           "proof cache). Exit status: 0 done or answer found; 1 the other answer (not equivalent, "
           "a mismatch, a counterexample, no fit); 2 a user error, printed as one line "
           "`mmaprobe: error: ...`; 3 no answer (solver timeout, answers pending); 4 the twin "
           "contradicts a solver and 70 any other internal error (both bugs); 130 interrupted.", ""]
    for name, p, help_ in _commands(root):
        p.formatter_class = _formatter
        out += [f"## `mmaprobe {name}`", ""]
        if help_:
            line = _cell(help_)
            out += [line[0].upper() + line[1:] + ("" if line.endswith(".") else "."), ""]
        out += ["```", p.format_usage().strip(), "```", ""]
        fmt = p._get_formatter()
        rows = [a for a in p._actions if a.dest not in SKIP and not isinstance(a, argparse._SubParsersAction)
                and a.help != argparse.SUPPRESS]
        if rows:
            out += ["| argument | meaning |", "|---|---|"]
            for a in rows:
                out.append(f"| `{fmt._format_action_invocation(a)}` | {_cell(fmt._expand_help(a)) if a.help else ''} |")
            out.append("")
    return "\n".join(out)


def counts() -> dict:
    """What the catalog, the registries and the committed suite hold now."""
    from hw_runner.amd.kernels import MFMA_KERNELS
    from hw_runner.kernels import KERNELS
    from queries.bounds import by_signature, table9_models
    from smtmodel.catalog import alias_models, all_models, integer_models
    from smtmodel.dataflow import PROFILES
    from smtmodel.formats import FORMATS, INT_FORMATS
    from smtmodel.schemes import SCHEMES
    fp, ints, al = all_models(), integer_models(), alias_models()
    suite = json.loads((ROOT / "generated_tests" / "index.json").read_text())["results"].values()
    t9 = table9_models()
    return {"models": len(fp) + len(ints) + len(al), "fp": len(fp), "catalog": sum(m.kind == "catalog" for m in fp),
            "aliases": len(al), "unvalidated": sum(not m.validated for m in fp + ints + al),
            "rivals": sum(m.kind == "rival" for m in fp), "integer": len(ints),
            "scaled": sum(bool(m.scale_fmt) for m in fp), "mixed": sum(bool(m.mixed) for m in fp),
            "archs": len({m.arch for m in fp + ints + al}), "formats": len(FORMATS), "int_formats": len(INT_FORMATS),
            "nv_kernels": len(KERNELS), "amd_kernels": len(MFMA_KERNELS), "dataflows": len(PROFILES),
            "schemes": len(SCHEMES), "t9_models": len(t9), "t9_sets": len(by_signature(t9)),
            "pairs": len(suite), "sat": sum(e["status"] == "sat" for e in suite),
            "unsat": sum(e["status"] == "unsat" for e in suite),
            "by_twin": sum(e["status"] == "sat" and e["solver"].startswith("twin") for e in suite),
            "by_terms": sum(e["status"] == "unsat" and e["solver"].startswith("identical") for e in suite),
            "unknown": sum(e["status"] not in ("sat", "unsat") for e in suite)}


def blocks() -> dict[str, str]:
    """The text of every generated block, by name."""
    c = counts()
    short = (f"The catalog holds **{c['models']} models** (`mmaprobe models`): {c['fp']} floating-point "
             f"({c['catalog']} catalog findings, {c['rivals']} rival hypotheses; {c['scaled']} block-scaled, "
             f"{c['mixed']} with mixed operands), {c['integer']} integer MMA models and {c['aliases']} B300 aliases "
             f"of B200 models; {c['unvalidated']} of them UNVALIDATED hypotheses (CDNA4, B300), over {c['archs']} "
             f"architectures; {c['nv_kernels'] + c['amd_kernels']} harness kernels, {c['dataflows']} named "
             f"GEMM dataflows, {c['schemes']} error-compensated GEMM schemes.")
    table = "\n".join([
        "| what | count | listed by |", "|---|---|---|",
        f"| models | {c['models']} | `mmaprobe models` |",
        f"| floating-point: catalog findings / rival hypotheses | {c['catalog']} / {c['rivals']} | `mmaprobe models` |",
        f"| of them block-scaled (MX, NVFP4) / with mixed A, B formats | {c['scaled']} / {c['mixed']} | "
        "`mmaprobe models` |",
        f"| integer MMA models (IMMA, `v_mfma_i32_*`) | {c['integer']} | `mmaprobe models` |",
        f"| B300 aliases of B200 models / UNVALIDATED models (CDNA4, B300) | {c['aliases']} / {c['unvalidated']} | "
        "`mmaprobe models` |",
        f"| number formats: floating-point / integer | {c['formats']} / {c['int_formats']} | `mmaprobe formats` |",
        f"| harness kernels: NVIDIA PTX / AMD MFMA | {c['nv_kernels']} / {c['amd_kernels']} | "
        "`mmaprobe harness list --vendor all` |",
        f"| named GEMM dataflows | {c['dataflows']} | `mmaprobe dataflows` |",
        f"| error-compensated GEMM schemes (fp32 inputs) | {c['schemes']} | `mmaprobe scheme list` |",
        f"| models under seed 000 Table 9 / parameter sets | {c['t9_models']} / {c['t9_sets']} | `mmaprobe bound all` |",
        f"| pairwise suite: pairs / distinguished (by the twin search) / proved equivalent (by identical traced "
        f"terms) / unknown | {c['pairs']} / {c['sat']} ({c['by_twin']}) / {c['unsat']} ({c['by_terms']}) / "
        f"{c['unknown']} | `generated_tests/index.json` (`mmaprobe suite`) |"])
    return {"counts": short, "counts-table": table, "nvidia-kernels": nvidia_kernels(), **property_blocks(),
            **identify_blocks()}


PROPERTY_JOURNAL = ROOT / "bench" / "results" / "properties.jsonl"


def property_blocks() -> dict[str, str]:
    """docs/properties.md's catalog table and its summary, from the committed journal of
    ``python bench/properties.py`` (every floating-point model x every property)."""
    from queries.properties import PROPERTIES
    from queries.properties.catalog import parameter_groups, read_journal, summary_table, table
    from smtmodel.catalog import all_models
    if not PROPERTY_JOURNAL.is_file():
        return {}
    rows = read_journal(PROPERTY_JOURNAL)
    groups = parameter_groups(list(all_models()))
    props = list(PROPERTIES)
    timeouts = sorted({r["timeout"] for r in rows.values()})
    twins = sorted({r["twin_seconds"] for r in rows.values() if "twin_seconds" in r})
    twin = f"the twin search {' / '.join(f'{t:g}' for t in twins)} s" if twins else "the twin search"
    head = (f"{sum(len(g) for g in groups)} floating-point models ({len(groups)} distinct parameter sets) x "
            f"{len(props)} properties, timeout {' / '.join(f'{t:g}' for t in timeouts)} s per check (rewriting, "
            f"{twin}, then Bitwuzla and z3 for the rest, first for half of it on the restricted question where 10 s "
            f"or more are left: `on 2 products`); `{PROPERTY_JOURNAL.relative_to(ROOT)}`:\n\n")
    return {"property-summary": head + summary_table(rows, groups, props),
            "property-table": table(rows, groups, props)}


IDENTIFY_ROWS = ROOT / "bench" / "results" / "identify.json"


def identify_blocks() -> dict[str, str]:
    """docs/results.md's identification table, from the committed rows of ``python bench/identify.py
    [--models ...] --jobs 2 --verify 100000 --json bench/results/identify.json`` (catalog models as
    hidden twins, identified from the command line's defaults; the rows say which)."""
    import json

    from queries.identify.summary import headline, pairs_table
    if not IDENTIFY_ROWS.is_file():
        return {}
    rows = json.loads(IDENTIFY_ROWS.read_text(encoding="utf-8"))
    return {"identify-catalog": f"{headline(rows)} `{IDENTIFY_ROWS.relative_to(ROOT)}`:\n\n{pairs_table(rows)}"}


def _plain(regex: str) -> str:
    """A SASS pattern as text: ``HMMA\\.16816\\.F32\\b`` -> ``HMMA.16816.F32``."""
    return re.sub(r"\(\?!.*?\)", "", regex).replace("\\b", "").replace("\\", "")


def nvidia_kernels() -> str:
    """The NVIDIA harness kernels: PTX instruction, formats, targets and the SASS the build expects."""
    from hw_runner.kernels import KERNELS
    rows = ["| kernel | PTX instruction | A·B + C → D | targets | SASS expected (from target) |",
            "|---|---|---|---|---|"]
    for k in KERNELS.values():
        sass = "; ".join(f"{_plain(rx)} ({arch}{', emulated' if k.emulated_on(arch) else ''})" for arch, rx in k.sass)
        targets = f"{k.arch}–{k.max_arch}" if k.max_arch else f"{k.arch} and newer"
        rows.append(f"| `{k.id}` | `{k.ptx}` | {k.operand_fmts[0]} · {k.operand_fmts[1]} + {k.c_fmt} → {k.out_fmt} | {targets} | "
                    f"{_cell(sass)} |")
    return "\n".join(rows)


_BLOCK = re.compile(r"^(<!-- generated: (?P<name>[\w-]+) -->)$(?P<body>.*?)^(<!-- end generated -->)$", re.S | re.M)


def render(path: Path, generated: dict[str, str]) -> str:
    """The text ``path`` should hold: docs/cli.md whole, any other file with its blocks replaced."""
    if path == ROOT / "docs" / "cli.md":
        return cli_markdown() + "\n"
    text = path.read_text()
    return _BLOCK.sub(lambda m: f"{m.group(1)}\n{generated[m.group('name')]}\n{m.group(4)}", text)


def targets() -> list[Path]:
    """docs/cli.md and every README/docs page holding a generated block."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [ROOT / "docs" / "cli.md"] + [p for p in pages if p.name != "cli.md" and _BLOCK.search(p.read_text())]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mmaprobe.docgen", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is not current")
    args = ap.parse_args(argv)
    generated, stale = blocks(), []
    for path in targets():
        want = render(path, generated)
        if not path.exists() or path.read_text() != want:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(want)
    for p in stale:
        print(f"{'not current' if args.check else 'wrote'}: {p}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
