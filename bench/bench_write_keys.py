#!/usr/bin/env python3
"""Benchmark operators/anim_io.write_channels / read_channels: keys per second.

    .venv/bin/python bench/bench_write_keys.py [--channels 60] [--frames 20000] [--repeat 3]

Builds the extension zip if needed (tools/robot-retarget's rule), installs it
into a throw-away Blender user folder, then writes CHANNELS x FRAMES keys
into a new action on an armature (rotation_euler channels of CHANNELS/3
bones) and reads them back. Not a test: it prints timings.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import blender_session  # noqa: E402
import build_extension  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channels", type=int, default=60)
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    zip_file = build_extension.zip_path(build_extension.current_platform())
    if not zip_file.is_file():
        (zip_file,) = build_extension.build()
    user = tempfile.mkdtemp(prefix="rr_bench_user_")
    try:
        blender_session.ensure_user_folder(user)
        ext = blender_session.install_extension(zip_file)
        anim_io = importlib.import_module(f"{ext.__name__}.operators.anim_io")
        return run(anim_io, args)
    finally:
        shutil.rmtree(user, ignore_errors=True)


def run(anim_io, args) -> int:
    import bpy

    n_bones = max(1, args.channels // 3)
    arm = bpy.data.armatures.new("BenchRig")
    obj = bpy.data.objects.new("BenchRig", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    for i in range(n_bones):
        eb = arm.edit_bones.new(f"b{i:03d}")
        eb.head, eb.tail = (0.0, 0.0, float(i)), (0.0, 0.0, i + 1.0)
    bpy.ops.object.mode_set(mode='OBJECT')

    channels = [(f'pose.bones["b{i // 3:03d}"].rotation_euler', i % 3, f"b{i // 3:03d}")
                for i in range(args.channels)]
    frames = np.arange(args.frames, dtype=np.float64) + 1.0
    values = np.sin(frames[:, None] * 0.01 + np.arange(args.channels)[None, :])
    keys = args.frames * args.channels
    print(f"anim_io benchmark: {args.channels} channels x {args.frames} frames = {keys:,} keys "
          f"(Blender {bpy.app.version_string})")

    best_w = best_r = float("inf")
    for rep in range(args.repeat):
        action, slot = anim_io.new_action(obj, "Bench", replace=rep > 0)
        t0 = time.perf_counter()
        written = anim_io.write_channels(action, slot, channels, frames, values)
        t1 = time.perf_counter()
        _, back = anim_io.read_channels(action, slot, channels)
        t2 = time.perf_counter()
        assert written == keys and back.shape == values.shape
        best_w, best_r = min(best_w, t1 - t0), min(best_r, t2 - t1)
        print(f"  run {rep + 1}: write {t1 - t0:.3f}s ({keys / (t1 - t0):,.0f} keys/s), "
              f"read {t2 - t1:.3f}s ({keys / (t2 - t1):,.0f} keys/s)")
    print(f"best: write {keys / best_w:,.0f} keys/s, read {keys / best_r:,.0f} keys/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
