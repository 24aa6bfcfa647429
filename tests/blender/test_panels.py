"""Every panel's and UI list's draw() runs against Blender's own data.

bpy as a module has no window, so draw() never runs by itself. Here it runs
with a layout stand-in that records each call and checks it the way Blender
would: `prop(data, "name")` needs a property of `data`, `operator("id")` a
registered operator (and any property set on its result must exist),
`prop_search` a real collection, `template_list` a registered UI list over a
collection, and every keyword must be a parameter of the real UILayout
function. The scene is a real set-up: the walk and the G1 picked in the
Robot tab, chains auto-mapped and one selected, a baked action on an NLA
strip, contact channels on the source.
"""
from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import bpy
import pytest

LAYOUT_RNA = bpy.types.UILayout.bl_rna


class DrawError(AssertionError):
    pass


def _check_keywords(function: str, kwargs: dict) -> None:
    params = {p.identifier: p for p in LAYOUT_RNA.functions[function].parameters}
    for key, value in kwargs.items():
        if key not in params:
            raise DrawError(f"UILayout.{function}() has no parameter {key!r}")
        if key == "icon" and value not in {item.identifier for item in params["icon"].enum_items}:
            raise DrawError(f"UILayout.{function}(icon={value!r}): no such icon")


def _check_property(data, name: str, where: str):
    if data is None:
        raise DrawError(f"{where}: data is None")
    rna = data.bl_rna.properties
    if name not in rna:
        raise DrawError(f"{where}: {type(data).__name__} has no property {name!r}")
    return rna[name]


class OperatorProperties:
    """What layout.operator() returns: setting a property it does not have is an error."""

    def __init__(self, idname: str):
        module, _, name = idname.partition(".")
        try:
            rna = getattr(getattr(bpy.ops, module), name).get_rna_type()
        except (AttributeError, KeyError) as exc:
            raise DrawError(f"operator {idname!r} is not registered") from exc
        object.__setattr__(self, "_idname", idname)
        object.__setattr__(self, "_props", {p.identifier: p for p in rna.properties})

    def __setattr__(self, key, value):
        prop = self._props.get(key)
        if prop is None or key == "rna_type":
            raise DrawError(f"operator {self._idname!r} has no property {key!r}")
        if prop.type == 'ENUM' and value not in {item.identifier for item in prop.enum_items}:
            raise DrawError(f"operator {self._idname!r}: {key}={value!r} is not one of its items")


class RecordingLayout:
    """A UILayout stand-in: records (function, detail) and checks each call against Blender's RNA."""

    _ATTRIBUTES = {p.identifier for p in LAYOUT_RNA.properties}

    def __init__(self, log: list, context):
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_context", context)

    def __setattr__(self, name, value):
        if name not in self._ATTRIBUTES:
            raise DrawError(f"UILayout has no attribute {name!r}")
        object.__setattr__(self, name, value)

    def _child(self, function: str, kwargs: dict) -> "RecordingLayout":
        _check_keywords(function, kwargs)
        self._log.append((function, ""))
        return RecordingLayout(self._log, self._context)

    def row(self, **kwargs):
        return self._child("row", kwargs)

    def column(self, **kwargs):
        return self._child("column", kwargs)

    def box(self):
        return self._child("box", {})

    def split(self, **kwargs):
        return self._child("split", kwargs)

    def grid_flow(self, **kwargs):
        return self._child("grid_flow", kwargs)

    def label(self, **kwargs):
        _check_keywords("label", kwargs)
        self._log.append(("label", kwargs.get("text", "")))

    def separator(self, **kwargs):
        _check_keywords("separator", kwargs)

    def prop(self, data, name, **kwargs):
        _check_keywords("prop", kwargs)
        _check_property(data, name, "prop")
        self._log.append(("prop", f"{type(data).__name__}.{name}"))

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        _check_keywords("prop_search", kwargs)
        _check_property(data, name, "prop_search")
        if _check_property(search_data, search_name, "prop_search (search)").type != 'COLLECTION':
            raise DrawError(f"prop_search: {type(search_data).__name__}.{search_name} is not a collection")
        self._log.append(("prop_search", f"{type(data).__name__}.{name} in {search_name}"))

    def operator(self, idname, **kwargs):
        _check_keywords("operator", kwargs)
        self._log.append(("operator", idname))
        return OperatorProperties(idname)

    def template_list(self, list_type, list_id, data, name, active_data, active_name, **kwargs):
        _check_keywords("template_list", kwargs)
        ui_list = getattr(bpy.types, list_type, None)
        if ui_list is None or not issubclass(ui_list, bpy.types.UIList):
            raise DrawError(f"template_list: {list_type!r} is not a registered UI list")
        if _check_property(data, name, "template_list").type != 'COLLECTION':
            raise DrawError(f"template_list: {name!r} is not a collection")
        if _check_property(active_data, active_name, "template_list (active)").type != 'INT':
            raise DrawError(f"template_list: {active_name!r} is not an integer")
        self._log.append(("template_list", list_type))
        stand_in = SimpleNamespace(layout_type='DEFAULT')
        for index, item in enumerate(getattr(data, name)):
            ui_list.draw_item(stand_in, self._context, RecordingLayout(self._log, self._context), data, item, 0,
                              active_data, active_name, index)

    def __getattr__(self, name):  # any other real UILayout function: accepted, not checked further
        if name.startswith("_") or not hasattr(bpy.types.UILayout, name):
            raise DrawError(f"UILayout has no function {name!r}")
        return lambda *args, **kwargs: self._child(name, {}) if name in LAYOUT_RNA.functions else None


def draw_panel(panel, context) -> list:
    log: list = []
    if hasattr(panel, "poll") and not panel.poll(context):
        return log
    panel.draw(SimpleNamespace(layout=RecordingLayout(log, context), bl_label=panel.bl_label), context)
    return log


@pytest.fixture
def panels(extension):
    """Every Panel class the extension registered."""
    modules = importlib.import_module(extension.__name__ + ".panels").MODULES
    found = [cls for module in modules for cls in module.classes if issubclass(cls, bpy.types.Panel)]
    assert len(found) >= 6
    return found


@pytest.fixture
def full_scene(walk_on_g1, extension):
    """Source and robot picked, chains mapped (one active), a baked action on a selected NLA strip
    with a main_start marker, and contact channels on the source."""
    settings, source, robot = walk_on_g1(frames=(1, 30))
    settings.active_chain = 1
    assert bpy.ops.robot_retarget.detect_contacts() == {'FINISHED'}
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    action = robot.animation_data.action
    action.pose_markers.new("main_start").frame = 5
    track = robot.animation_data.nla_tracks.new()
    strip = track.strips.new(action.name, 1, action)
    strip.select = True
    return settings


def test_every_panel_and_list_draws_against_real_data(full_scene, panels):
    context = bpy.context
    drawn = {}
    for panel in panels:
        log = draw_panel(panel, context)
        assert log, f"{panel.__name__} drew nothing"
        drawn[panel.__name__] = log
    chains = drawn["ROBOT_RETARGET_PT_chains"]
    assert ("template_list", "ROBOT_RETARGET_UL_chains") in chains
    rows = [d for kind, d in chains if kind == "prop" and d.endswith(".enabled")]
    assert len(rows) == len(full_scene.chains) >= 5  # the UI list drew every chain row
    assert any(kind == "prop_search" and "source_base" in d for kind, d in chains)  # the active chain's bones
    contacts = drawn["ROBOT_RETARGET_PT_contacts"]
    assert ("operator", "robot_retarget.set_contact") in contacts  # per-foot rows of real channels
    splice = drawn["ROBOT_RETARGET_PT_splice"]
    assert ("prop", "TimelineMarker.frame") in splice and ("operator", "robot_retarget.splice_marker") in splice
    export = drawn["ROBOT_RETARGET_PT_export"]
    assert ("operator", "robot_retarget.export_playback") in export


def test_the_empty_scene_draws_too(clean_scene, panels):
    for panel in panels:
        draw_panel(panel, bpy.context)  # no source, no robot: hints, never an error


@pytest.mark.parametrize("draw, message", [
    (lambda layout, s: layout.prop(s, "no_such_setting"), "has no property 'no_such_setting'"),
    (lambda layout, s: layout.operator("robot_retarget.no_such_operator"), "is not registered"),
    (lambda layout, s: setattr(layout.operator("robot_retarget.chain_move"), "direction", "LEFT"), "not one of"),
    (lambda layout, s: layout.prop_search(s, "source", s, "action_name"), "is not a collection"),
    (lambda layout, s: layout.label(text="x", icon='NO_SUCH_ICON'), "no such icon"),
    (lambda layout, s: layout.row(aligned=True), "no parameter 'aligned'"),
])
def test_the_stand_in_catches_what_blender_would_refuse(full_scene, draw, message):
    with pytest.raises(DrawError, match=message):
        draw(RecordingLayout([], bpy.context), full_scene)


def test_auto_map_notes_show_under_chains(walk_on_g1, panels):
    """Bones whose names say nothing: auto-map takes left and right from the posture, says so
    in its report and under Chains, and the bake's report carries the same notes."""
    settings, source, robot = walk_on_g1(frames=(1, 30))
    for k, bone in enumerate(source.data.bones):
        bone.name = f"bone{k:02d}"
    assert bpy.ops.robot_retarget.auto_map() == {'FINISHED'}
    assert "do not say left and right" in settings.automap_notes
    chains = next(p for p in panels if p.__name__ == "ROBOT_RETARGET_PT_chains")
    labels = [d for kind, d in draw_panel(chains, bpy.context) if kind == "label"]
    assert "Auto-map guessed:" in labels
    assert any("left and right" in text for text in labels)
    assert bpy.ops.robot_retarget.bake() == {'FINISHED'}
    report = json.loads(robot.animation_data.action["robot_retarget_report"])
    assert any(w.startswith("auto-map:") and "left and right" in w for w in report["warnings"])


def test_balance_panel_draws_the_stored_readout(full_scene, panels):
    assert bpy.ops.robot_retarget.check_balance() == {'FINISHED'}
    balance = next(p for p in panels if p.__name__ == "ROBOT_RETARGET_PT_balance")
    log = draw_panel(balance, bpy.context)
    assert ("operator", "robot_retarget.check_balance") in log
    labels = [d for kind, d in log if kind == "label"]
    assert any("ZMP outside the support" in text for text in labels)
