"""A batch: every clip of a folder onto one or more robots, one playback file per clip and robot.

What a worker runs (run_clip) never raises for a bad clip: it returns the clip's status, so a
failing clip is reported and the batch goes on. Robots and mappings are parsed once per worker
process (robot_model's cache), not per clip. Outputs are written atomically by core.playback, so
a re-run can trust an existing output that reads back (complete_outputs) and skip its clip.
"""
from __future__ import annotations

import glob
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..playback import ExportSettings, read_playback
from ..playback.formats import FORMATS, output_paths
from .arguments import CommandError
from .clip import RobotModel, bake_clip_file, export_bake, load_robot

CLIP_SUFFIXES = (".bvh", ".fbx", ".blend")


@dataclass(frozen=True)
class RobotJob:
    """One robot of a batch: its output folder name, URDF and mapping preset (None: auto-map), and the
    self-collision settings the batch's flags put over it (None: the preset's)."""

    name: str
    urdf: str
    mapping: str | None = None
    avoid_self_collision: bool | None = None
    collision_margin: float | None = None

    @property
    def settings(self) -> dict:
        """The retarget settings over the preset's (load_robot's `settings`)."""
        return {k: v for k, v in (("avoid_self_collision", self.avoid_self_collision),
                                  ("collision_margin", self.collision_margin)) if v is not None}


@dataclass(frozen=True)
class ClipJob:
    """One clip onto one robot; overwrite: its outputs may be replaced (a batch's own: see batch_todo)."""

    source: str
    out: str
    robot: RobotJob
    overwrite: bool = False


@dataclass(frozen=True)
class BatchOptions:
    """What every clip of a batch shares (sent once to each worker)."""

    settings: ExportSettings
    source_up: str = "Y"
    generator: str = "robot_retarget"
    frames: str | None = None
    contacts: str = "auto"  # feet planted as `bake` plants them (auto) or not (off)


def batch_inputs(pattern: str) -> list[Path]:
    """Clips in a folder (not recursive) or matching a glob, sorted; .bvh, .fbx and .blend."""
    folder = Path(pattern)
    found = folder.iterdir() if folder.is_dir() else (Path(p) for p in glob.glob(pattern, recursive=True))
    clips = sorted(p.absolute() for p in found if p.is_file() and p.suffix.lower() in CLIP_SUFFIXES)
    if not clips:
        raise CommandError(f"--inputs {pattern}: no clips ({', '.join(CLIP_SUFFIXES)}) found")
    return clips


def batch_robots(robots: list[str], mappings: list[str] | None, settings: dict | None = None) -> list[RobotJob]:
    """--robot A --robot B [--mapping MA --mapping MB]: checked at once, not on every clip. settings: the
    self-collision flags' (arguments.self_collision_settings), for every robot."""
    mappings = list(mappings or [])
    if mappings and len(mappings) != len(robots):
        raise CommandError(f"{len(robots)} --robot but {len(mappings)} --mapping: give one mapping per robot "
                           "(in the same order) or none (auto-map every clip)")
    jobs = []
    for k, urdf in enumerate(robots):
        mapping = str(Path(mappings[k]).absolute()) if mappings else None
        load_robot(urdf, mapping)  # a bad URDF or preset fails the batch before any clip
        jobs.append(RobotJob(Path(urdf).stem, str(Path(urdf).absolute()), mapping, **(settings or {})))
    names = [r.name for r in jobs]
    for name in names:
        if names.count(name) > 1:
            raise CommandError(f"two --robot files are named {name!r}: outputs go to DIR/<robot name>/, "
                               "rename one of them")
    return jobs


def plan_batch(clips: list[Path], robots: list[RobotJob], out_dir: Path, fmt: str) -> list[ClipJob]:
    """One job per clip and robot: DIR/<clip>.<ext> for one robot, DIR/<robot>/<clip>.<ext> for several."""
    out_dir = out_dir.absolute()
    try:  # a library run writes a new folder more often than not
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"{out_dir}: cannot make the output folder ({exc.strerror or exc})") from None
    if not os.access(out_dir, os.W_OK):
        raise CommandError(f"{out_dir}: output folder is not writable")
    jobs, seen = [], {}
    for robot in robots:
        folder = out_dir / robot.name if len(robots) > 1 else out_dir
        folder.mkdir(exist_ok=True)
        for clip in clips:
            out = folder / (clip.stem + FORMATS[fmt])
            if out in seen:
                raise CommandError(f"{seen[out]} and {clip} would both write {out}")
            seen[out] = clip
            jobs.append(ClipJob(str(clip), str(out), robot))
    return jobs


def complete_outputs(out, fmt: str) -> bool:
    """Every file of `out` exists and reads back (a csv's sidecar too): a clip a re-run may skip."""
    if not all(p.is_file() for p in output_paths(Path(out), fmt)):
        return False
    try:
        read_playback(out, fmt)
    except Exception:  # a broken zip, pickle or text: whatever a cut file makes its reader raise
        return False
    return True


def clip_status(job: ClipJob, started: float, report: dict | None = None, error: str | None = None,
                mapping: dict | None = None) -> dict:
    """A clip's entry in the summary report (and the worker's answer)."""
    status = {"source": job.source, "out": job.out, "robot": job.robot.name,
              "status": "ok" if error is None else "failed", "seconds": round(time.monotonic() - started, 3)}
    if error is not None:
        return dict(status, error=error)
    keys = ("files", "frames", "rate_hz", "samples", "duration_s", "violations", "retimed_seconds_added",
            "feet_planted", "contact_preserved_pct", "self_collision_pct", "warnings")
    status.update({k: report.get(k) for k in keys})
    return dict(status, mapping=mapping) if mapping is not None else status


_ROBOTS: dict = {}  # RobotJob -> (file stamps, RobotModel): parsed once per worker process


def robot_model(job: RobotJob) -> RobotModel:
    """The robot of `job`, parsed on first use in this process and re-read only when a file changes."""
    files = [Path(job.urdf)] + ([Path(job.mapping)] if job.mapping else [])
    stamps = tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    cached = _ROBOTS.get(job)
    if cached is None or cached[0] != stamps:
        cached = _ROBOTS[job] = (stamps, load_robot(job.urdf, job.mapping, job.settings))
    return cached[1]


def remove_leftovers(jobs: list[ClipJob], fmt: str) -> None:
    """Delete the temporary files (core.motion.fileio.write_bytes_atomic's `.NAME.*.tmp`) that a worker
    killed mid-write left beside the batch's outputs: its retry wrote the output, the temporary stayed.
    Called once every worker is done, so no live write loses its file; other files are never touched."""
    for job in jobs:
        for path in output_paths(Path(job.out), fmt):
            for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
                try:
                    leftover.unlink()
                except OSError:
                    pass  # gone already, or not ours to remove: the outputs are what counts


def run_clip(job: ClipJob, options: BatchOptions) -> dict:
    """Bake and export one clip onto one robot; its status, never an exception for a bad clip."""
    started = time.monotonic()
    try:
        robot = robot_model(job.robot)
        bake = bake_clip_file(job.source, robot, options.frames, options.contacts, options.source_up)
        settings = replace(options.settings, overwrite=True) if job.overwrite else options.settings
        report, _ = export_bake(bake, robot, Path(job.out), settings, job.source, options.generator)
        return clip_status(job, started, report, mapping=None if job.robot.mapping else bake.mapping.to_dict())
    except (ValueError, KeyError, OSError) as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        return clip_status(job, started, error=message)
    except Exception as exc:  # a bug on one clip must not stop the batch
        return clip_status(job, started, error=f"{type(exc).__name__}: {exc}")


@dataclass
class Summary:
    """The batch's summary report, gathered as clips finish."""

    robots: list[RobotJob]
    settings: ExportSettings
    engine: str
    workers: int
    clips: list[dict] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def to_dict(self, order: list[ClipJob]) -> dict:
        rank = {(j.source, j.out): i for i, j in enumerate(order)}
        clips = sorted(self.clips, key=lambda c: rank.get((c["source"], c["out"]), len(rank)))
        seconds = time.monotonic() - self.started
        done = [c for c in clips if c["status"] == "ok"]
        frames = sum(c.get("frames") or 0 for c in done)
        first = self.robots[0]
        return {"robot_file": first.urdf, "mapping_file": first.mapping,
                "robots": [{"name": r.name, "robot_file": r.urdf, "mapping_file": r.mapping} for r in self.robots],
                "format": self.settings.format, "rate_hz": self.settings.rate_hz, "engine": self.engine,
                "workers": self.workers, "clips": clips, "succeeded": len(done),
                "failed": sum(c["status"] == "failed" for c in clips),
                "skipped": sum(c["status"] == "skipped" for c in clips), "seconds": round(seconds, 3),
                "clips_per_second": round(len(done) / seconds, 3) if seconds > 0 else None,
                "frames_per_second": round(frames / seconds, 1) if seconds > 0 else None}


def skipped_status(job: ClipJob) -> dict:
    return {"source": job.source, "out": job.out, "robot": job.robot.name, "status": "skipped",
            "seconds": 0.0, "reason": "complete output exists (pass --overwrite to replace it)"}


def status_line(status: dict) -> str:
    """The clip's line on stdout: ok, FAILED (with the reason) or skipped."""
    name = Path(status["source"]).name
    if status["status"] == "ok":
        return (f"ok      {name} -> {status['out']} ({status['samples']} samples, "
                f"{len(status['violations'])} violations, {status['seconds']:.1f} s)")
    if status["status"] == "skipped":
        return f"skipped {name} -> {status['out']} (complete)"
    return f"FAILED  {name}: {status['error']}"


class Progress:
    """A bar with an estimate of time left, on stderr (one line per update when not a terminal)."""

    WIDTH = 24

    def __init__(self, total: int, stream=None):
        self.total, self.stream, self.started = total, stream or sys.stderr, time.monotonic()
        self.tty = self.stream.isatty()

    def update(self, done: int, failed: int) -> None:
        elapsed = time.monotonic() - self.started
        filled = self.WIDTH * done // max(self.total, 1)
        text = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total} clips"
        text += (f", {failed} failed" if failed else "") + f", {_clock(elapsed)} elapsed"
        if 0 < done < self.total:
            text += f", ~{_clock(elapsed / done * (self.total - done))} left"
        self.stream.write(f"\r\033[K{text}" if self.tty else text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"
