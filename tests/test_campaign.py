"""Campaigns: the journal (resume, damage, a full disk), progress, and faults on a real Dask
LocalCluster (a worker killed mid-task, the client SIGKILLed and resumed, an unreachable scheduler)."""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import time

import pytest

from mmaprobe import cli
from mmaprobe.campaign import (Journal, JournalError, Options, Progress, Task, journal_path, read_journal,
                               run_campaign)
from mmaprobe.campaign import progress as progress_mod
from hw_runner.verify import verify_task
from mmaprobe.errors import EXIT_USAGE

MMAPROBE = [sys.executable, "-m", "mmaprobe"]


def square(x):
    return {"status": "done", "x": x, "y": x * x}


def boom(x):
    raise ValueError(f"no {x}")


def tasks(n):
    return [Task(f"t{i}", square, (i,)) for i in range(n)]


# ---- journal ------------------------------------------------------------------------------------

def test_journal_records_resumes_and_completes(tmp_path):
    p = tmp_path / "j"
    res = run_campaign("sq", {"n": 5}, tasks(5), p, Options(workers=0, quiet=True))
    assert [r["y"] for r in res.values()] == [0, 1, 4, 9, 16]
    head, done, complete, _ = read_journal(p)
    assert head["campaign"] == "sq" and complete and list(done) == [f"t{i}" for i in range(5)]
    # a complete journal: a new run without --resume starts over; with --resume nothing reruns
    calls = []
    res2 = run_campaign("sq", {"n": 5}, tasks(5), p, Options(workers=0, resume=True, quiet=True),
                        log=lambda k, r: calls.append(k))
    assert res2 == res and calls == []


def test_journal_torn_last_line_is_dropped_and_work_resumes(tmp_path):
    p = tmp_path / "j"
    run_campaign("sq", {}, tasks(3), p, Options(workers=0, quiet=True))
    lines = p.read_bytes().split(b"\n")
    # as if killed while writing t3: header, t0..t2, a half record (no completion line)
    p.write_bytes(b"\n".join(lines[:4]) + b"\n" + b'{"key": "t3", "res')
    with pytest.raises(JournalError, match="unfinished run's journal"):
        Journal.open(p, "sq", {}).close()
    ran = []
    res = run_campaign("sq", {}, tasks(5), p, Options(workers=0, resume=True, quiet=True),
                       log=lambda k, r: ran.append(k))
    assert ran == ["t3", "t4"] and [r["y"] for r in res.values()] == [0, 1, 4, 9, 16]
    _, done, complete, _ = read_journal(p)
    assert complete and list(done) == ["t0", "t1", "t2", "t3", "t4"]


@pytest.mark.parametrize("damage, where", [
    (lambda ls: ls[:2] + [b"{not json"] + ls[3:], ":3: not JSON"),
    (lambda ls: ls[:2] + [ls[1]] + ls[3:], ":3: task 't0' recorded twice"),
    (lambda ls: [b'{"journal": "other"}'] + ls[1:], ":1: not an mmaprobe journal"),
    (lambda ls: ls[:2] + [b'{"x": 1}'] + ls[3:], ":3: not a journal record"),
])
def test_corrupt_journal_is_refused_with_path_and_line(tmp_path, damage, where):
    p = tmp_path / "j"
    run_campaign("sq", {}, tasks(3), p, Options(workers=0, quiet=True))
    p.write_bytes(b"\n".join(damage(p.read_bytes().split(b"\n"))))
    with pytest.raises(JournalError, match=f"{p}{where}"):
        run_campaign("sq", {}, tasks(3), p, Options(workers=0, resume=True, quiet=True))


def test_foreign_journal_is_refused(tmp_path):
    p = tmp_path / "j"
    run_campaign("sq", {"n": 3}, tasks(3), p, Options(workers=0, quiet=True))
    with pytest.raises(JournalError, match=f"{p}:1: journal of another campaign"):
        run_campaign("sq", {"n": 4}, tasks(3), p, Options(workers=0, resume=True, quiet=True))


def test_disk_full_leaves_the_journal_intact(tmp_path, monkeypatch):
    """ENOSPC in the middle of a record: the file is cut back to its last complete record, the
    error goes on, and a resumed run (disk freed) completes with nothing lost or repeated."""
    p = tmp_path / "j"
    real_write = os.write
    state = {"n": 0}

    def full(fd, data):
        if fd > 2 and b'"t3"' in bytes(data):
            state["n"] += 1
            real_write(fd, bytes(data)[:7])          # a partial write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        run_campaign("sq", {}, tasks(6), p, Options(workers=0, quiet=True))
    assert p.read_bytes().endswith(b"\n")
    _, done, complete, good = read_journal(p)
    assert list(done) == ["t0", "t1", "t2"] and not complete and good == p.stat().st_size
    monkeypatch.setattr(os, "write", real_write)
    res = run_campaign("sq", {}, tasks(6), p, Options(workers=0, resume=True, quiet=True))
    assert [r["y"] for r in res.values()] == [0, 1, 4, 9, 16, 25] and state["n"] == 1
    assert list(read_journal(p)[1]) == [f"t{i}" for i in range(6)]


def test_failing_task_is_recorded_and_the_others_go_on(tmp_path):
    ts = tasks(2) + [Task("bad", boom, ("x",))]
    res = run_campaign("mix", {}, ts, tmp_path / "j", Options(workers=0, quiet=True))
    assert res["bad"] == {"status": "error", "reason": "ValueError: no x"} and res["t1"]["y"] == 1


def test_journal_path_is_beside_the_output(tmp_path):
    assert journal_path(tmp_path / "out.json") == tmp_path / "out.json.journal"


# ---- progress -----------------------------------------------------------------------------------

def test_progress_without_a_terminal_prints_one_line_per_tenth(monkeypatch):
    monkeypatch.setattr(progress_mod, "DELAY", 0.0)
    buf = io.StringIO()
    with Progress(100, "demo", stream=buf) as bar:
        for _ in range(100):
            bar.update()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 10 and lines[-1].startswith("demo: 100/100 (100%)") and "ETA" in lines[0]
    quiet = io.StringIO()
    with Progress(100, "demo", stream=quiet, quiet=True) as bar:
        for _ in range(100):
            bar.update()
    assert quiet.getvalue() == ""


def test_progress_on_a_terminal_is_a_bar_with_rate_and_eta(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress_mod, "DELAY", 0.0)
    buf = Tty()
    with Progress(10, "demo", stream=buf) as bar:
        for _ in range(10):
            bar.update()
    text = buf.getvalue()
    assert "\r" in text and "demo: 100%" in text and "10/10" in text and "task/s" in text


def test_progress_is_silent_for_short_runs():
    buf = io.StringIO()
    with Progress(10, "demo", stream=buf) as bar:     # DELAY = 2 s: a fast run says nothing
        for _ in range(10):
            bar.update()
    assert buf.getvalue() == ""


# ---- faults on a real LocalCluster ----------------------------------------------------------------

def test_unreachable_scheduler_is_one_line_exit_2(tmp_path, capsys):
    t = time.monotonic()
    rc = cli.main(["bound", "volta-fp16-fp32", "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1",
                   "-o", str(tmp_path / "b.json")])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and time.monotonic() - t < 20
    assert err.startswith("mmaprobe: error: cannot reach the Dask scheduler tcp://127.0.0.1:9") and err.count("\n") == 1
    assert not (tmp_path / "b.json").exists()


def test_scheduler_from_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MMAPROBE_SCHEDULER", "tcp://127.0.0.1:9")
    rc = cli.main(["bound", "volta-fp16-fp32", "--connect-timeout", "1"])
    assert rc == EXIT_USAGE and "tcp://127.0.0.1:9" in capsys.readouterr().err


VERIFY = ("hopper-fp16-fp32", "hopper-fp16-fp32:F=13", 16, 5)        # model, twin "device", k, seed


def chunk_tasks(n_chunks, size, fn=verify_task, extra=()):
    m, other, k, seed = VERIFY
    return [Task(f"chunk-{i}", fn, (*extra, m, other, k, seed, i, size, None, False, f"twin:{other}", size))
            for i in range(n_chunks)]


def kill_my_worker_once(marker, *args):
    """Kill this worker process (SIGKILL) the first time any task runs, then compute normally."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return verify_task(*args)
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def test_worker_killed_mid_task_is_retried_with_the_same_results(tmp_path):
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the workers cannot import tests/
    undisturbed = run_campaign("v", {}, chunk_tasks(4, 512), None, Options(workers=0, quiet=True))
    assert sum(r["kinds"]["normal"][0] for r in undisturbed.values()) > 0     # F=13 differs: real mismatches
    killed = run_campaign("v", {}, chunk_tasks(4, 512, kill_my_worker_once, (str(tmp_path / "marker"),)),
                          tmp_path / "j", Options(workers=2, quiet=True))
    assert (tmp_path / "marker").exists()
    assert killed == undisturbed


def _verify_args(out, *extra, workers="1"):
    m, other, k, seed = VERIFY
    return ["verify", m, "--device", f"twin:{other}", "--k", str(k), "--seed", str(seed),
            "--cases", "12000", "--chunk", "1000", "--workers", workers, "-o", str(out), *extra]


def _verify_cmd(out, *extra):
    return [*MMAPROBE, *_verify_args(out, *extra)]


def _records(path):
    lines = path.read_text().splitlines()
    return sorted(lines[1:-1]), lines[-1]


def test_client_sigkilled_then_resumed_loses_and_repeats_nothing(tmp_path):
    ref = tmp_path / "ref.jsonl"
    assert cli.main(_verify_args(ref, "--quiet", workers="0")) == 1       # undisturbed, in this process
    out = tmp_path / "out.jsonl"
    j = journal_path(out)
    proc = subprocess.Popen(_verify_cmd(out, "--quiet"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if j.exists() and j.read_text().count("\n") >= 4:      # header + 3 records
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)                     # the client and its worker processes
        proc.wait()
    _, done, complete, _ = read_journal(j)
    assert 3 <= len(done) < 12 and not complete and not out.exists()
    r = subprocess.run(_verify_cmd(out, "--resume", "--quiet"), capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr                                  # F=13 mismatches exist
    assert _records(j) == _records(journal_path(ref))                   # nothing lost, nothing repeated
    assert out.read_text() == ref.read_text()


def always_kill_my_worker(x):
    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.slow
def test_a_task_that_always_kills_its_worker_is_reported_unknown(tmp_path):
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ts = tasks(3) + [Task("crash", always_kill_my_worker, (1,))]
    res = run_campaign("crash", {}, ts, tmp_path / "j", Options(workers=2, quiet=True))
    assert res["crash"]["status"] == "unknown" and "workers running this task died" in res["crash"]["reason"]
    assert [res[f"t{i}"]["y"] for i in range(3)] == [0, 1, 4]


def test_verify_keeps_at_most_keep_cases_per_chunk_and_counts_all(tmp_path, capsys):
    from smtmodel.vectors import read_vectors
    out = tmp_path / "m.jsonl"
    full = tmp_path / "full.jsonl"
    base = ["verify", VERIFY[0], "--device", f"twin:{VERIFY[1]}", "--cases", "3000", "--chunk", "1000",
            "--workers", "0", "--quiet"]
    assert cli.main([*base, "-o", str(full)]) == 1
    n_full = len(read_vectors(full).cases)
    capsys.readouterr()
    assert cli.main([*base, "--keep", "5", "-o", str(out)]) == 1
    text = capsys.readouterr().out
    assert len(read_vectors(out).cases) == 15 < n_full
    assert f": {n_full} mismatches in 3000 cases" in text and "(15 written, --keep 5 per chunk)" in text


def test_resume_with_a_subset_of_the_tasks_reruns_nothing(tmp_path):
    p = tmp_path / "j"
    run_campaign("sq", {}, tasks(5), p, Options(workers=0, quiet=True))
    ran = []
    res = run_campaign("sq", {}, tasks(3), p, Options(workers=0, resume=True, quiet=True),
                       log=lambda k, r: ran.append(k))
    assert ran == [] and list(res) == ["t0", "t1", "t2"]


def test_a_scheduler_without_workers_is_one_line_exit_2(tmp_path, capsys):
    from distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster:
        rc = cli.main(["bound", "volta-fp16-fp32", "--scheduler", cluster.scheduler_address,
                       "--connect-timeout", "1"])
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and err.count("\n") == 1 and "has no workers" in err
