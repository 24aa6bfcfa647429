#!/usr/bin/env python3
"""Gait generator figures and speed (issue 12): the bundled walk onto G1 and H1 at 200 Hz through
core.balance.gait.generate_gait, its report against the issue's targets, the time for a 10 s clip
(the walk with its first and last frame held: standing before and after, with the walk's own
contacts; the best of three, wall and CPU time), and the whole `tools/robot-retarget gait`
command on the walk (start-up and import included), once.

    .venv/bin/python bench/bench_gait.py [--plot docs/gait_walk_g1.png]

--plot draws the walk onto G1: its footprints, target ZMP, multibody ZMP and CoM from above,
and the ZMP against its target over time (the README's picture).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: before numpy loads BLAS
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import clips  # noqa: E402
from core.balance.gait import generate_gait  # noqa: E402
from core.feet.contacts import Contacts, detect_contacts  # noqa: E402
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.source import SourceMotion  # noqa: E402
from core.retarget import auto_map  # noqa: E402

RUNS = 3
TARGETS = [("multibody ZMP RMS to target", "multibody_zmp_rms_error_m", "<= 10 mm", 1000, "mm"),
           ("worst support margin", "min_support_margin_m", ">= 10 mm", 1000, "mm"),
           ("samples with ZMP outside", "zmp_outside_support_pct", "0 %", 1, "%"),
           ("stance slide", "stance_slide_m", "< 1 mm", 1000, "mm"),
           ("cart-table ZMP RMS to target", "zmp_rms_error_m", "-", 1000, "mm")]


def held(motion: SourceMotion, seconds: float) -> SourceMotion:
    """The clip with its first and last frames held so that it lasts `seconds`."""
    extra = max(0, int(round(seconds * motion.fps)) - motion.frames)
    index = np.r_[np.zeros(extra // 2, int), np.arange(motion.frames), np.full(extra - extra // 2, motion.frames - 1)]
    return motion.at_frames(index)


def held_contacts(contacts: Contacts, frames: int) -> Contacts:
    """The walk's own contacts for the held clip, its first and last flags held: on the held
    clip the detector reads the standing ends as a different walk (other steps, other travel)."""
    extra = frames - contacts.frames
    return Contacts({side: np.r_[np.full(extra // 2, down[0]), down, np.full(extra - extra // 2, down[-1])]
                     for side, down in contacts.feet.items()}, contacts.fps)


def plot(tree: KinematicTree, result, path: Path) -> None:
    """Footprints and paths from above, and the ZMP against its target over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from core.balance.support import foot_bodies, foot_links
    from core.model.transforms import pose_matrices

    root = pose_matrices(result.root_rotation, result.root_position)
    feet = foot_links(tree)
    poses = tree.poses(result.q, root, feet)
    figure, (top, x_axis, y_axis) = plt.subplots(1, 3, figsize=(15, 4.6), gridspec_kw={"width_ratios": [1.1, 1, 1]})
    for body, colour in zip(foot_bodies(tree, feet), ("tab:blue", "tab:orange")):
        points = body.world(poses[body.link])
        down = (points[..., 2] - body.radius).min(axis=1) < 0.005
        for i in np.flatnonzero(down)[::40]:
            corners = points[i, :, :2]
            hull = corners[np.argsort(np.arctan2(*(corners - corners.mean(0)).T[::-1]))]
            top.fill(*hull.T, color=colour, alpha=0.25, lw=0)
    top.plot(*result.target_zmp.T, "k", lw=1, label="target ZMP")
    top.plot(*result.zmp.T, "r", lw=0.8, label="multibody ZMP")
    top.plot(*result.com[:, :2].T, "b", lw=0.8, label="centre of mass")
    top.set_aspect("equal")
    top.set_title("from above: soles on the ground (blue left, orange right)")
    top.legend(fontsize=8)
    for axis, k, name in ((x_axis, 0, "x"), (y_axis, 1, "y")):
        axis.plot(result.time_s, result.target_zmp[:, k], "k", lw=1, label="target")
        axis.plot(result.time_s, result.zmp[:, k], "r", lw=0.8, label="multibody ZMP")
        axis.plot(result.time_s, result.com[:, k], "b", lw=0.8, label="CoM")
        axis.set_xlabel("time (s)")
        axis.set_ylabel(f"{name} (m)")
    x_axis.legend(fontsize=8)
    figure.suptitle("Generated gait of the bundled walk onto G1 at 200 Hz (bench/bench_gait.py --plot)")
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def main(plot_to: Path | None = None) -> None:
    walk = clips.load(clips.WALK)
    for robot in ("g1", "h1"):
        tree = KinematicTree(parse_urdf(clips.ROBOTS[robot]))
        mapping = auto_map(walk, tree)
        started, started_cpu = time.perf_counter(), time.process_time()
        result = generate_gait(walk, tree, mapping)
        report = result.report
        seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
        if robot == "g1" and plot_to is not None:
            plot(tree, result, plot_to)
        print(f"{robot}: walk ({walk.frames / walk.fps:.1f} s) at {report['rate_hz']:.0f} Hz in {seconds:.2f} s "
              f"({cpu:.2f} s of CPU); "
              f"{report['steps']} steps; travel {report['travel_m']:.2f} m of the scaled source's "
              f"{report['source_travel_m']:.2f} m ({100 * report['travel_m'] / report['source_travel_m']:.0f} %)")
        for label, key, target, scale, unit in TARGETS:
            print(f"    {label}: {scale * report[key]:.1f} {unit} (target {target})")
    tree = KinematicTree(parse_urdf(clips.ROBOTS["g1"]))
    ten = held(walk, 10.0)
    mapping = auto_map(ten, tree)
    contacts = held_contacts(detect_contacts(walk, auto_map(walk, tree)), ten.frames)
    wall, cpu = [], []
    for _ in range(RUNS):  # the best of a few: the machine may be shared
        started, started_cpu = time.perf_counter(), time.process_time()
        report = generate_gait(ten, tree, mapping, contacts=contacts).report
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    print(f"g1: a 10 s clip at 200 Hz generated in {min(wall):.2f} s ({min(cpu):.2f} s of CPU; best of {RUNS}; "
          f"target under 2 s); {report['steps']} steps, multibody ZMP RMS "
          f"{1000 * report['multibody_zmp_rms_error_m']:.1f} mm, worst margin "
          f"{1000 * report['min_support_margin_m']:.1f} mm")
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        subprocess.run([str(clips.ROOT / "tools" / "robot-retarget"), "gait", "--source", str(clips.WALK),
                        "--robot", str(clips.ROBOTS["g1"]), "--out", str(Path(folder) / "gait.csv")],
                       check=True, capture_output=True)
        print(f"g1: tools/robot-retarget gait on the walk: {time.perf_counter() - started:.2f} s whole command")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", type=Path, metavar="PNG", help="draw the G1 walk's gait to this picture")
    main(parser.parse_args().plot)
