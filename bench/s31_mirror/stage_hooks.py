"""Hooks that record a bake's joints after each stage (solve_chains, planting, keep_apart and each of its room
groups) into `stages` [(stage, q (F, n))]: bench/s31_mirror's probes compare two bakes stage by stage."""
from core.retarget import pipeline

stages: list = []
_keep, _solve, _plant, _separate = pipeline.keep_apart, pipeline.solve_chains, pipeline._plant, pipeline.separate_chains


def keep(tree, plans, q, *a, **k):
    stages.append(("before keep_apart", q.copy()))
    _keep(tree, plans, q, *a, **k)
    stages.append(("after keep_apart", q.copy()))


def solve(*a, **k):
    q = _solve(*a, **k)
    stages.append(("solve_chains", q.copy()))
    return q


def plant(*a, **k):
    out = _plant(*a, **k)
    if out is not None:
        stages.append(("planted", out.q.copy()))
    return out


def separate(tree, chains, q, term, *a, **k):
    _separate(tree, chains, q, term, *a, **k)
    first = tree.joint_names[int(chains[0][0].columns[0])] if len(chains[0][0].columns) else "?"
    stages.append((f"  room {first.replace('_joint', '')[:14]}", q.copy()))


pipeline.keep_apart, pipeline.solve_chains, pipeline._plant, pipeline.separate_chains = keep, solve, plant, separate
