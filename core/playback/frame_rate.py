"""Which frame rate turns a Blender action's frames into seconds for an export.

An action's keys are frames; the scene's frame rate makes them seconds. A bake
reads its source at the scene's rate of that moment and stores it (the bake
report's `fps`), so when the two differ one of them is wrong, and the export
would be too long or too short by their ratio. Refused unless the user says
which is right. A scene at Blender's default 24 fps is often a mistake too: a
BVH imported without the importer's *Scene FPS* is keyed one frame per clip
frame, so a 120 Hz clip plays (and exports) five times too long; Blender keeps
no frame time for the clip, so only a warning can say it.
"""
from __future__ import annotations

from .sampling import PlaybackError

CHOICES = ("auto", "scene", "bake")  # auto: the scene's rate, refused if the bake's differs
BLENDER_DEFAULT_FPS = 24.0
_SAME = 1e-6  # relative: fps / fps_base round trips (29.97) are not a change of rate


def export_fps(scene_fps: float, baked_fps: float | None, choice: str = "auto",
               action: str = "action") -> tuple[float, list[str]]:
    """(frames per second to export `action` at, warnings): the scene's rate, or the bake's."""
    if choice not in CHOICES:
        raise PlaybackError(f"frame_rate {choice!r}: expected one of {', '.join(CHOICES)}")
    if baked_fps is None or abs(baked_fps - scene_fps) <= _SAME * scene_fps:
        return scene_fps, []
    said = (f"{action!r} was baked at {baked_fps:g} fps but the scene runs at {scene_fps:g} fps "
            f"(its keys are frames: at the bake's rate the motion lasts {scene_fps / baked_fps:.3g} times "
            "as long as at the scene's)")
    if choice == "auto":
        raise PlaybackError(f"{said}; choose the rate the clip was recorded at: frame_rate scene or bake "
                            "(--frame-rate, Frame Rate in the export dialog), or set the scene's frame rate "
                            "to the clip's and bake again")
    fps = scene_fps if choice == "scene" else baked_fps
    return fps, [f"{said}; exported at the {choice}'s {fps:g} fps (frame_rate {choice})"]


HINT_START = "the clip was read at the scene's 24 fps, Blender's default"  # kept: stored with older bakes


def default_rate_hint(fps: float) -> str | None:
    """A warning for a bake read at Blender's default 24 fps (see the module's docstring): calm for a
    clip that is 24 fps, and the way out for a BVH that is not (its Frame Time gives its rate)."""
    if abs(fps - BLENDER_DEFAULT_FPS) > _SAME * BLENDER_DEFAULT_FPS:
        return None
    return (f"{HINT_START}: right for a clip recorded at 24 fps (nothing to do then), but a BVH imported "
            "without the importer's Scene FPS is keyed one frame per clip frame whatever its Frame Time, so a "
            "120 Hz clip (Frame Time 0.00833333) bakes and exports five times too long; then set the scene's "
            "frame rate to 1 / Frame Time and bake again")


def bake_warnings(warnings: list[str], fps: float) -> list[str]:
    """The bake's stored warnings that still hold for an export at `fps`: the 24 fps hint goes when
    the export is not at 24 fps (the scene set to the clip's rate, taken with frame_rate scene)."""
    if default_rate_hint(fps) is not None:
        return list(warnings)
    return [w for w in warnings if not w.startswith(HINT_START)]
