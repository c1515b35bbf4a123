"""GPU products and the architecture of their matrix units (the catalog's ``arch`` field), so an
observation named by its GPU (``--observe MI250X=0``) is read against that architecture's models.
From the vendors' product pages and whitepapers (NVIDIA Volta/Turing/Ampere/Ada/Hopper/Blackwell
architecture whitepapers; AMD CDNA/CDNA2/CDNA3/CDNA4 whitepapers; Blackwell Ultra: B300/GB300,
sm_103)."""

from __future__ import annotations

PRODUCTS: dict[str, str] = {
    "V100": "volta", "TITANV": "volta",
    "T4": "turing", "RTX2080": "turing", "RTX2080TI": "turing",
    "A100": "ampere", "A30": "ampere", "A10": "ampere", "RTX3090": "ampere", "RTXA6000": "ampere",
    "L4": "ada", "L40": "ada", "L40S": "ada", "RTX4090": "ada", "RTX4060": "ada", "RTX6000ADA": "ada",
    "H100": "hopper", "H200": "hopper", "GH200": "hopper",
    "B200": "blackwell", "B100": "blackwell", "GB200": "blackwell",
    "B300": "blackwell-ultra", "GB300": "blackwell-ultra",
    "RTX5090": "rtx-blackwell", "RTX5080": "rtx-blackwell",
    "MI100": "cdna1",
    "MI210": "cdna2", "MI250": "cdna2", "MI250X": "cdna2",
    "MI300X": "cdna3", "MI300A": "cdna3", "MI325X": "cdna3",
    "MI350X": "cdna4", "MI355X": "cdna4",
}


def arch_of(name: str) -> str | None:
    """The architecture of a GPU product name (case, spaces, dashes ignored), or None."""
    key = "".join(ch for ch in name.upper() if ch.isalnum())
    for prefix in ("NVIDIA", "AMD", "INSTINCT", "TESLA", "GEFORCE"):
        key = key.removeprefix(prefix)
    key = key.removesuffix("SXM").removesuffix("PCIE")
    return PRODUCTS.get(key)
