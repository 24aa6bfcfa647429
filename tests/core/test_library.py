"""`robot-retarget-core batch` as a pipeline runs it: a subprocess over a folder of real clips.

The clips are the bundled walk and hop cut into pieces (tests/library_clips.py), one file is
corrupt. Workers are killed for real (SIGKILL) while they bake, and a batch is interrupted and
run again: what must hold is on disk (every good clip's file reads back, nothing half-written)
and in the summary report.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from library_clips import make_library  # noqa: E402

from core.chains.mapping import Mapping  # noqa: E402
from core.playback import read_playback  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"
H1 = ROOT / "tests" / "data" / "robots" / "unitree_h1_19dof.urdf"
EXPORT = ["--format", "npz", "--rate", "50", "--allow-violations"]


def command(*args) -> list[str]:
    return [sys.executable, "-m", "core.library.cli", *map(str, args)]


def library(tmp_path: Path, count: int, seconds: float = 2.0) -> tuple[Path, Path]:
    """`count` good clips and one corrupt one; (clip folder, the corrupt file)."""
    folder = tmp_path / "clips"
    make_library(folder, count, seconds)
    bad = folder / "9999_corrupt.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0\n", encoding="utf-8")
    return folder, bad


def start(*args) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.Popen(command(*args), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def kill_a_worker_after_first_clip(proc: subprocess.Popen, is_worker) -> tuple[list[str], int]:
    """Read status lines; after the first `ok` SIGKILL one worker process (a child matching
    `is_worker`). Returns (stdout lines, pid killed)."""
    import psutil

    lines, killed = [], 0
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if not killed and line.startswith("ok "):
            deadline = time.monotonic() + 10
            while not killed and time.monotonic() < deadline:
                workers = [c for c in psutil.Process(proc.pid).children(recursive=True) if is_worker(c)]
                if workers:
                    killed = workers[0].pid
                    os.kill(killed, signal.SIGKILL)
                time.sleep(0.05)
    proc.wait(timeout=300)
    return lines, killed


def check_summary(report: Path, outputs: list[Path], bad: Path) -> dict:
    summary = json.loads(report.read_text(encoding="utf-8"))
    by_source = {}
    for clip in summary["clips"]:
        by_source.setdefault(Path(clip["source"]).name, []).append(clip)
    assert [c["status"] for c in by_source.pop(bad.name)] == ["failed"] * len(summary["robots"])
    assert all(c["status"] == "ok" for entries in by_source.values() for c in entries), summary["clips"]
    assert summary["failed"] == len(summary["robots"]) and summary["succeeded"] == len(outputs)
    for out in outputs:
        track = read_playback(out).track
        assert track.rate_hz == pytest.approx(50.0) and track.samples > 10 and np.isfinite(track.q).all()
    return summary


def no_leftovers(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]


def test_local_engine_two_robots_a_corrupt_clip_and_a_killed_worker(tmp_path):
    """Two robots auto-mapped per clip, two worker processes, one killed mid-run: every good clip
    is written under DIR/<robot>/, the corrupt one is reported with its line, exit 1."""
    clips, bad = library(tmp_path, 8)
    out_dir, report = tmp_path / "out", tmp_path / "summary.json"
    out_dir.mkdir()
    proc = start("batch", "--robot", G1, "--robot", H1, "--inputs", clips, *EXPORT, "--out-dir", out_dir,
                 "--workers", 2, "--report", report)
    lines, killed = kill_a_worker_after_first_clip(proc, lambda p: "core.library.worker" in " ".join(p.cmdline()))
    stderr = proc.stderr.read()
    assert killed and proc.returncode == 1, stderr
    assert sum(line.startswith("FAILED  9999_corrupt.bvh: ") and f"{bad}, line" in line for line in lines) == 2
    assert "left" in stderr and "elapsed" in stderr  # progress with the time left, on stderr
    good = sorted(clips.glob("0*.bvh"))
    outputs = [out_dir / robot / f"{clip.stem}.npz" for robot in ("unitree_g1_29dof", "unitree_h1_19dof")
               for clip in good]
    summary = check_summary(report, outputs, bad)
    assert summary["engine"] == "local" and summary["mapping_file"] is None
    for clip in (c for c in summary["clips"] if c["status"] == "ok"):
        mapping = Mapping.from_dict(clip["mapping"])  # each clip's own auto-map, a loadable preset
        assert {c.name for c in mapping.chains} >= {"left_leg", "right_leg", "left_arm", "right_arm"}
    no_leftovers(out_dir)


def test_dask_engine_local_cluster_survives_a_killed_worker(tmp_path):
    """`--engine dask` on a local cluster of 2 workers: one worker killed mid-run, the batch completes."""
    pytest.importorskip("distributed")
    clips, bad = library(tmp_path, 10)
    out_dir, report = tmp_path / "out", tmp_path / "summary.json"
    out_dir.mkdir()
    proc = start("batch", "--robot", G1, "--inputs", clips, *EXPORT, "--out-dir", out_dir, "--engine", "dask",
                 "--workers", 2, "--report", report)
    lines, killed = kill_a_worker_after_first_clip(proc, lambda p: "spawn_main" in " ".join(p.cmdline()))
    stderr = proc.stderr.read()
    assert killed and proc.returncode == 1, stderr
    assert [line for line in lines if line.startswith("FAILED")] == [
        next(line for line in lines if line.startswith("FAILED  9999_corrupt.bvh: "))]
    summary = check_summary(report, [out_dir / f"{c.stem}.npz" for c in sorted(clips.glob("0*.bvh"))], bad)
    assert summary["engine"] == "dask" and summary["workers"] == 2
    no_leftovers(out_dir)


def test_resume_writes_only_the_missing_outputs(tmp_path):
    """A batch killed after a few clips leaves only complete files; the re-run skips those, writes
    the rest, and leaves the first run's files untouched."""
    clips, bad = library(tmp_path, 6)
    bad.unlink()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = ("batch", "--robot", G1, "--inputs", clips, *EXPORT, "--out-dir", out_dir)
    proc = start(*args)
    for line in proc.stdout:
        if line.startswith("ok ") and len(list(out_dir.glob("*.npz"))) >= 2:
            proc.send_signal(signal.SIGKILL)  # interrupted: no chance to clean up
            break
    proc.wait(timeout=60)
    first = {p.name: p.stat().st_mtime_ns for p in out_dir.glob("*.npz")}
    assert 2 <= len(first) < 6
    for name in first:
        read_playback(out_dir / name)  # complete, not half-written
    leftover = [p for p in out_dir.iterdir() if p.suffix != ".npz"]
    for p in leftover:  # a temporary file a kill may leave: never taken for an output
        assert p.name.startswith(".") and p.suffix == ".tmp"

    rerun = subprocess.run(command(*args, "--report", tmp_path / "again.json"), cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    skipped = [line for line in rerun.stdout.splitlines() if line.startswith("skipped ")]
    written = [line for line in rerun.stdout.splitlines() if line.startswith("ok ")]
    assert len(skipped) == len(first) and len(written) == 6 - len(first)
    assert {p.name: p.stat().st_mtime_ns for p in out_dir.glob("*.npz") if p.name in first} == first
    summary = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert summary["skipped"] == len(first) and summary["succeeded"] == 6 - len(first)

    # an output that does not read back is not a result: the next run writes it again
    broken = out_dir / sorted(first)[0]
    broken.write_bytes(broken.read_bytes()[:100])
    # the same command again (its --report too): the earlier run's summary is replaced by this one's
    third = subprocess.run(command(*args, "--report", tmp_path / "again.json"), cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert sum(line.startswith("ok ") for line in third.stdout.splitlines()) == 1
    read_playback(broken)
    summary = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert summary["skipped"] == 5 and summary["succeeded"] == 1 and len(summary["clips"]) == 6

    # a file there that is not a batch's summary is the user's: kept, the batch refused before any work
    notes = tmp_path / "notes.json"
    notes.write_text('{"clips": "mine"}', encoding="utf-8")
    refused = subprocess.run(command(*args, "--report", notes), cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
    assert refused.returncode != 0 and "file exists" in refused.stderr
    assert notes.read_text(encoding="utf-8") == '{"clips": "mine"}'


def test_bad_batch_input_is_one_line(tmp_path):
    clips, _ = library(tmp_path, 1)
    proc = subprocess.run(command("batch", "--robot", G1, "--robot", H1, "--mapping", tmp_path / "m.json",
                                  "--inputs", clips, "--out-dir", tmp_path), cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "robot-retarget-core: error: 2 --robot but 1 --mapping: give one mapping per robot (in the same order) "
        "or none (auto-map every clip)"]


def test_dask_engine_on_a_running_cluster_by_its_scheduler_address(tmp_path):
    """--scheduler ADDRESS: the clips go to a cluster that was there before the command (started
    here, its workers import this tree's core), and the cluster is left running."""
    distributed = pytest.importorskip("distributed")
    clips, bad = library(tmp_path, 3)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        proc = subprocess.run(command("batch", "--robot", G1, "--inputs", clips, *EXPORT, "--out-dir", out_dir,
                                      "--engine", "dask", "--scheduler", cluster.scheduler_address,
                                      "--report", tmp_path / "summary.json"),
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, proc.stderr
        assert len(cluster.scheduler_info["workers"]) == 1  # still there
    check_summary(tmp_path / "summary.json", [out_dir / f"{c.stem}.npz" for c in sorted(clips.glob("0*.bvh"))], bad)
    unreachable = subprocess.run(command("batch", "--robot", G1, "--inputs", clips, "--out-dir", out_dir,
                                         "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"),
                                 cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip().splitlines()[-1].startswith(
        "robot-retarget-core: error: --scheduler tcp://127.0.0.1:9: cannot reach the Dask scheduler")


def test_export_and_batch_plant_feet_as_bake_does_unless_told_off(tmp_path):
    """`export` and `batch` bake as `bake` does: feet planted by default (a clip exported for the
    robot moves as its bake), none with --contacts off."""
    clip = tmp_path / "walk.bvh"
    clip.write_bytes((ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh").read_bytes())
    planted = {}
    for contacts in ("auto", "off"):
        flags = [] if contacts == "auto" else ["--contacts", contacts]
        report = tmp_path / f"export_{contacts}.json"
        proc = subprocess.run(command("export", "--source", clip, "--robot", G1, "--frames", "0:360", *EXPORT,
                                      "--out", tmp_path / f"export_{contacts}.npz", "--report", report, *flags),
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        exported = json.loads(report.read_text(encoding="utf-8"))
        summary = tmp_path / f"batch_{contacts}.json"
        (tmp_path / f"batch_{contacts}").mkdir()
        proc = subprocess.run(command("batch", "--robot", G1, "--inputs", tmp_path / "*.bvh", *EXPORT,
                                      "--out-dir", tmp_path / f"batch_{contacts}", "--report", summary, *flags),
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        batched = json.loads(summary.read_text(encoding="utf-8"))["clips"][0]
        planted[contacts] = (exported["feet_planted"], batched["feet_planted"])
        if contacts == "auto":
            assert exported["contact_preserved_pct"] > 90 and batched["contact_preserved_pct"] > 90
    assert planted == {"auto": (True, True), "off": (False, False)}
    proc = subprocess.run(command("export", "--source", clip, "--robot", G1, *EXPORT, "--out", tmp_path / "x.npz",
                                  "--contacts", tmp_path / "missing.json"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0 and "missing.json: contacts file not found" in proc.stderr
    assert not (tmp_path / "x.npz").exists()


def test_a_retried_clip_replaces_what_its_killed_attempt_wrote(tmp_path):
    """An engine retries a clip whose worker died after writing its file (a killed worker, as in the
    engines' tests): the retry must replace that file, not fail with 'file exists'."""
    from core.library.batch import BatchOptions, RobotJob, Summary, plan_batch, run_clip
    from core.library.cli import batch_todo
    from core.playback.prepare import ExportSettings

    clips, bad = library(tmp_path, 1)
    bad.unlink()
    settings = ExportSettings(format="npz", period_s=0.02, allow_violations=True)
    robots = [RobotJob("g1", str(G1))]
    jobs = plan_batch(sorted(clips.glob("*.bvh")), robots, tmp_path / "out", "npz")
    todo = batch_todo(jobs, "npz", False, Summary(robots, settings, "local", 1))
    options = BatchOptions(settings, "Y", "test")
    first = run_clip(todo[0], options)  # the attempt whose worker is killed after the write
    assert first["status"] == "ok", first
    again = run_clip(todo[0], options)  # the engine's retry of the same clip
    assert again["status"] == "ok", again
    read_playback(Path(todo[0].out))


def test_a_killed_attempts_temporary_file_is_removed_and_nothing_else(tmp_path):
    """A worker killed while writing leaves write_bytes_atomic's `.NAME.*.tmp` beside the output its
    retry writes (seen in a CI run of the killed-worker test above, which lets the kill land anywhere):
    the batch removes those once its workers are done, and no other file of the folder."""
    from core.library.batch import RobotJob, plan_batch, remove_leftovers

    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("a.bvh", "b.bvh"):
        (clips / name).write_text("")
    jobs = plan_batch(sorted(clips.glob("*.bvh")), [RobotJob("g1", str(G1))], tmp_path / "out", "npz")
    out = Path(jobs[0].out)
    ours = [out.parent / f".{out.name}.zya6o57_.tmp", out.parent / f".{Path(jobs[1].out).name}.k2.tmp"]
    others = [out.parent / ".c.npz.x.tmp", out.parent / f"{out.name}.tmp", out.parent / "notes.txt", out]
    for path in ours + others:
        path.write_text("x")
    remove_leftovers(jobs, "npz")
    assert not any(p.exists() for p in ours)
    assert all(p.exists() for p in others)


def test_the_self_collision_flags_set_the_bake_over_its_preset(tmp_path):
    """--avoid-self-collision / --no-avoid-self-collision and --collision-margin set what a preset (or
    auto-map) would: the walk's arms keep out of the G1's body with the flag over a preset that leaves
    them in, and pass through it with the flag off over a preset that avoids; batch passes the flags to
    every clip (its summary says which settings each clip was baked with, and how it collided)."""
    clip = tmp_path / "walk.bvh"
    clip.write_bytes((ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh").read_bytes())

    def bake(name, *flags):
        report = tmp_path / f"{name}.json"
        proc = subprocess.run(command("bake", "--source", clip, "--robot", G1, "--frames", "0:240",
                                      "--out", tmp_path / f"{name}.csv", "--report", report, *flags),
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return json.loads(report.read_text(encoding="utf-8"))

    auto = bake("auto")
    for avoid in (False, True):
        preset = Mapping.from_dict(auto["mapping"]).with_settings(avoid_self_collision=avoid)
        preset.save(tmp_path / f"preset_{avoid}.json")
    off = bake("flag_off", "--mapping", tmp_path / "preset_True.json", "--no-avoid-self-collision")
    on = bake("flag_on", "--mapping", tmp_path / "preset_False.json", "--avoid-self-collision",
              "--collision-margin", "0.02")
    assert off["mapping"]["settings"]["avoid_self_collision"] is False and off["self_collision_pct"] > 10
    assert on["mapping"]["settings"]["avoid_self_collision"] is True
    assert on["mapping"]["settings"]["collision_margin"] == 0.02 and on["self_collision_pct"] == 0
    assert on["mapping"]["chains"] == off["mapping"]["chains"] == auto["mapping"]["chains"]

    (tmp_path / "batch").mkdir()
    summary = tmp_path / "batch.json"
    proc = subprocess.run(command("batch", "--robot", G1, "--inputs", tmp_path / "*.bvh", *EXPORT, "--out-dir",
                                  tmp_path / "batch", "--report", summary, "--avoid-self-collision"),
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    batched = json.loads(summary.read_text(encoding="utf-8"))["clips"][0]
    assert batched["mapping"]["settings"]["avoid_self_collision"] is True and batched["self_collision_pct"] == 0

    proc = subprocess.run(command("bake", "--source", clip, "--robot", G1, "--out", tmp_path / "x.csv",
                                  "--collision-margin", "-0.01"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1 and "--collision-margin -0.01: expected metres from 0 to 0.2" in proc.stderr
    assert not (tmp_path / "x.csv").exists()


def test_the_self_collision_flags_are_refused_on_a_baked_blend(tmp_path):
    """A .blend's action is already baked: the flags would change nothing, so export says so (before
    Blender is even needed) and writes nothing."""
    out = tmp_path / "x.npz"
    proc = subprocess.run(command("export", "--source", tmp_path / "scene.blend", "--out", out, "--format", "npz",
                                  "--avoid-self-collision"), cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1 and "scene.blend holds a baked action" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()
