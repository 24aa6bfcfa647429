"""Mapping presets: JSON round trips, refusal to overwrite, and bad presets that
must fail with a MappingError naming the file and the offending field."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from core.motion.fileio import OutputError
from core.chains.mapping import (PRESET_FORMAT, PRESET_VERSION, ChainMapping, Mapping, MappingError,
                          RetargetSettings)


def _mapping() -> Mapping:
    """A mapping that uses every kind of field with non-default values."""
    settings = RetargetSettings(objective="l1", iterations=17, smoothness=0.125, root_mode="in_place",
                                ground="frame", filter="moving_average", cutoff_hz=4.5, window=9)
    return Mapping(
        chains=[
            ChainMapping("spine", "Hips", ["LeftShoulder", "RightShoulder"], "pelvis",
                         ["left_shoulder_pitch_link", "right_shoulder_pitch_link"], role="spine",
                         tip_weight=1.0),
            ChainMapping("left_leg", "LeftHip", ["LeftToe"], "left_hip_pitch_link", ["left_ankle_roll_link"],
                         role="leg", side="left", source_tip_tail=True, robot_tip_offset=[0.12, 0.0, -0.03],
                         points=7, tip_weight=4.5, weight=0.75,
                         source_fractions=[0.25, 0.5, 1.0], robot_fractions=[0.3, 0.6, 1.0]),
            ChainMapping("right_hand", "RightWrist", ["RFingers"], "right_wrist_roll_link",
                         ["right_rubber_hand"], role="hand", side="right", enabled=False),
        ],
        source_root="Hips", robot_root="pelvis", settings=settings)


def _preset(**changes) -> dict:
    data = _mapping().to_dict()
    data.update(changes)
    return data


def _write(tmp_path, data, name="preset.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


# --------------------------------------------------------------- round trip ---

def test_save_load_round_trip(tmp_path):
    original = _mapping()
    path = original.save(tmp_path / "g1.json")
    assert path == tmp_path / "g1.json"
    loaded = Mapping.load(path)
    assert loaded == original
    assert loaded.chains[1].robot_tip_offset == [0.12, 0.0, -0.03]
    assert loaded.chains[1].source_fractions == [0.25, 0.5, 1.0]
    assert loaded.chains[2].enabled is False
    assert [c.name for c in loaded.enabled_chains()] == ["spine", "left_leg"]
    # The file is plain, readable JSON with the format tag and version.
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == PRESET_FORMAT and data["version"] == PRESET_VERSION
    assert data["chains"][0]["source_tips"] == ["LeftShoulder", "RightShoulder"]
    # Saving the loaded mapping again gives the same bytes.
    again = loaded.save(tmp_path / "again.json")
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_settings_round_trip(tmp_path):
    settings = _mapping().settings
    loaded = Mapping.load(Mapping(settings=settings).save(tmp_path / "s.json")).settings
    assert loaded == settings
    for f in dataclasses.fields(RetargetSettings):
        assert type(getattr(loaded, f.name)) is type(getattr(settings, f.name)), f.name
    # Defaults survive too, and a preset without settings gets the defaults.
    assert Mapping.load(Mapping().save(tmp_path / "d.json")).settings == RetargetSettings()
    data = _preset()
    del data["settings"]
    assert Mapping.load(_write(tmp_path, data)).settings == RetargetSettings()


def test_integer_json_numbers_load_as_floats(tmp_path):
    data = _preset()
    data["settings"]["cutoff_hz"] = 5
    data["chains"][1]["robot_tip_offset"] = [0, 1, 0]
    loaded = Mapping.load(_write(tmp_path, data))
    assert loaded.settings.cutoff_hz == 5.0 and isinstance(loaded.settings.cutoff_hz, float)
    assert loaded.chains[1].robot_tip_offset == [0.0, 1.0, 0.0]


def test_null_for_optional_fields(tmp_path):
    data = _preset()
    data["chains"][1]["robot_tip_offset"] = None
    data["chains"][1]["source_fractions"] = None
    loaded = Mapping.load(_write(tmp_path, data))
    assert loaded.chains[1].robot_tip_offset is None and loaded.chains[1].source_fractions is None


# ---------------------------------------------------------------- overwrite ---

def test_refuses_to_overwrite_without_permission(tmp_path):
    path = tmp_path / "preset.json"
    _mapping().save(path)
    before = path.read_bytes()
    other = Mapping(source_root="Other")
    with pytest.raises(OutputError, match=re.escape(str(path))):
        other.save(path)
    assert path.read_bytes() == before  # untouched
    other.save(path, overwrite=True)
    assert Mapping.load(path).source_root == "Other"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset.json"]  # no temp files left


def test_save_into_missing_folder_fails_clearly(tmp_path):
    with pytest.raises(OutputError, match="does not exist"):
        _mapping().save(tmp_path / "nowhere" / "p.json")


# -------------------------------------------------------------- bad presets ---

def _load_error(tmp_path, data) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(MappingError) as info:
        Mapping.load(path)
    message = str(info.value)
    assert str(path) in message, message  # every error names the file
    return message


def test_missing_file(tmp_path):
    path = tmp_path / "missing.json"
    with pytest.raises(MappingError, match=re.escape(str(path)) + ".*not found"):
        Mapping.load(path)


def test_not_json_names_the_line(tmp_path):
    text = json.dumps(_preset(), indent=2).splitlines()
    text[5] = text[5] + " oops"  # garbage on line 6
    message = _load_error(tmp_path, "\n".join(text))
    assert "line 6" in message and "invalid JSON" in message


def test_empty_file_is_not_json(tmp_path):
    assert "invalid JSON" in _load_error(tmp_path, "")


@pytest.mark.parametrize("data", [
    {"chains": []},  # no tag at all
    {"format": "something.else", "version": 1},
    [1, 2, 3],  # not an object
])
def test_wrong_format_tag(tmp_path, data):
    message = _load_error(tmp_path, data)
    assert "format" in message and PRESET_FORMAT in message


def test_newer_version_is_refused(tmp_path):
    message = _load_error(tmp_path, _preset(version=PRESET_VERSION + 1))
    assert f"version {PRESET_VERSION + 1}" in message


@pytest.mark.parametrize("where,field,value,words", [
    ("chain", "tip_weight", "heavy", "expected a number"),
    ("chain", "points", True, "expected a number"),
    ("chain", "source_tips", "LeftToe", "expected a list of names"),
    ("chain", "robot_tips", ["a", 3], "expected a list of names"),
    ("chain", "source_tip_tail", "yes", "expected true or false"),
    ("chain", "robot_tip_offset", [0.1, "x", 0.0], "expected a list of numbers"),
    ("chain", "name", 7, "expected text"),
    ("settings", "iterations", "many", "expected a number"),
    ("settings", "cutoff_hz", None, "expected a number"),
    ("settings", "filter", 3, "expected text"),
])
def test_wrong_type_names_the_field(tmp_path, where, field, value, words):
    data = _preset()
    if where == "chain":
        data["chains"][1][field] = value
        prefix = "chains[1]"
    else:
        data["settings"][field] = value
        prefix = "settings"
    message = _load_error(tmp_path, data)
    assert f"{prefix}.{field}" in message and words in message


def test_non_finite_number_is_refused(tmp_path):
    # json.dumps writes NaN as a bare token, which Python's json reads back.
    data = _preset()
    data["settings"]["smoothness"] = float("nan")
    assert "settings.smoothness" in _load_error(tmp_path, data)


def test_unknown_chain_field_is_named(tmp_path):
    data = _preset()
    data["chains"][0]["tipweight"] = 2.0
    message = _load_error(tmp_path, data)
    assert "chains[0]" in message and "tipweight" in message and "unknown" in message


def test_unknown_settings_field_is_named(tmp_path):
    data = _preset()
    data["settings"]["iteration"] = 3
    message = _load_error(tmp_path, data)
    assert "settings" in message and "iteration" in message


def test_missing_chain_field_is_named(tmp_path):
    data = _preset()
    del data["chains"][1]["robot_base"]
    message = _load_error(tmp_path, data)
    assert "chains[1]" in message and "robot_base" in message


def test_chain_that_is_not_an_object(tmp_path):
    data = _preset()
    data["chains"][2] = "left_arm"
    assert "chains[2]" in _load_error(tmp_path, data)


def test_unknown_role(tmp_path):
    data = _preset()
    data["chains"][1]["role"] = "tentacle"
    message = _load_error(tmp_path, data)
    assert "tentacle" in message and "left_leg" in message


# Malformed presets that once crashed with a raw TypeError or loaded silently.

@pytest.mark.parametrize("version", ["2", None])
def test_bad_version_type(tmp_path, version):
    assert "version" in _load_error(tmp_path, _preset(version=version))


def test_chains_not_a_list(tmp_path):
    assert "chains" in _load_error(tmp_path, _preset(chains=5))


def test_unknown_top_level_field(tmp_path):
    data = _preset()
    data["chian"] = data.pop("chains")
    assert "chian" in _load_error(tmp_path, data)


def test_fraction_for_integer_field(tmp_path):
    data = _preset()
    data["settings"]["iterations"] = 2.5
    assert "settings.iterations" in _load_error(tmp_path, data)


@pytest.mark.parametrize("field,value", [("filter", "gaussian"), ("objective", "l3"),
                                         ("root_mode", "hover"), ("ground", "ceiling")])
def test_unknown_setting_choice(tmp_path, field, value):
    data = _preset()
    data["settings"][field] = value
    assert f"settings.{field}" in _load_error(tmp_path, data)


@pytest.mark.parametrize("field", ["source_root", "robot_root"])
def test_root_names_must_be_text(tmp_path, field):
    assert field in _load_error(tmp_path, _preset(**{field: 5}))


@pytest.mark.parametrize("where,field,value", [
    ("chain", "points", 65), ("chain", "weight", -0.5),
    ("chain", "source_fractions", [0.5, 1.5]), ("chain", "robot_fractions", [-0.1, 1.0]),
    ("chain", "robot_tip_offset", [0.1, 0.0]),
    ("settings", "rest_prior", -0.01), ("settings", "cutoff_hz", 0.0), ("settings", "window", 0),
    ("settings", "iterations", 101), ("settings", "collision_margin", -0.5),
])
def test_a_number_outside_the_sidebars_range_is_refused(tmp_path, where, field, value):
    """The sidebar clamps these (props.py takes its bounds from the same ranges): a preset that
    holds one outside them baked on the command line otherwise than once loaded in Blender."""
    data = _preset()
    (data["chains"][1] if where == "chain" else data["settings"])[field] = value
    assert field in _load_error(tmp_path, data)


def test_the_ranges_hold_the_defaults_and_their_edges(tmp_path):
    from core.chains.mapping import CHAIN_RANGES, SETTING_RANGES

    data = _preset()
    for target, ranges in ((data["chains"][1], CHAIN_RANGES), (data["settings"], SETTING_RANGES)):
        for field, (low, high) in ranges.items():
            target[field] = high if high is not None else low
    loaded = Mapping.load(_write(tmp_path, data))
    assert loaded.settings.window == SETTING_RANGES["window"][1] and loaded.chains[1].points == 64
    assert Mapping.load(Mapping().save(tmp_path / "defaults.json")) == Mapping()
