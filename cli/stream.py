"""`stream`: live retargeting of a motion-capture stream, frame by frame (issue 14).

Frames come one per line on stdin or one per UDP datagram (`SEQ TIME_S v1 ... vK`, a BVH
MOTION line of the --skeleton's hierarchy); poses go out as JSON lines on stdout or as UDP
datagrams. Input from stdin is taken as it comes, every frame solved in full (a file piped in
gives the same outputs every run); UDP input is live: a frame that arrives while another is
being solved cuts that solve short (the overrun rule) and --rate ticks on the wall clock.
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import sys
import threading
import time
from pathlib import Path

from ..core.model.transforms import matrix_to_quat
from .common import CommandError, add_source_up, check_outputs, print_warnings, refuse_folder, write_report


def add_parser(sub) -> None:
    from ..core.stream.predict import PLACEMENTS, PREDICTORS

    p = sub.add_parser("stream", help="retarget a live motion-capture stream frame by frame",
                       description="Retarget a stream of motion-capture frames onto a robot as they come: "
                                   "causal, with planted feet, a causal filter and a prediction unit that "
                                   "outputs the pose a little ahead to hide the latency.")
    p.add_argument("--skeleton", required=True,
                   help="BVH whose HIERARCHY the frames follow (its MOTION only feeds the automatic mapping)")
    p.add_argument("--robot", required=True, help="robot description (.urdf)")
    p.add_argument("--mapping", help="chain mapping preset (.json); default: automatic mapping")
    p.add_argument("--input", default="-", help="- (stdin, one frame per line, the default) or udp://HOST:PORT")
    p.add_argument("--output", default="-", help="- (stdout, one JSON object per line, the default) or "
                                                 "udp://HOST:PORT")
    p.add_argument("--predict-ms", type=float, metavar="MS",
                   help="how far past its input frame's time each pose is for (default: the measured "
                        "processing latency); the filter's lag is made up on top of it")
    p.add_argument("--predictor", choices=PREDICTORS, default="auto",
                   help="none, extrapolate (a polynomial through the latest samples), match (continue from "
                        "where the stream or a library clip moved alike) or auto (whichever has been closer; "
                        "the default)")
    p.add_argument("--placement", choices=PLACEMENTS, default="output",
                   help="what is forecast: the source's model data (before mapping), the robot's solution "
                        "(after mapping) or the filtered output (the default)")
    p.add_argument("--library", nargs="+", action="extend", default=[], metavar="CLIP.bvh",
                   help="clips on the same hierarchy for the pattern matcher to search as well")
    p.add_argument("--filter-hz", type=float, default=7.0, metavar="HZ",
                   help="causal low-pass cutoff (default 7 Hz; 0: no filter)")
    p.add_argument("--rate", type=float, metavar="HZ",
                   help="output at this control rate (default: one output per input frame)")
    p.add_argument("--record", help="write the outputs to this CSV (bake CSV layout) at the end")
    p.add_argument("--report", help="JSON report to write at the end")
    p.add_argument("--max-frames", type=int, metavar="N", help="stop after N input frames")
    p.add_argument("--overwrite", action="store_true", help="replace existing --record / --report files")
    add_source_up(p)
    p.set_defaults(func=run)


def _endpoint(text: str, flag: str) -> tuple[str, int] | None:
    """None for '-', else (host, port) of udp://HOST:PORT."""
    if text == "-":
        return None
    if not text.startswith("udp://") or ":" not in text[6:]:
        raise CommandError(f"{flag} {text}: use - or udp://HOST:PORT")
    host, _, port = text[6:].rpartition(":")
    try:
        return host, int(port)
    except ValueError:
        raise CommandError(f"{flag} {text}: the port must be a number") from None


def _session(args: argparse.Namespace):
    from ..core.chains.mapping import Mapping
    from ..core.model.kinematics import KinematicTree
    from ..core.model.urdf import parse_urdf
    from ..core.motion.bvh import load_bvh
    from ..core.retarget.automap import auto_map
    from ..core.stream.predict import PredictSettings
    from ..core.stream.session import StreamSession, StreamSettings

    for path, flag in [(args.skeleton, "--skeleton"), (args.robot, "--robot")] + [(c, "--library") for c in args.library]:
        refuse_folder(path, flag, "file", elsewhere="")
        if not Path(path).is_file():
            raise CommandError(f"{flag} {path}: file not found")
    if args.rate is not None and not args.rate > 0:
        raise CommandError(f"--rate {args.rate:g}: must be positive (Hz)")
    if args.filter_hz < 0:
        raise CommandError(f"--filter-hz {args.filter_hz:g}: must not be negative (0: no filter)")
    clip = load_bvh(args.skeleton)
    tree = KinematicTree(parse_urdf(args.robot))
    if args.mapping:
        mapping = Mapping.load(args.mapping)
        mapping.check_names(str(Path(args.mapping).absolute()), bones=list(clip.names),
                            source=Path(args.skeleton).stem, links=list(tree.link_names), robot=tree.robot.name)
    elif clip.frames:
        mapping = auto_map(clip.to_source_motion(up=args.source_up), tree)
    else:
        raise CommandError(f"--skeleton {args.skeleton}: no MOTION frames to map limbs from (give --mapping)")
    settings = StreamSettings(predict_ms=args.predict_ms, placement=args.placement,
                              predict=PredictSettings(predictor=args.predictor),
                              filter="butterworth" if args.filter_hz > 0 else "none",
                              filter_hz=args.filter_hz or 7.0, up=args.source_up)
    library = [load_bvh(path) for path in args.library]
    try:
        return StreamSession(clip, tree, mapping, settings, library=library), tree
    except ValueError as exc:
        raise CommandError(str(exc)) from None


class _Output:
    """JSON lines to stdout or datagrams to a UDP address; the first object names the joints."""

    def __init__(self, target: tuple[str, int] | None, joint_names: list[str]):
        self.target, self.joint_names, self.sent = target, joint_names, []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM) if target else None

    def __call__(self, out) -> None:
        pose = out.pose
        quat = matrix_to_quat(pose.root_rotation)
        if self.sent:  # the JSON of numbers written directly: a tenth of json.dumps' time on every pose
            text = (f'{{"seq": {int(out.seq)}, "t": {_number(out.time_s)}, "root": ['
                    f'{", ".join(map(_number, pose.root_position.tolist() + quat.tolist()))}], "q": ['
                    f'{", ".join(map(_number, pose.q.tolist()))}]}}')
        else:
            text = json.dumps({"seq": int(out.seq), "t": float(out.time_s),
                               "root": [float(v) for v in pose.root_position] + [float(v) for v in quat],
                               "q": [float(v) for v in pose.q], "joint_names": self.joint_names})
        # kept before it goes out: a Ctrl-C right after a pose reached the receiver still records it
        self.sent.append((out.time_s, pose.root_position, quat, pose.q))
        if self.sock is not None:
            self.sock.sendto(text.encode("ascii"), self.target)
        else:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


def _number(value: float) -> str:
    """A float as json.dumps writes it (NaN and infinities as it does too)."""
    return repr(value) if value == value and abs(value) != float("inf") else json.dumps(value)


def _udp_socket(address: tuple[str, int]) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    try:
        sock.bind(address)
    except OSError as exc:
        raise CommandError(f"--input udp://{address[0]}:{address[1]}: {exc.strerror or exc}") from None
    return sock


def run(args: argparse.Namespace) -> int:
    if args.max_frames is not None and args.max_frames < 1:
        raise CommandError(f"--max-frames {args.max_frames}: give a number of frames, 1 or more")
    source, target = _endpoint(args.input, "--input"), _endpoint(args.output, "--output")
    record, report_path = check_outputs([args.record, args.report], args.overwrite,
                                        [args.skeleton, args.robot, *args.library])
    session, tree = _session(args)
    emit = _Output(target, tree.joint_names)
    warnings: list[str] = []
    live = _Live(session, emit, args.rate) if source else _Paced(session, emit, args.rate)
    try:
        _take_frames(live, source, session, args.max_frames, warnings)
        interrupted = False
    except KeyboardInterrupt:  # a live stream is stopped by hand: its record and report still get written
        interrupted = True
    report = session.report()
    if interrupted:
        warnings.append(f"interrupted (Ctrl-C) after {report['frames']} frame(s): the stream ends there")
    report.update(input=args.input, output=args.output, outputs=len(emit.sent), rate_hz=args.rate,
                  late_cycles_skipped=live.skipped,
                  warnings=report["warnings"] + warnings)
    if record is not None and emit.sent:
        _write_record(record, tree.joint_names, emit.sent, args.overwrite)
        report["record"] = str(record)
    elif record is not None:  # an empty input wrote the report alone and said nothing of the record
        report["warnings"].append(f"{record}: not written, no pose went out (no frame came in)")
        warnings.append(report["warnings"][-1])
    write_report(report_path, report, args.overwrite)
    if report["frames"] == 0 and session.counts["bad"]:
        raise CommandError(f"no frame of the stream could be used ({session.counts['bad']} bad line(s)); "
                           f"the first: {warnings[0] if warnings else 'see the report'}")
    print_warnings(warnings[:5])
    lat = report["latency_ms"]
    print(f"stream: {report['frames']} frame(s) in, {len(emit.sent)} out, {report['dropped']} dropped; latency "
          f"p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms; predicting {report['predict_ms']:.1f} ms "
          f"({report['predictor']})", file=sys.stderr)
    return 0


def _take_frames(live, source, session, max_frames: int | None, warnings: list[str]) -> None:
    """Feed the input's frames to the session until END, the input's end or --max-frames; a bad
    line is counted, named in `warnings` (the first 20) and skipped."""
    from ..core.stream.session import FrameError

    frames = 0
    for number, (line, received) in enumerate(live.lines(source), start=1):
        if not line.strip():
            continue
        where = f"input line {number}: " if source is None else f"datagram {number}: "
        try:
            parsed = session.parse(line, where)
        except FrameError as exc:
            session.count_bad()
            if len(warnings) < 20:
                warnings.append(str(exc))
            continue
        if parsed is None:
            return
        live.push(*parsed, received)
        frames += 1
        if max_frames is not None and frames >= max_frames:
            return


class _Paced:
    """Frames from stdin, each solved in full; --rate ticks by the frames' own times, each tick
    given what a live run would have had then (the latest output carried forward)."""

    def __init__(self, session, emit, rate: float | None):
        self.session, self.emit, self.rate = session, emit, rate
        self.next_tick: float | None = None
        self.skipped = 0  # ticks by the frames' own times are never late

    def lines(self, source):
        for line in sys.stdin:
            yield line, time.perf_counter()

    def push(self, seq: int, time_s: float, values, received: float) -> None:
        if self.rate:
            self.next_tick = time_s if self.next_tick is None else self.next_tick
            while self.next_tick < time_s - 1e-9:
                out = self.session.sample(self.next_tick)
                if out is not None:
                    self.emit(out)
                self.next_tick += 1.0 / self.rate
        out = self.session.push(seq, time_s, values, received)
        if out is not None and not self.rate:
            self.emit(out)


class _Live:
    """Frames from UDP as they arrive, read by the solving thread itself (no hand-over between
    threads on the way in): a newer datagram waiting in the socket cuts the current solve short.
    --rate ticks on the wall clock in a thread of its own (stream time = arrival time less the
    first frame's offset), so a frame being solved does not hold the control cycle back."""

    def __init__(self, session, emit, rate: float | None):
        self.session, self.emit, self.rate = session, emit, rate
        self.offset: float | None = None  # wall clock minus stream time
        self.done = threading.Event()
        self.skipped = 0  # control cycles that came due while the machine was busy (latest_due_tick)

    def lines(self, source):
        self.sock = _udp_socket(source)
        if self.rate:
            sys.setswitchinterval(0.0005)  # the ticking thread gets its turn within half a millisecond
            ticker = threading.Thread(target=self._tick, daemon=True)
            ticker.start()
        try:
            while True:
                data = self.sock.recv(65535)
                received = time.perf_counter()
                for line in data.decode("ascii", "replace").splitlines():
                    yield line, received
        finally:
            self.done.set()
            self.sock.close()
            if self.rate:
                ticker.join()

    def _waiting(self) -> bool:
        """A newer datagram is in the socket."""
        return bool(select.select([self.sock], [], [], 0.0)[0])

    def _tick(self) -> None:
        next_tick = None
        while not self.done.is_set():
            if self.offset is None or self.session.last is None:
                time.sleep(0.001)
                continue
            next_tick = self.session.last.input_time_s if next_tick is None else next_tick
            wait = next_tick + self.offset - time.perf_counter()
            if wait > 0:
                time.sleep(min(wait, 0.005))
                continue
            next_tick, missed = latest_due_tick(next_tick, -wait, self.rate)
            self.skipped += missed
            out = self.session.sample(next_tick)
            if out is not None:
                self.emit(out)
            next_tick += 1.0 / self.rate

    def push(self, seq: int, time_s: float, values, received: float) -> None:
        if self.offset is None:
            self.offset = received - time_s
        out = self.session.push(seq, time_s, values, received, stop=self._waiting)
        if out is not None and not self.rate:
            self.emit(out)


def latest_due_tick(tick_s: float, late_s: float, rate: float) -> tuple[float, int]:
    """The control tick to send when tick_s is late_s overdue, and how many ticks before it are skipped:
    a cycle the machine could not keep (a busy core, a long solve) is dropped, not sent late, so the
    robot never gets a burst of stale poses a few microseconds apart (every output stays on the
    control grid: tick_s plus whole periods)."""
    missed = int(late_s * rate + 1e-9) if late_s > 0 else 0
    return tick_s + missed / rate, missed


def _write_record(path: Path, joint_names: list[str], sent: list, overwrite: bool) -> None:
    import numpy as np

    from ..core.model.transforms import quat_continuous
    from ..core.motion.bake_csv import BakeTable, write_bake_csv

    times = np.array([s[0] for s in sent])
    table = BakeTable(joint_names, times, np.array([s[1] for s in sent]),
                      quat_continuous(np.array([s[2] for s in sent])), np.array([s[3] for s in sent]))
    write_bake_csv(path, table, overwrite=overwrite)
