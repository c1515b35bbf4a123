"""The proof cache (smtmodel.solve.cache): unsat answers kept under a hash of the formula text, the
solver and its version; read back labelled as cached; sat answers never kept; --no-cache."""

from __future__ import annotations

import json
import multiprocessing as mp
import os

import pytest

from smtmodel.solve import cache, solve


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path))
    monkeypatch.delenv(cache.ENV_OFF, raising=False)
    return tmp_path / "proofs"


def _successor_is_itself(B):
    x = B.var("x", 8)
    return [(x + 1).eq(x)], {"x": x}


def _successor_is_itself_16(B):
    x = B.var("x", 16)
    return [(x + 1).eq(x)], {"x": x}


def _square_is_nine(B):
    x = B.var("x", 8)
    return [(x * x).eq(9), x.ult(128)], {"x": x}


def _entries(d):
    return sorted(p for p in d.rglob("*.json")) if d.exists() else []


@pytest.mark.parametrize("solver", ["bitwuzla", "z3"])
def test_unsat_is_kept_and_read_back_labelled(cache_dir, solver):
    first = solve(_successor_is_itself, solver, timeout=30)
    assert first.status == "unsat" and "cached" not in first.extra
    assert len(_entries(cache_dir)) == 1
    again = solve(_successor_is_itself, solver, timeout=30)
    assert again.status == "unsat"
    label = again.extra["cached"]
    assert label.startswith(f"cached, proved by {solver} {cache.solver_version(solver)} on 20"), label
    # another formula (a changed width) is another key: proved, not looked up
    other = solve(_successor_is_itself_16, solver, timeout=30)
    assert other.status == "unsat" and "cached" not in other.extra
    assert len(_entries(cache_dir)) == 2


def test_the_key_covers_solver_and_version(cache_dir):
    solve(_successor_is_itself, "bitwuzla", timeout=30)
    z = solve(_successor_is_itself, "z3", timeout=30)      # same text, another solver: proved again
    assert z.status == "unsat" and "cached" not in z.extra
    assert cache.key("x", "z3") != cache.key("x", "bitwuzla") != cache.key("y", "bitwuzla")


def test_sat_is_never_kept(cache_dir):
    r = solve(_square_is_nine, "bitwuzla", timeout=30)
    assert r.status == "sat" and _entries(cache_dir) == []


def test_off_by_environment_and_empty_dir(cache_dir, monkeypatch):
    monkeypatch.setenv(cache.ENV_OFF, "0")
    solve(_successor_is_itself, "bitwuzla", timeout=30)
    assert _entries(cache_dir) == []
    monkeypatch.delenv(cache.ENV_OFF)
    monkeypatch.setenv("MMAPROBE_CACHE", "")
    assert cache.cache_dir() is None


def test_a_damaged_entry_is_a_miss(cache_dir):
    solve(_successor_is_itself, "bitwuzla", timeout=30)
    (path,) = _entries(cache_dir)
    path.write_text("{not json")
    r = solve(_successor_is_itself, "bitwuzla", timeout=30)
    assert r.status == "unsat" and "cached" not in r.extra
    assert json.loads(path.read_text())["status"] == "unsat"        # rewritten whole


def _store_many(args):
    d, i = args
    os.environ["MMAPROBE_CACHE"] = d
    for _ in range(20):
        cache.store(cache.key("same formula", "bitwuzla"), "bitwuzla", i)
    return True


def test_concurrent_writers_leave_whole_entries(cache_dir):
    ctx = mp.get_context("fork")
    with ctx.Pool(3) as pool:
        assert all(pool.map(_store_many, [(str(cache_dir.parent), i) for i in range(8)]))
    (path,) = _entries(cache_dir)                   # one entry, no temporary files left beside it
    assert json.loads(path.read_text())["status"] == "unsat"
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_cli_labels_a_cached_proof_and_no_cache_proves_again(cache_dir, capsys):
    from mmaprobe.cli import main
    args = ["equivalent", "volta-fp16-fp32", "volta-fp16-fp32:normalize=false", "--k", "4", "--timeout", "60"]
    assert main(args + ["--solver", "bitwuzla"]) == 0
    assert "proved by bitwuzla" in capsys.readouterr().out
    assert main(args + ["--solver", "bitwuzla"]) == 0
    out = capsys.readouterr().out
    assert "cached, proved by bitwuzla" in out and "proof cache" in out
    try:
        assert main(args + ["--solver", "bitwuzla", "--no-cache"]) == 0
        out = capsys.readouterr().out
        assert "cached" not in out and "proved by bitwuzla" in out
    finally:
        os.environ.pop(cache.ENV_OFF, None)
