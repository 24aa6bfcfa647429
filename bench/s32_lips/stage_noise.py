"""Where keep_apart turns input noise of +-EPS rad into a large change of its room: per room group, the avoiding
bake's keep_apart input q and q + noise (uniform, seed 0) made room for, and per stage the largest joint gap (rad)
and the frames over 1e-3: the shape, the sampled frames (same or not), the sampled room on its samples (before
the interpolation), the interpolated room, the steady room; and whether a frame's run answer (coherence) restarted
it in one run and not the other.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/s32_lips/stage_noise.py hop 5e-4 \
        [--same-samples] [--set core.chains.separation.ONE_ANSWER_PER_RUN=False ...]

--trace ROW GROUP: that sampled row's first-pass corrections in that group, step by step (joints, pairs near,
joints on a bound), clean against noisy.
--seed N: another draw of the noise (default 0).
--same-samples: the noisy run makes its room on the clean run's sampled frames (the anchors' choice removed).
"""
from pathlib import Path
import sys
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import dataclasses
import numpy as np
from core.model.kinematics import KinematicTree
from core.model.urdf import parse_urdf
from core.motion.bvh import load_bvh
from core.retarget.automap import auto_map
from core.retarget import pipeline
from bench.knobs import apply_sets
from bench.noise_gap import noisy_input, print_gap
from core.chains import separation as S, coherence as C

R = Path(__file__).resolve().parents[2]
path = R / ("tests/data/motion/cmu_131_03_hop.bvh" if "hop" in sys.argv else "data/motion/cmu_131_01_walk_m.bvh")
seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
eps = float(next((a for k, a in enumerate(sys.argv[1:]) if a[0].isdigit() and sys.argv[k] not in ("--seed", "--trace")
                  and (k < 2 or sys.argv[k - 1] != "--trace")), "1e-12"))
same_samples = "--same-samples" in sys.argv
apply_sets(sys.argv)

logs = {"clean": [], "noisy": []}
state = {"phase": "clean", "replay": 0}
_anch, _sampled, _steady, _kept, _one = (S._anchored_samples, S._sampled_apart, S._steady, S._keep_apart,
                                         S.one_answer_per_run)


def log(name, value):
    logs[state["phase"]].append((name, value))


def anchored(depth, every):
    if same_samples and state["phase"] == "noisy":
        clean = [v for n, v in logs["clean"] if n == "samples"]
        out = clean[state["replay"]]
        state["replay"] += 1
    else:
        out = _anch(depth, every)
    log("depth", depth.copy())
    log("samples", out)
    return out


def kept(problem, separation, x, max_step, passes=None, fixes=True, inside=None):
    out = _kept(problem, separation, x, max_step, passes, fixes, inside)
    if passes == S.SAMPLED_PASSES and not fixes:
        log("room@samples", out.copy())
    return out


_sep = S._separate


def separate(problem, separation, x, frames=None, held=None, shape=None, steps=S.LINEAR_STEPS, whole=True):
    out, clear = _sep(problem, separation, x, frames, held, shape, steps, whole)
    if state.get("in_sampled"):
        log("separate", (x.copy(), out.copy(), clear.copy()))
    return out, clear


def sampled(problem, separation, shape, max_step, every):
    log("shape", shape.copy())
    state["in_sampled"] = True
    out = _sampled(problem, separation, shape, max_step, every)
    state["in_sampled"] = False
    log("sampled", out.copy())
    return out


def steady(problem, separation, x, shape, max_step, fps):
    out = _steady(problem, separation, x, shape, max_step, fps)
    log("steady", out[0].copy())
    return out


def one(correct, out, shape):
    before = out.copy()
    _one(correct, out, shape)
    moved = np.zeros(len(out), dtype=bool)
    moved[correct.rows] = (out[correct.rows] != before[correct.rows]).any(axis=1)
    log("restarted", moved)


S._anchored_samples, S._sampled_apart, S._steady, S._keep_apart, S.one_answer_per_run = (anchored, sampled, steady,
                                                                                        kept, one)
if "--separate" in sys.argv:
    S._separate = separate
_keep = pipeline.keep_apart


def keep(tree, plans, q, root, *a, **k):
    base = q.copy()
    state["phase"] = "clean"
    _keep(tree, plans, q, root, *a, **k)
    state["phase"] = "noisy"
    noisy = noisy_input(base, eps, seed)
    _keep(tree, plans, noisy, root, *a, **k)
    print_gap(path.name, eps, tree.joint_names, q, noisy)
    report()
    if trace is not None:
        print_trace()


def _anchors(clean, noisy):
    """Each run's anchor frame in both inputs where they differ, with the depths there."""
    out = []
    frames = np.flatnonzero(clean > 0)
    every = 4
    first = np.flatnonzero(np.diff(frames, prepend=frames[0] - 2 * every - 1) > 2 * every)
    last = np.append(first[1:] - 1, len(frames) - 1)
    for a, b in zip(first, last):
        ca, na = S._anchor(clean, frames[a], frames[b]), S._anchor(noisy, frames[a], frames[b])
        if ca != na:
            out.append((int(ca), int(na), f"{clean[ca]:.5f}/{clean[na]:.5f}", f"{noisy[ca]:.5f}/{noisy[na]:.5f}"))
    return out


def _paired(clean, noisy):
    """The two runs' log entries paired group by group (a group starts at its "shape"), the k-th of each name with
    the k-th (a stage one run skipped leaves the others aligned)."""
    def groups(log):
        out = []
        for name, value in log:
            if name == "shape":
                out.append([])
            if out:
                out[-1].append((name, value))
        return out
    for a, b in zip(groups(clean), groups(noisy)):
        seen = {}
        for name, value in a:
            k = seen.get(name, 0)
            seen[name] = k + 1
            other = [v for n, v in b if n == name]
            if k < len(other):
                yield name, value, other[k]


def report():
    clean, noisy = logs["clean"], logs["noisy"]
    group, samples = -1, None
    restarts, gaps = [], []
    for name, a, b in _paired(clean, noisy):
        if name == "depth":
            depths = (a, b)
            group += 1
            print(f"-- group {group}: inside frames clean {int((a > 0).sum())} noisy {int((b > 0).sum())}, "
                  f"differ {int(((a > 0) != (b > 0)).sum())}")
            continue
        if name == "samples":
            samples = (a, b)
            print(f"   samples {len(a)} / {len(b)}, same: {np.array_equal(a, b)}, differ at {np.setxor1d(a, b)[:10]}")
            print("   anchors (clean, noisy; depth m at both):", _anchors(depths[0], depths[1]))
            continue
        if name == "separate":
            (xa, oa, ca), (xb, ob, cb) = a, b
            if len(xa) == len(xb) and len(xa) < 400:
                din, dout = np.abs(xa - xb).max(1), np.abs(oa - ob).max(1)
                print(f"   separate on {len(xa)}: in over 1e-3 {(din > 1e-3).sum()} (max {din.max():.2e}), out over 1e-3 "
                      f"{(dout > 1e-3).sum()} (max {dout.max():.2e}, at {dout.argmax()}), gained >1e-3 where in <1e-3: "
                      f"{((dout > 1e-3) & (din < 1e-3)).sum()} {np.flatnonzero((dout > 1e-3) & (din < 1e-3))[:8]}")
            continue
        if name == "restarted":
            restarts.append((a, b))
            continue
        if name == "room@samples" and not np.array_equal(*samples):
            common, ia, ib = np.intersect1d(*samples, return_indices=True)
            a, b = a[ia], b[ib]
        if a.shape != b.shape:
            continue
        d = np.abs(a - b)
        big = d.max(1) > 1e-3
        at = np.unravel_index(d.argmax(), d.shape)
        print(f"   {name:13s} max {d.max():.2e} (row {at[0]}, col {at[1]}), rows over 1e-3: {big.sum()} of {len(d)}")
        if name == "room@samples" and np.array_equal(*samples):
            gaps.append(d.max(1))
        if name == "room@samples":
            for (ra, rb) in restarts:
                if len(ra) == len(a):
                    flip = ra != rb
                    print(f"   run answer restarted: clean {ra.sum()} noisy {rb.sum()}, differ {flip.sum()}; "
                          f"gap>1e-3 at differ {(big & flip).sum()}, at same {(big & ~flip).sum()}")
            restarts = []
    print_events(gaps)


from core.chains import corrections as K
_step = K._Corrections.step
trace = [int(v) for v in sys.argv[sys.argv.index("--trace") + 1:sys.argv.index("--trace") + 3]] if "--trace" in sys.argv \
    else None
traces = {"clean": [], "noisy": []}


def step(self, out, live, toward=None, known=None, metric=None, radius=None):
    phase = state["phase"]
    group = sum(n == "depth" for n, _ in logs[phase]) - 1
    first = not any(n == "separate" for n, _ in logs[phase][-3:]) and state.get("in_sampled")
    watch = trace is not None and first and group == trace[1] and trace[0] in self.rows[live]
    if watch:
        r = int(np.flatnonzero(self.rows[live] == trace[0])[0])
        f, p, d, g = known if known is not None else self._look(out, live)
        pick = f == r
        order = np.argsort(d[pick])
        before = out[trace[0]].copy()
    result = _step(self, out, live, toward, known, metric, radius)
    if watch:
        j = int(np.flatnonzero(self.rows == trace[0])[0])
        bound = np.flatnonzero((out[trace[0]] <= self.lower[j] + 1e-9) | (out[trace[0]] >= self.upper[j] - 1e-9))
        traces[phase].append((toward is not None, before, out[trace[0]].copy(),
                              list(zip(p[pick][order][:8].tolist(), np.round(d[pick][order][:8], 5).tolist())), bound))
    return result


K._Corrections.step = step
_whole, _cheaper = K._Corrections._whole_step, K._Corrections._keep_cheaper
events = {"clean": {}, "noisy": {}}  # (group, sampled row) -> the discrete choices it went through, in order


def event(self, rows, what):
    if not state.get("in_sampled"):
        return
    phase = state["phase"]
    group = sum(n == "depth" for n, _ in logs[phase]) - 1
    for r in rows:
        events[phase].setdefault((group, int(r)), []).append(what)


def counted_step(self, out, live, toward=None, known=None, metric=None, radius=None):
    if state.get("in_sampled"):
        f, p, d, _ = known if known is not None else self._look(out, live)
        for i, r in enumerate(self.rows[live]):
            mine = f == i
            order = np.argsort(d[mine], kind="stable")
            event(self, [r], "P" + ",".join(map(str, sorted(p[mine][order][:K.PAIRS_PER_FRAME]))))
            event(self, [r], "L" + ",".join(map(str, sorted(p[mine]))))
    inside = step(self, out, live, toward, known, metric, radius)
    event(self, self.rows[live], "whole" if toward is not None else "step")
    event(self, self.rows[inside], "in")
    bound = (out[self.rows[live]] <= self.lower[live] + 1e-9) | (out[self.rows[live]] >= self.upper[live] - 1e-9)
    for r, b in zip(self.rows[live], bound):
        event(self, [r], "b" + "".join(str(j) for j in np.flatnonzero(b)))
    return inside


def counted_whole(self, out, live):
    far = _whole(self, out, live)
    event(self, self.rows[np.setdiff1d(live, far)], "near")
    return far


def counted_cheaper(self, out, live, kept, inside):
    before = out[self.rows[live]].copy()
    _cheaper(self, out, live, kept, inside)
    event(self, self.rows[live][(out[self.rows[live]] != before).any(axis=1)], "back")


K._Corrections.step, K._Corrections._whole_step, K._Corrections._keep_cheaper = counted_step, counted_whole, \
    counted_cheaper


def print_events(gaps):
    """Per group, the rows whose sequence of choices differs between the runs, and the gap rows among them."""
    for group, gap in enumerate(gaps):
        kinds = {}
        for row in range(len(gap)):
            a, b = events["clean"].get((group, row), []), events["noisy"].get((group, row), [])
            if a != b:
                k = next(i for i, (x, y) in enumerate(zip(a + ["end"], b + ["end"])) if x != y)
                x, y = (a + ["end"])[k], (b + ["end"])[k]
                kind = {"b": "bound", "P": "6 closest", "L": "look-ahead"}.get(x[0]) if x[0] == y[0] and x[0] in "bPL" \
                    else "/".join(sorted((x, y)))
                kinds.setdefault(kind, []).append(row)
        if trace is not None and trace[1] == group:  # the traced row's choices, both runs
            for phase in ("clean", "noisy"):
                print(f"   {phase} choices of row {trace[0]}:", " ".join(events[phase].get((group, trace[0]), [])))
        big = set(np.flatnonzero(gap > 1e-3))
        same = big - set(r for rows in kinds.values() for r in rows)
        print(f"   group {group}: first differing choice -> rows (of them gap > 1e-3): " +
              ", ".join(f"{k} {len(v)} ({len(big & set(v))})" for k, v in sorted(kinds.items())) +
              f"; gap > 1e-3 with the same choices: {len(same)}")


def print_trace():
    for k, (a, b) in enumerate(zip(traces["clean"], traces["noisy"])):
        print(f"step {k} whole={a[0]}: in gap {np.abs(a[1] - b[1]).max():.1e} out gap {np.abs(a[2] - b[2]).max():.1e}")
        for name, t in (("clean", a), ("noisy", b)):
            print(f"   {name} out {np.round(t[2], 3)} bound {t[4]} pairs {t[3]}")


pipeline.keep_apart = keep
motion = load_bvh(path).to_source_motion()
tree = KinematicTree(parse_urdf(str(R / "data/robots/g1/unitree_g1_29dof.urdf")))
m = auto_map(motion, tree)
m.settings = dataclasses.replace(m.settings, avoid_self_collision=True)
pipeline.retarget(motion, tree, m, contacts="auto")
