#!/usr/bin/env python3
"""Build the Robot Retarget extension zip(s) with Blender's own extension tool.

    python tools/build_extension.py                      # this machine's platform
    python tools/build_extension.py --platforms linux-x64,windows-x64
    python tools/build_extension.py --all-platforms --out dist

Steps: copy the repository's files into a fresh stage folder (under
build/stage/, removed afterwards), fetch the scipy wheel of every requested
platform with pip (cached in wheels/<platform>/), copy them to the stage's
./wheels/, write `wheels` and `platforms` into the STAGED manifest only, run
blender_ext.py `build` (--split-platforms for more than one platform) and
`validate` on each zip, then move the zips into --out.
The zip paths are printed on stdout, one a line; everything else goes to
stderr. blender_ext.py is found in the installed `bpy` wheel (it is not
imported). numpy is not bundled: Blender ships it.

Importable too: tools/robot-retarget uses source_files(), zip_path() and
build().
"""
from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import os
import platform as _platform
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXT_ID = "robot_retarget"
PYTHON_TAG = "cp311"  # Blender 4.5 and 5.0 both embed CPython 3.11

# Blender platform -> pip --platform tags (the lowest OS each wheel allows).
PLATFORM_TAGS = {
    "linux-x64": ["manylinux_2_17_x86_64", "manylinux2014_x86_64"],
    "linux-arm64": ["manylinux_2_17_aarch64", "manylinux2014_aarch64"],
    "windows-x64": ["win_amd64"],
    "macos-arm64": ["macosx_12_0_arm64"],
    "macos-x64": ["macosx_10_13_x86_64"],
}
# What --all-platforms (make dist) builds: Blender's main release platforms
# for which scipy publishes cp311 wheels.
ALL_PLATFORMS = ["linux-x64", "windows-x64", "macos-arm64", "macos-x64"]

# Walked (non-git) copies skip these folder names wherever they appear, plus
# whatever .gitignore lists; blender_ext.py applies the manifest's
# paths_exclude_pattern on top of that.
_WALK_SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", "build", "dist", "wheels", "out"}


class BuildError(RuntimeError):
    """A build step failed; the message says which and why."""


def log(msg: str) -> None:
    print(f"build_extension: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Facts about this checkout and this machine

def current_platform() -> str:
    """This machine as a Blender platform name (same rule as blender_ext.py)."""
    system = _platform.system().lower()
    system = {"darwin": "macos"}.get(system, system)
    machine = _platform.machine().lower()
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    return f"{system}-{machine}"


def manifest_data(root: Path = ROOT) -> dict:
    path = root / "blender_manifest.toml"
    if not path.is_file():
        raise BuildError(f"{path} is missing")
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def scipy_pin(root: Path = ROOT) -> str:
    """The scipy version pinned in requirements-dev.txt (the single source)."""
    req = root / "requirements-dev.txt"
    if not req.is_file():
        raise BuildError(f"{req} is missing (it pins the scipy version to bundle)")
    for line in req.read_text().splitlines():
        m = re.match(r"^\s*scipy\s*==\s*([0-9][0-9A-Za-z.+-]*)\s*(#.*)?$", line)
        if m:
            return m.group(1)
    raise BuildError(f"{req} has no 'scipy==X.Y.Z' line")


def blender_ext_path() -> Path:
    """blender_ext.py inside the installed bpy package, without importing bpy."""
    spec = importlib.util.find_spec("bpy")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        hits = sorted(Path(root).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
        if hits:
            return hits[-1]
    raise BuildError(
        f"blender_ext.py not found: the bpy package is not installed for {sys.executable} "
        "(run `make setup` and use .venv/bin/python)"
    )


def valid_tags_path(blender_ext: Path) -> Path | None:
    """Blender's list of allowed tags (the one Blender itself validates with)."""
    tags = blender_ext.parents[3] / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    return tags if tags.is_file() else None


def _gitignore_patterns(root: Path) -> tuple[set[str], list[str]]:
    dirs: set[str] = set()
    globs: list[str] = []
    gi = root / ".gitignore"
    if gi.is_file():
        for line in gi.read_text().splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            if line.endswith("/"):
                dirs.add(line.strip("/"))
            else:
                globs.append(line.lstrip("/"))
    return dirs, globs


def _in_git_checkout(root: Path) -> bool:
    if shutil.which("git") is None:
        return False
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=root,
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, OSError):
        return False
    return Path(top).resolve() == root.resolve()


def source_files(root: Path = ROOT) -> list[str]:
    """Repository files as '/'-separated relative paths, sorted.

    In a git checkout: tracked files plus untracked files that are not ignored
    (git ls-files). Elsewhere (a copied tree, an unpacked tarball): a walk that
    skips the usual build/venv/cache folders and what .gitignore lists.
    """
    root = root.resolve()
    if _in_git_checkout(root):
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, check=True,
        ).stdout.decode("utf-8")
        files = {f for f in out.split("\0") if f and (root / f).is_file()}
        return sorted(files)

    skip_dirs, globs = _gitignore_patterns(root)
    skip_dirs |= _WALK_SKIP_DIRS
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
        rel_dir = Path(dirpath).relative_to(root)
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            if any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(rel, g) for g in globs):
                continue
            files.append(rel)
    return sorted(files)


def zip_path(platform: str, out: Path | str = ROOT / "dist", root: Path = ROOT) -> Path:
    """Where build() puts the zip for one platform."""
    m = manifest_data(root)
    return Path(out) / f"{m['id']}-{m['version']}-{platform.replace('-', '_')}.zip"


# --------------------------------------------------------------------------
# Steps

def stage_sources(stage: Path, root: Path = ROOT) -> int:
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    copied = 0
    for rel in source_files(root):
        dst = stage / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copy2(root / rel, dst)
        except FileNotFoundError:  # deleted since it was listed: not part of this build
            continue
        copied += 1
    if not (stage / "blender_manifest.toml").is_file():
        raise BuildError("blender_manifest.toml was not staged (is it ignored?)")
    if not (stage / "__init__.py").is_file():
        raise BuildError("__init__.py was not staged (is it ignored?)")
    return copied


def fetch_wheel(platform: str, version: str, cache: Path) -> Path:
    """The scipy wheel for `platform`, downloaded once into cache/<platform>/."""
    folder = cache / platform
    pattern = f"scipy-{version}-{PYTHON_TAG}-{PYTHON_TAG}-*.whl"
    found = sorted(folder.glob(pattern))
    if found:
        return found[-1]
    folder.mkdir(parents=True, exist_ok=True)
    # Download beside the cache and move in when complete, so a concurrent
    # build never picks up a half-written wheel.
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", f"scipy=={version}",
            "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
            "--python-version", PYTHON_TAG[2] + "." + PYTHON_TAG[3:],
            "--implementation", "cp", "--abi", PYTHON_TAG,
            "-d", tmp,
        ]
        for tag in PLATFORM_TAGS[platform]:
            cmd += ["--platform", tag]
        log(f"downloading scipy=={version} for {platform}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        got = sorted(Path(tmp).glob(pattern))
        if proc.returncode != 0 or not got:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise BuildError(f"pip could not download scipy=={version} for {platform}:\n{tail}")
        os.replace(got[-1], folder / got[-1].name)
        return folder / got[-1].name


def write_staged_manifest(stage: Path, wheels: list[str], platforms: list[str]) -> None:
    """Insert top-level `wheels` and `platforms` before the first [table]."""
    path = stage / "blender_manifest.toml"
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    for key in ("wheels", "platforms"):
        if key in data:
            raise BuildError(
                f"blender_manifest.toml must not list `{key}`: the build writes it "
                "(wheels are never committed)"
            )
    lines = text.splitlines(keepends=True)
    at = next((i for i, ln in enumerate(lines) if re.match(r"^\s*\[", ln)), len(lines))
    block = (
        "# Written by tools/build_extension.py into the staged copy only.\n"
        "wheels = [\n" + "".join(f'  "{w}",\n' for w in wheels) + "]\n"
        "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]\n\n"
    )
    lines.insert(at, block)
    path.write_text("".join(lines), encoding="utf-8")
    check = tomllib.loads(path.read_text(encoding="utf-8"))
    if check.get("wheels") != wheels or check.get("platforms") != platforms:
        raise BuildError("internal error: staged manifest did not take wheels/platforms")


def _run_blender_ext(blender_ext: Path, args: list[str], what: str) -> str:
    proc = subprocess.run([sys.executable, str(blender_ext), *args], capture_output=True, text=True)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or "FATAL_ERROR" in output:
        raise BuildError(f"blender_ext.py {what} failed:\n{output}")
    return output


def validate(zip_file: Path | str) -> str:
    """Run blender_ext.py validate on a built zip; raise BuildError if it fails."""
    blender_ext = blender_ext_path()
    tags = valid_tags_path(blender_ext)
    args = ["validate", str(zip_file)]
    if tags:
        args += ["--valid-tags", str(tags)]
    return _run_blender_ext(blender_ext, args, f"validate {zip_file}")


def build(
    platforms: list[str] | None = None,
    out: Path | str = ROOT / "dist",
    *,
    root: Path = ROOT,
    wheel_cache: Path | None = None,
) -> list[Path]:
    """Build (and validate) one zip per platform; returns their paths.

    Each build stages into its own folder under build/stage/ and moves the
    finished zips into `out` at the end, so builds running at the same time
    (tests, the launcher, a developer) never see each other's files.
    """
    root = Path(root).resolve()
    platforms = list(platforms or [current_platform()])
    unknown = [p for p in platforms if p not in PLATFORM_TAGS]
    if unknown:
        raise BuildError(
            f"unknown platform(s) {', '.join(unknown)}; known: {', '.join(PLATFORM_TAGS)}"
        )
    platforms = list(dict.fromkeys(platforms))
    out = Path(out).resolve()
    wheel_cache = Path(wheel_cache or root / "wheels").resolve()

    blender_ext = blender_ext_path()
    tags = valid_tags_path(blender_ext)
    version = scipy_pin(root)
    manifest_data(root)  # fail early on a missing/broken manifest

    (root / "build" / "stage").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=root / "build" / "stage", prefix=f"{os.getpid()}-"))
    try:
        stage, work_out = work / EXT_ID, work / "out"
        n = stage_sources(stage, root)
        log(f"staged {n} files in {stage}")

        staged_wheels = []
        (stage / "wheels").mkdir(exist_ok=True)
        for plat in platforms:
            wheel = fetch_wheel(plat, version, wheel_cache)
            shutil.copy2(wheel, stage / "wheels" / wheel.name)
            staged_wheels.append(f"./wheels/{wheel.name}")
        write_staged_manifest(stage, staged_wheels, platforms)

        work_out.mkdir()
        args = ["build", "--source-dir", str(stage)]
        if tags:
            args += ["--valid-tags", str(tags)]
        if len(platforms) > 1:
            args += ["--split-platforms", "--output-dir", str(work_out)]
        else:
            # Same file name a split build gives, so single and all-platform
            # builds never overwrite each other with different contents.
            args += ["--output-filepath", str(zip_path(platforms[0], work_out, root))]
        _run_blender_ext(blender_ext, args, "build")

        built = [zip_path(p, work_out, root) for p in platforms]
        missing = [str(z) for z in built if not z.is_file()]
        if missing:
            raise BuildError(f"blender_ext.py build did not write {', '.join(missing)}")
        for z in built:
            validate(z)
        out.mkdir(parents=True, exist_ok=True)
        zips = []
        for z in built:
            os.replace(z, out / z.name)
            zips.append(out / z.name)
        return zips
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--platforms", metavar="P1,P2",
        help=f"comma separated Blender platforms (known: {', '.join(PLATFORM_TAGS)}); "
             "default: this machine's",
    )
    group.add_argument(
        "--all-platforms", action="store_true",
        help=f"build {', '.join(ALL_PLATFORMS)}",
    )
    parser.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default: dist)")
    args = parser.parse_args(argv)

    if args.all_platforms:
        platforms = ALL_PLATFORMS
    elif args.platforms:
        platforms = [p.strip() for p in args.platforms.split(",") if p.strip()]
    else:
        platforms = [current_platform()]
    try:
        zips = build(platforms, args.out)
    except BuildError as ex:
        print(f"build_extension: error: {ex}", file=sys.stderr)
        return 1
    for z in zips:
        print(z)
    return 0


if __name__ == "__main__":
    sys.exit(main())
