"""The seed papers: full citations for the "seed 000" ... "seed 004" that sources and docs name.

Authors and titles are those printed on the seed texts (../shared/seeds/); venues, pages and DOIs
are as the seeds cite one another (seed 001 refs [12], [13]; seed 000 refs [11], [21]; seed 002
ref [33]); arXiv numbers are those of the arXiv listings. Seed 003's text lacks its title page:
it is FTTN (its abstract is FTTN's, which seeds 000, 001, 002 and 004 cite).

:func:`citations` finds the seeds a model's ``source`` names; :func:`cite` formats them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    seed: str                     # "000"
    authors: tuple[str, ...]
    title: str
    venue: str
    year: int
    doi: str | None = None
    arxiv: str | None = None

    def text(self) -> str:
        """One citation line: authors, "title", venue, year, DOI / arXiv."""
        names = self.authors[0] if len(self.authors) == 1 else \
            ", ".join(self.authors[:-1]) + " and " + self.authors[-1]
        ids = ([f"doi:{self.doi}"] if self.doi else []) + ([f"arXiv:{self.arxiv}"] if self.arxiv else [])
        return f"{names}. \"{self.title}\". {self.venue}, {self.year}." + "".join(f" {i}." for i in ids)


SEEDS: dict[str, Paper] = {p.seed: p for p in (
    Paper("000", ("Peichen Xie", "Shuotao Xu", "Yang Wang", "Fan Yang", "Mao Yang"),
          "Bit-Accurate Modeling of GPU Matrix Multiply-Accumulate Units: Demystifying Numerical "
          "Discrepancy and Accuracy", "arXiv preprint (MMA-Sim, github.com/microsoft/MMA-Sim)", 2025,
          arxiv="2511.10909"),
    Paper("001", ("Faizan A. Khattak", "Mantas Mikaitis"), "Accurate Models of NVIDIA Tensor Cores",
          "arXiv preprint", 2025, arxiv="2512.07004"),
    Paper("002", ("Benjamin Valpey", "Xinyi Li", "Sreepathi Pai", "Ganesh Gopalakrishnan"),
          "An SMT Formalization of Mixed-Precision Matrix Multiplication: Modeling Three Generations of "
          "Tensor Cores", "NASA Formal Methods (NFM 2025), Springer, pp. 360-379", 2025, arxiv="2502.15999"),
    Paper("003", ("Xinyi Li", "Ang Li", "Bo Fang", "Katarzyna Swirydowicz", "Ignacio Laguna", "Ganesh Gopalakrishnan"),
          "FTTN: Feature-Targeted Testing for Numerical Properties of NVIDIA & AMD Matrix Accelerators",
          "IEEE/ACM 24th International Symposium on Cluster, Cloud and Internet Computing (CCGrid 2024), "
          "pp. 39-46", 2024, doi="10.1109/CCGrid59990.2024.00014", arxiv="2403.00232"),
    Paper("004", ("Faizan A. Khattak", "Mantas Mikaitis"),
          "Generalized Methodology for Determining Numerical Features of Hardware Floating-Point Matrix "
          "Multipliers: Part I", "2025 IEEE High Performance Extreme Computing Conference (HPEC)", 2025,
          arxiv="2510.15884"),
)}

_SEED_REF = re.compile(r"\bseeds?\s+(\d{3}(?:\s*(?:/|,|and)\s*\d{3})*)", re.IGNORECASE)


def citations(source: str) -> list[Paper]:
    """The seed papers a ``source`` text names ("seed 000 Table 4", "seeds 000/001", ...), in
    order of first mention; unknown numbers are skipped."""
    seen: list[str] = []
    for m in _SEED_REF.finditer(source or ""):
        for num in re.findall(r"\d{3}", m.group(1)):
            if num in SEEDS and num not in seen:
                seen.append(num)
    return [SEEDS[n] for n in seen]


def cite(source: str) -> str:
    """Full citations of the seeds a model's ``source`` names, one per line, each led by
    ``seed NNN:`` ("" where it names none)."""
    return "\n".join(f"seed {p.seed}: {p.text()}" for p in citations(source))
