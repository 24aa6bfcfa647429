"""Live retargeting as users run it: `robot-retarget stream` in a subprocess (stdin and UDP on the
loopback), and Live Retarget's per-tick work (LiveRig) on a playing action in Blender; the modal
operator itself refuses to run without a window."""
from __future__ import annotations

import json
import socket
import subprocess
import threading
import time

import bpy
import numpy as np
import pytest

from .test_cli import G1, LAUNCHER, ROOT, ROOT_HEADER, WALK, error_lines, read_csv

REPORT_KEYS = {"frames", "dropped", "latency_ms", "predict_ms", "predictor", "limit_violations", "warnings"}


def _frame_lines(limit: int | None = None) -> list[str]:
    import sys

    sys.path.insert(0, str(ROOT))
    from core.motion.bvh import load_bvh

    clip = load_bvh(WALK)
    rows = clip.motion if limit is None else clip.motion[:limit]
    return [f"{f} {f / clip.fps!r} " + " ".join(repr(float(v)) for v in row) for f, row in enumerate(rows)]


def _stream(*args, stdin: str = "", timeout: float = 600) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    return subprocess.run([str(LAUNCHER), "stream", "--skeleton", str(WALK), "--robot", str(G1), *map(str, args)],
                          cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=timeout)


def test_stream_from_stdin_records_and_reports(tmp_path):
    lines = _frame_lines(240)
    lines.insert(100, "100 oops 1 2 3")  # a bad line: counted, named, skipped
    record, report_path = tmp_path / "live.csv", tmp_path / "live.json"
    proc = _stream("--record", record, "--report", report_path, "--predict-ms", "40", stdin="\n".join(lines) + "\nEND\n")
    assert proc.returncode == 0, proc.stderr
    outputs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(outputs) == 240
    assert outputs[0]["joint_names"] and "joint_names" not in outputs[1]
    g1_joints = outputs[0]["joint_names"]
    assert all(len(o["q"]) == len(g1_joints) and len(o["root"]) == 7 for o in outputs)
    assert [o["seq"] for o in outputs] == list(range(240))
    assert outputs[10]["t"] == pytest.approx(10 / 120.0048 + 0.040, abs=1e-4)  # input time plus the horizon
    report = json.loads(report_path.read_text())
    assert REPORT_KEYS <= set(report) and set(report["latency_ms"]) == {"p50", "p95", "p99", "max"}
    assert report["frames"] == 240 and report["dropped"] == 1 and report["predict_ms"] == pytest.approx(40.0)
    assert any("input line 101" in w for w in report["warnings"]), report["warnings"]
    assert any("input line 101" in line for line in error_lines(proc.stderr))
    header, rows = read_csv(record)
    assert ",".join(header[:8]) == ROOT_HEADER and header[8:] == g1_joints
    assert np.allclose(rows[:, 8:], [o["q"] for o in outputs]) and np.allclose(rows[:, 0], [o["t"] for o in outputs])


def test_stream_at_a_control_rate_from_stdin(tmp_path):
    lines = _frame_lines(120)  # one second
    proc = _stream("--rate", "500", "--predictor", "none", stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    times = np.array([json.loads(line)["t"] for line in proc.stdout.splitlines()])
    assert np.allclose(np.diff(times), 1 / 500.0) and len(times) == pytest.approx(500 * 119 / 120.0048, abs=2)


def test_stream_of_nothing_usable_fails_and_max_frames_must_be_positive(tmp_path):
    lines = [f"{f} {f / 120!r} 1 2 3" for f in range(20)]  # the walk's hierarchy has 96 channels
    report_path = tmp_path / "bad.json"
    proc = _stream("--report", report_path, stdin="\n".join(lines) + "\n")
    assert proc.returncode == 1
    assert "no frame of the stream could be used (20 bad line(s))" in error_lines(proc.stderr)[-1]
    assert "got 5 fields (3 values)" in error_lines(proc.stderr)[-1]
    report = json.loads(report_path.read_text())
    assert report["frames"] == 0 and report["dropped_by_reason"]["bad"] == 20
    assert report["dropped_by_reason"]["missing"] == 0  # a bad line is counted once
    for count in ("0", "-1"):
        proc = _stream("--max-frames", count, stdin="END\n")
        assert proc.returncode != 0 and "--max-frames" in error_lines(proc.stderr)[-1]


def test_a_stream_with_no_frame_says_its_record_was_not_written(tmp_path):
    """An input that ends at once (END, or an empty pipe) wrote the report alone, exit 0, and said
    nothing of the --record asked for."""
    record, report_path = tmp_path / "none.csv", tmp_path / "none.json"
    for stdin in ("END\n", ""):
        proc = _stream("--record", record, "--report", report_path, "--overwrite", stdin=stdin)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        said = f"{record}: not written, no pose went out (no frame came in)"
        assert f"warning: {said}" in error_lines(proc.stderr)
        report = json.loads(report_path.read_text())
        assert report["frames"] == 0 and said in report["warnings"] and "record" not in report
        assert not record.exists()


def test_ctrl_c_ends_a_stream_as_end_does(tmp_path):
    """A live stream has no end of its own: Ctrl-C (SIGINT) stops it, and the record and the report
    of what came are still written, the interruption said once, no traceback."""
    import os
    import signal

    record, report_path = tmp_path / "live.csv", tmp_path / "live.json"
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    proc = subprocess.Popen([str(LAUNCHER), "stream", "--skeleton", str(WALK), "--robot", str(G1),
                             "--record", str(record), "--report", str(report_path)],
                            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdin.write("\n".join(_frame_lines(30)) + "\n")
    proc.stdin.flush()  # and left open: the stream waits for more, as a live one does
    outputs = [json.loads(proc.stdout.readline()) for _ in range(30)]
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    assert sum("interrupted (Ctrl-C) after 30 frame(s)" in line for line in error_lines(stderr)) == 1, stderr
    report = json.loads(report_path.read_text())
    assert report["frames"] == 30 and any("interrupted (Ctrl-C)" in w for w in report["warnings"])
    assert np.allclose(read_csv(record)[1][:, 8:], [o["q"] for o in outputs])


def test_stream_refuses_a_bad_endpoint():
    proc = _stream("--input", "tcp://localhost:1")
    assert proc.returncode != 0 and "udp://HOST:PORT" in error_lines(proc.stderr)[-1]


def test_stream_says_a_folder_is_a_folder(tmp_path):
    proc = _stream("--skeleton", tmp_path)  # the last --skeleton counts
    assert proc.returncode != 0 and f"{tmp_path}: a folder, not a file (--skeleton takes one file)" in error_lines(proc.stderr)[-1]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _udp_run(tmp_path, *args, seconds: float = 3.0):
    """Send the walk's first `seconds` at its own 120 Hz in real time to `stream` over the loopback;
    returns (send start time, [(arrival time, output)], report)."""
    import os

    lines = _frame_lines(int(120 * seconds))
    port_in, port_out = _free_port(), _free_port()
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", port_out))
    receiver.settimeout(60)
    report_path = tmp_path / "udp.json"
    env = {k: v for k, v in os.environ.items() if k != "BLENDER_USER_RESOURCES"}
    proc = subprocess.Popen([str(LAUNCHER), "stream", "--skeleton", str(WALK), "--robot", str(G1),
                             "--input", f"udp://127.0.0.1:{port_in}", "--output", f"udp://127.0.0.1:{port_out}",
                             "--report", str(report_path), "--overwrite", *map(str, args)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    received = []

    def receive():
        try:
            while True:
                data, _ = receiver.recvfrom(65535)
                received.append((time.perf_counter(), json.loads(data)))
        except (socket.timeout, OSError):
            return

    threading.Thread(target=receive, daemon=True).start()
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    deadline = time.perf_counter() + 120  # the command is ready once it answers the first frame
    while not received and time.perf_counter() < deadline:
        sender.sendto(lines[0].encode(), ("127.0.0.1", port_in))
        time.sleep(0.2)
    assert received, "no answer from the stream command"
    start = time.perf_counter()
    for k, line in enumerate(lines[1:], start=1):
        time.sleep(max(0.0, start + k / 120.0 - time.perf_counter()))
        sender.sendto(line.encode(), ("127.0.0.1", port_in))
    time.sleep(0.2)
    sender.sendto(b"END", ("127.0.0.1", port_in))
    _, stderr = proc.communicate(timeout=120)
    receiver.close()
    assert proc.returncode == 0, stderr
    report = json.loads(report_path.read_text())
    assert report["frames"] == len(lines) and report["dropped"] == report["dropped_by_reason"]["duplicate"]
    return start, received, report


def test_udp_loopback_in_real_time_answers_every_frame(tmp_path):
    start, received, report = _udp_run(tmp_path, "--predictor", "none")
    assert {o["seq"] for _, o in received} == set(range(360))
    assert report["latency_ms"]["p50"] < 20.0  # processing on a shared CI machine; bench/ has the figures


def test_udp_loopback_outputs_at_the_control_rate(tmp_path):
    start, received, report = _udp_run(tmp_path, "--rate", "200")
    live = [t for t, _ in received if start + 0.1 < t < start + 2.9]
    assert abs(np.median(np.diff(live)) - 1 / 200.0) < 0.0015
    # a cycle a busy machine could not keep is skipped (and counted), not sent late in a burst
    assert 0.9 * 200 * 2.8 <= len(live) + report["late_cycles_skipped"] and len(live) <= 1.1 * 200 * 2.8
    assert report["outputs"] >= len(live) and report["late_cycles_skipped"] >= 0


def test_a_late_control_cycle_is_skipped_not_sent_in_a_burst(extension):
    """The live ticker, woken late, sends the latest cycle that came due and drops the ones before it."""
    import importlib

    latest_due_tick = importlib.import_module(f"{extension.__name__}.cli.stream").latest_due_tick
    assert latest_due_tick(1.0, 0.0, 200.0) == (1.0, 0)  # on time
    assert latest_due_tick(1.0, 0.004, 200.0) == (1.0, 0)  # less than a cycle late: this cycle, late
    tick, missed = latest_due_tick(1.0, 0.0231, 200.0)  # four whole cycles late: the fifth is due now
    assert missed == 4 and tick == pytest.approx(1.02)
    tick, missed = latest_due_tick(2.0, 0.010, 100.0)  # exactly one cycle late (a float's rounding aside)
    assert missed == 1 and tick == pytest.approx(2.01)


def test_live_retarget_refuses_without_a_window(walk_on_g1):
    walk_on_g1(frames=(1, 60))
    assert bpy.app.background
    with pytest.raises(RuntimeError, match="robot-retarget stream"):
        bpy.ops.robot_retarget.live('INVOKE_DEFAULT')


def test_live_rig_follows_a_playing_action_and_records_it(walk_on_g1):
    from bl_ext.user_default.robot_retarget.operators.live import GHOST_SUFFIX, LiveRig
    from bl_ext.user_default.robot_retarget.props import mapping_from_settings
    from bl_ext.user_default.robot_retarget.core.stream.session import StreamSettings
    from bl_ext.user_default.robot_retarget.core.stream.predict import PredictSettings
    from bl_ext.user_default.robot_retarget.operators.anim_io import sample_armature
    from bl_ext.user_default.robot_retarget.core.stream.session import StreamSession
    from bl_ext.user_default.robot_retarget.operators.common import tree_from_rig

    settings, source, robot = walk_on_g1(frames=(1, 90))
    scene = bpy.context.scene
    earlier = bpy.data.actions.new("earlier")
    robot.animation_data_create().action = earlier
    stream = StreamSettings(predict=PredictSettings(predictor="extrapolate"), predict_ms=50.0)
    scene.frame_set(1)
    rig = LiveRig(scene, source, robot, mapping_from_settings(settings), stream, rate_hz=120.0, record=True)
    assert robot.animation_data.action is None and rig.ghost.name == robot.name + GHOST_SUFFIX
    for frame in range(1, 91):
        scene.frame_set(frame)  # the action plays
        assert rig.tick((frame - 1) / 120.0)
    q_now, _, _ = rig.session.pose_of(rig.session.current)
    channels = rig.layout.joint_channels
    posed = [getattr(robot.pose.bones[bone], prop)[index] for bone, prop, index in channels]
    assert np.allclose(posed, q_now, atol=1e-5)
    ghost = [getattr(rig.ghost.pose.bones[bone], prop)[index] for bone, prop, index in channels]
    assert np.abs(np.array(ghost) - q_now).max() > 1e-3  # the forecast is ahead of the pose now
    action = rig.finish()
    assert robot.animation_data.action == earlier  # the rig's own action is back
    assert not any(o.name.endswith(GHOST_SUFFIX) for o in bpy.data.objects)
    assert action is not None and json.loads(action["robot_retarget_report"])["frames"] == 90

    # the same frames through core directly give the recorded action's poses
    motion = sample_armature(source, range(1, 91), scene=scene)
    session = StreamSession(motion, tree_from_rig(robot), mapping_from_settings(settings), stream, rate_hz=120.0)
    expected = []
    for f in range(90):
        frame = type(motion)(motion.bone_names, motion.parents, motion.heads[f:f + 1], motion.tails[f:f + 1],
                             motion.root_rotation[f:f + 1], motion.rest_heads, motion.rest_tails,
                             motion.rest_root_rotation, 120.0, motion.name)
        session.push_frame(f, f / 120.0, frame)
        expected.append(session.pose_of(session.current)[0])
    robot.animation_data.action = action
    scene.frame_set(46)  # the record starts at the frame that was current when it began (1)
    recorded = [getattr(robot.pose.bones[bone], prop)[index] for bone, prop, index in channels]
    assert np.allclose(recorded, expected[45], atol=1e-4)
