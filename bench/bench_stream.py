#!/usr/bin/env python3
"""Live retargeting figures (issue 14): per-frame processing of the walk onto G1 (all chains), the
forecast 100 ms ahead against holding the pose, pattern matching against extrapolation with the
clip's first half as the library, the effective lag with and without prediction, and (with
--udp) the end-to-end loopback latency of `tools/robot-retarget stream`.

    .venv/bin/python bench/bench_stream.py [--udp] [--repeat N] [--paced]

Per-frame processing is the time from a frame's values to its output (BVH pose, body frame,
chain solves, filter, feet, forecast), one core: wall clock (the target's measure), and the
thread's CPU time beside it, which a machine busy with other work disturbs less. --repeat N
measures the timings N times and prints their range. The effective lag is the shift that best aligns
what is output at each moment with the unfiltered, unpredicted retarget of the actor at that
moment, outputs appearing `latency` after their frame: the filter's lag plus the processing,
less the forecast.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core.model.kinematics import KinematicTree  # noqa: E402
from core.model.urdf import parse_urdf  # noqa: E402
from core.motion.bvh import load_bvh  # noqa: E402
from core.retarget import auto_map  # noqa: E402
from core.stream.predict import PredictSettings  # noqa: E402
from core.stream.session import StreamSession, StreamSettings  # noqa: E402

WALK = ROOT / "data" / "motion" / "cmu_131_01_walk_m.bvh"
HOP = ROOT / "tests" / "data" / "motion" / "cmu_131_03_hop.bvh"
G1 = ROOT / "data" / "robots" / "g1" / "unitree_g1_29dof.urdf"


def run(clip, tree, mapping, library=(), cpu: list | None = None, paced: bool = False,
        **settings) -> tuple[np.ndarray, np.ndarray]:
    """Joint positions (F, n) output per frame, and each frame's processing time (F,) in seconds
    (its thread CPU time appended to `cpu` if given). paced: frames handed over at the clip's
    own rate, the process idle in between, as a live stream's are."""
    session = StreamSession(clip, tree, mapping, StreamSettings(**settings), library=library)
    q, took, used = [], [], []
    begin = time.perf_counter()
    for f, row in enumerate(clip.motion):
        if paced:
            time.sleep(max(0.0, begin + f / clip.fps - time.perf_counter()))
        start, start_cpu = time.perf_counter(), time.thread_time()
        out = session.push(f, f / clip.fps, row)
        took.append(time.perf_counter() - start)
        used.append(time.thread_time() - start_cpu)
        q.append(out.pose.q)
    if cpu is not None:
        cpu.append(np.array(used))
    return np.array(q), np.array(took)


def spread(runs: list[np.ndarray], percentile: float) -> str:
    """The range over runs of a percentile of per-frame times (ms), every frame counted (the session
    builds what its first frame would otherwise build)."""
    values = [np.percentile(1000 * r, percentile) for r in runs]
    return f"{min(values):.2f}" if len(values) == 1 else f"{min(values):.2f}-{max(values):.2f}"


def timing(label: str, clip, tree, mapping, repeat: int, paced: bool = False, **settings) -> None:
    wall, cpu = [], []
    for _ in range(repeat):
        wall.append(run(clip, tree, mapping, cpu=cpu, paced=paced, **settings)[1])
    print(f"  per frame, {label}: p50 {spread(wall, 50)} ms, p99 {spread(wall, 99)} ms "
          f"(thread CPU p50 {spread(cpu, 50)}, p99 {spread(cpu, 99)} ms)")


def matching_with_the_first_half(clip, tree, mapping, truth_of) -> str:
    """Link error 100 ms ahead on the clip's second half, its first half the library (the test's protocol)."""
    half = clip.frames // 2
    library = [dataclasses.replace(clip, motion=clip.motion[:half])]
    later = dataclasses.replace(clip, motion=clip.motion[half:])
    k = int(round(0.1 * clip.fps))
    truth = truth_of(later)
    out = []
    for predictor in ("extrapolate", "match"):
        q, _ = run(later, tree, mapping, library=library, predict=PredictSettings(predictor=predictor), predict_ms=100.0)
        out.append(f"{predictor} {1000 * link_error_m(tree, q[:-k], truth[k:]):.1f} mm")
    hold = 1000 * link_error_m(tree, truth[:-k], truth[k:])
    return ", ".join(out) + f", holding {hold:.1f} mm"


def link_error_m(tree, a: np.ndarray, b: np.ndarray) -> float:
    pa, pb = tree.forward(a), tree.forward(b)
    return float(np.mean(np.linalg.norm(pa[:, :, :3, 3] - pb[:, :, :3, 3], axis=-1)))


def effective_lag_ms(tree, output: np.ndarray, truth: np.ndarray, fps: float, latency_s: float) -> float:
    """The shift (ms) of truth that output, shown latency_s after its frame, matches best."""
    t = np.arange(len(truth)) / fps
    shown = t + latency_s
    links = tree.forward(output)[:, :, :3, 3]
    best, best_err = 0.0, np.inf
    for lag in np.arange(-0.05, 0.15, 0.00025):
        at = shown - lag
        keep = (at >= 0) & (at <= t[-1])
        lo = np.clip(np.floor(at[keep] * fps).astype(int), 0, len(t) - 2)
        w = (at[keep] * fps - lo)[:, None]
        q = (1 - w) * truth[lo] + w * truth[lo + 1]
        err = np.mean(np.linalg.norm(tree.forward(q)[:, :, :3, 3] - links[keep], axis=-1))
        if err < best_err:
            best, best_err = lag, err
    return 1000.0 * best


def udp_latency(frames: int = 600) -> dict:
    """Send the walk at 120 Hz to `stream` on the loopback; send-to-receive latency per frame."""
    clip = load_bvh(WALK)
    lines = [f"{f} {f / clip.fps!r} " + " ".join(repr(float(v)) for v in row) for f, row in enumerate(clip.motion)]
    lines = (lines * (frames // len(lines) + 1))[:frames]
    lines = [f"{k} {k / clip.fps!r} " + line.split(" ", 2)[2] for k, line in enumerate(lines)]
    ports = []
    for _ in range(2):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", ports[1]))
    receiver.settimeout(30)
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    report = Path(tempfile.mkdtemp()) / "stream.json"
    proc = subprocess.Popen([str(ROOT / "tools" / "robot-retarget"), "stream", "--skeleton", str(WALK), "--robot",
                             str(G1), "--input", f"udp://127.0.0.1:{ports[0]}", "--output",
                             f"udp://127.0.0.1:{ports[1]}", "--predictor", "none", "--report", str(report)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    arrived: dict[int, float] = {}

    def receive():
        try:
            while True:
                data, _ = receiver.recvfrom(65535)
                arrived.setdefault(json.loads(data)["seq"], time.perf_counter())
        except (socket.timeout, OSError):
            return

    threading.Thread(target=receive, daemon=True).start()
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    while not arrived:  # wait for the command to start
        sender.sendto(lines[0].encode(), ("127.0.0.1", ports[0]))
        time.sleep(0.2)
    sent: dict[int, float] = {}
    start = time.perf_counter()
    for k, line in enumerate(lines[1:], start=1):
        time.sleep(max(0.0, start + k / clip.fps - time.perf_counter()))
        sent[k] = time.perf_counter()
        sender.sendto(line.encode(), ("127.0.0.1", ports[0]))
    time.sleep(0.3)
    sender.sendto(b"END", ("127.0.0.1", ports[0]))
    proc.communicate(timeout=60)
    receiver.close()
    latency = np.array([arrived[k] - sent[k] for k in sent if k in arrived]) * 1000
    inside = json.loads(report.read_text())["latency_ms"]  # the command's own, receipt to pose
    report.unlink()
    report.parent.rmdir()
    return {"answered": f"{len(latency)}/{len(sent)}", "p50": np.percentile(latency, 50),
            "p99": np.percentile(latency, 99), "max": latency.max(), "inside": inside}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--udp", action="store_true", help="also measure the loopback latency of the command")
    parser.add_argument("--repeat", type=int, default=1, help="timings measured this many times (their range)")
    parser.add_argument("--paced", action="store_true",
                        help="also time frames handed over at the clip's own rate, as live (idle in between)")
    args = parser.parse_args()
    tree = KinematicTree(parse_urdf(G1))
    for name, path in (("walk", WALK), ("hop", HOP)):
        clip = load_bvh(path)
        mapping = auto_map(clip.to_source_motion(), tree)
        none = PredictSettings(predictor="none")
        truth, _ = run(clip, tree, mapping, predict=none, filter="none")
        filtered, took_f = run(clip, tree, mapping, predict=none)
        print(f"{name} onto G1, {clip.frames} frames at {clip.fps:.0f} Hz")
        timing("no forecast (filter and feet)", clip, tree, mapping, args.repeat, predict=none)
        timing("the defaults (auto forecast, filter and feet)", clip, tree, mapping, args.repeat)
        if args.paced:
            timing(f"no forecast, frames paced at {clip.fps:.0f} Hz", clip, tree, mapping, 1, paced=True,
                   predict=none)
        k = int(round(0.1 * clip.fps))
        hold = link_error_m(tree, filtered[:-k], truth[k:])  # the pose the stream has now, against 100 ms later
        for predictor in ("extrapolate", "match", "auto"):
            ahead, took_p = run(clip, tree, mapping, predict=PredictSettings(predictor=predictor), predict_ms=100.0)
            err = link_error_m(tree, ahead[:-k], truth[k:])
            print(f"  100 ms ahead, {predictor}: link error {1000 * err:.1f} mm vs holding {1000 * hold:.1f} mm "
                  f"({100 * (1 - err / hold):.0f} % lower); per frame p50 {1000 * np.median(took_p):.2f} ms")
        print("  100 ms ahead on the second half, the first half the library: " + matching_with_the_first_half(
            clip, tree, mapping, lambda later: run(later, tree, mapping, predict=none)[0]))
        latency = float(np.median(took_f))
        lag_off = effective_lag_ms(tree, filtered, truth, clip.fps, latency)
        session = StreamSession(clip, tree, mapping)
        predicted, took_a = run(clip, tree, mapping, predict=PredictSettings(predictor="auto"), predict_ms=1000 * latency)
        lag_on = effective_lag_ms(tree, predicted, truth, clip.fps, latency)
        print(f"  effective lag: {lag_off:.1f} ms without prediction (filter {1000 * session.filter.lag_s:.1f} ms + "
              f"processing {1000 * latency:.1f} ms); {lag_on:.1f} ms predicting {1000 * latency:.1f} ms (the "
              f"default: the processing latency, the forecast also covering the filter's lag); per frame p50 "
              f"{1000 * np.median(took_a):.2f} ms, p99 {1000 * np.percentile(took_a, 99):.2f} ms")
    for _ in range(args.repeat if args.udp else 0):
        figures = udp_latency()
        inside = figures["inside"]
        print(f"UDP loopback, `stream` without prediction: {figures['answered']} frames answered; send to receive "
              f"p50 {figures['p50']:.2f} ms, p99 {figures['p99']:.2f} ms, max {figures['max']:.2f} ms (in the "
              f"command, receipt to pose: p50 {inside['p50']:.2f} ms, p99 {inside['p99']:.2f} ms)")


if __name__ == "__main__":
    main()
