"""Where a batch's clips run: in this process, in long-lived worker processes on this machine
(local), or as one task per clip on a Dask distributed cluster (dask).

Both engines retry a clip whose worker died (a crash, an out-of-memory kill, a lost machine) on
another worker; a clip that keeps killing its workers fails alone. The local pool speaks JSON lines
over pipes, so the same pool also drives Blender workers (the extension's .blend and .fbx clips).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Iterator

from ..playback import ExportSettings
from .arguments import CommandError
from .batch import BatchOptions, ClipJob, RobotJob, clip_status, run_clip

RESULT = "robot-retarget-result: "  # the prefix of a worker's answer line on its stdout
DIED_RETRIES = 1  # a clip whose worker died is tried once more before it fails
# Worker processes run one BLAS thread each: N processes already use the cores (core.library.blas
# pins the bake to one thread anyway, where it can).
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run_in_process(jobs: list[ClipJob], options: BatchOptions) -> Iterator[dict]:
    for job in jobs:
        yield run_clip(job, options)


# ------------------------------------------------------------------ local ---

def run_worker_pool(command: list[str], requests: list[dict], workers: int, failed: Callable[[int, str], dict],
                    hello: dict | None = None, env: dict | None = None,
                    retries: int = DIED_RETRIES) -> Iterator[dict]:
    """Answers of `workers` processes of `command`, each taking the next request when done with one.

    A worker reads `hello` (once) and then one JSON request per line on stdin and answers each with
    one RESULT line on stdout. A worker that dies is replaced; its request is retried `retries` times,
    then answered by failed(index, why). Answers come in the order they finish.
    """
    pending, done = queue.Queue(), queue.Queue()
    for index in range(len(requests)):
        pending.put(index)
    attempts = [0] * len(requests)

    def feed() -> None:
        proc = None
        with tempfile.TemporaryFile("w+") as log:
            while True:
                try:
                    index = pending.get_nowait()
                except queue.Empty:
                    break
                if proc is None:
                    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                            text=True, env=env)
                    lines = [hello] if hello is not None else []
                else:
                    lines = []
                try:
                    proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines + [requests[index]]))
                    proc.stdin.flush()
                    answer = next((a for a in iter(proc.stdout.readline, "") if a.startswith(RESULT)), None)
                except OSError:
                    answer = None
                if answer is not None:
                    done.put(json.loads(answer[len(RESULT):]))
                    continue
                code = proc.wait()
                proc = None
                attempts[index] += 1
                if attempts[index] <= retries:
                    pending.put(index)
                    continue
                log.seek(0)
                last = ([line for line in log.read().splitlines() if line.strip()] or [""])[-1]
                done.put(failed(index, f"worker process died (exit code {code}, tried {attempts[index]} "
                                       f"times) {last}".rstrip()))
            if proc is not None:
                proc.stdin.close()
                proc.wait()

    threads = [threading.Thread(target=feed, daemon=True) for _ in range(min(workers, len(requests)))]
    for thread in threads:
        thread.start()
    for _ in requests:
        yield done.get()
    for thread in threads:  # each closes its worker's stdin and reaps it: no worker outlives the batch
        thread.join()


def core_worker_command() -> tuple[list[str], dict]:
    """A Python that imports this very core package (no Blender): the command and its environment."""
    package = __package__.rpartition(".")[0]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for var in BLAS_THREADS:  # one BLAS thread per worker process, as Dask's nanny sets for its workers
        env.setdefault(var, "1")
    return [sys.executable, "-m", f"{package}.library.worker"], env


def options_message(options: BatchOptions) -> dict:
    return {"options": dataclasses.asdict(options)}


def options_from_message(message: dict) -> BatchOptions:
    data = dict(message["options"])
    return BatchOptions(**dict(data, settings=ExportSettings(**data["settings"])))


def job_message(job: ClipJob) -> dict:
    return dataclasses.asdict(job)


def job_from_message(message: dict) -> ClipJob:
    return ClipJob(message["source"], message["out"], RobotJob(**message["robot"]), message["overwrite"])


def run_local(jobs: list[ClipJob], options: BatchOptions, workers: int) -> Iterator[dict]:
    """`workers` core-only processes (or this process for one worker)."""
    if workers == 1:
        yield from run_in_process(jobs, options)
        return
    command, env = core_worker_command()
    started = time.monotonic()
    yield from run_worker_pool(command, [job_message(j) for j in jobs], workers,
                               lambda i, why: clip_status(jobs[i], started, error=why),
                               hello=options_message(options), env=env)


# ------------------------------------------------------------------- dask ---

def _distributed():
    try:
        import distributed
    except ImportError:
        raise CommandError("--engine dask needs Dask: pip install 'robot-retarget-core[dask]' "
                           "(dask[distributed])") from None
    return distributed


def run_dask(jobs: list[ClipJob], options: BatchOptions, workers: int, scheduler: str | None) -> Iterator[dict]:
    """One task per clip on the cluster at `scheduler`, or on a local cluster of `workers` processes.

    The options are scattered to every worker once; each worker parses a robot once (run_clip's
    cache). A task whose worker died is rescheduled by Dask (distributed.scheduler.allowed-failures);
    past that it fails its clip alone.
    """
    distributed = _distributed()
    import dask

    cluster = None
    # A local cluster's workers: glibc's own malloc trim threshold (Dask's 64 KiB returns each freed
    # array to the system: ~40 % more CPU per bake), no profiler sampling every task's stack, and
    # health checks every second rather than every 20-500 ms (CPU the bakes want on a small machine).
    dask.config.set({"distributed.nanny.pre-spawn-environ": {var: 1 for var in BLAS_THREADS},
                     "distributed.worker.profile.enabled": False,
                     "distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "5s",
                     "distributed.worker.memory.monitor-interval": "1s"})
    try:
        if scheduler:
            client = distributed.Client(scheduler, timeout="10s")
        else:
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
    except (OSError, TimeoutError) as exc:
        raise CommandError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})") from None
    started = time.monotonic()
    try:
        shared = client.scatter(options, broadcast=True)
        futures = {client.submit(run_clip, job, shared, pure=False, key=f"clip-{k}-{time.time_ns()}"): job
                   for k, job in enumerate(jobs)}
        for future in distributed.as_completed(futures):
            job = futures[future]
            try:
                yield future.result()
            except Exception as exc:  # KilledWorker: the clip took down workers again and again
                yield clip_status(job, started, error=f"worker died ({type(exc).__name__}: {exc})")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
