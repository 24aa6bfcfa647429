"""File > Import > URDF Robot: a URDF robot as an armature that describes itself.

The bone layout comes from core.model.rig (one bone per body, local X = joint
axis, one pose channel per joint); this module only builds it in Blender:
the armature, bone constraints and locks, custom properties naming the URDF
joints, drivers for mimic joints, and the link meshes parented to bones.

Blender notes (checked with bpy 5.0.1 as a module, no window):
- Edit bones exist only in edit mode. bpy.ops.object.mode_set works headless
  once the armature is the view layer's active object (context.temp_override
  makes the active/selected objects explicit, so whatever else was selected
  does not enter multi-object edit mode with it).
- EditBone.matrix keeps the bone's current length, so each new bone gets its
  tail (its length) before its matrix; a zero-length bone would be deleted
  when leaving edit mode.
- An object parented to a bone (parent_type 'BONE') sits relative to the
  bone's TAIL. Mesh objects get matrix_parent_inverse = identity and a
  matrix_basis computed from the bone's rest matrix and length, so they sit
  exactly at their link frames at rest and follow the pose.
"""
from __future__ import annotations

import os
from pathlib import Path

import bpy
import numpy as np
from bpy.props import BoolProperty, StringProperty
from mathutils import Matrix

from ..core.model.kinematics import KinematicTree
from ..core.model.meshes import MeshError, load_mesh
from ..core.model.rig import RigLayout, rig_layout
from ..core.model.mesh_paths import resolve_mesh_path
from ..core.model.urdf import Geometry, parse_urdf
from .common import reports_errors

WARNINGS_SHOWN = 3          # names listed in the one-line warning report
_PRIMITIVE_SEGMENTS = 24


# -------------------------------------------------------------- mesh data ---

def _box(size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return corners * (np.asarray(size, float) / 2.0), faces


def _cylinder(radius: float, length: float, n: int = _PRIMITIVE_SEGMENTS):
    """Closed cylinder along Z, centred on the origin (URDF convention)."""
    ang = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(ang), radius * np.sin(ang)])
    verts = np.vstack([np.column_stack([ring, np.full(n, -length / 2)]),
                       np.column_stack([ring, np.full(n, length / 2)]),
                       [[0, 0, -length / 2], [0, 0, length / 2]]])
    i = np.arange(n)
    j = (i + 1) % n
    side = np.vstack([np.column_stack([i, j, j + n]), np.column_stack([i, j + n, i + n])])
    bottom = np.column_stack([np.full(n, 2 * n), j, i])
    top = np.column_stack([np.full(n, 2 * n + 1), i + n, j + n])
    return verts, np.vstack([side, bottom, top])


def _sphere(radius: float, n: int = _PRIMITIVE_SEGMENTS):
    rings = n // 2
    theta = np.linspace(0, np.pi, rings + 1)[1:-1]
    phi = np.linspace(0, 2 * np.pi, n, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    body = np.column_stack([(np.sin(t) * np.cos(p)).ravel(), (np.sin(t) * np.sin(p)).ravel(),
                            np.cos(t).ravel()])
    verts = np.vstack([body, [[0, 0, 1], [0, 0, -1]]]) * radius
    north, south = len(body), len(body) + 1
    faces = []
    j = (np.arange(n) + 1) % n
    i = np.arange(n)
    faces.append(np.column_stack([np.full(n, north), i, j]))
    for r in range(rings - 2):
        a, b = r * n, (r + 1) * n
        faces.append(np.column_stack([a + i, b + i, b + j]))
        faces.append(np.column_stack([a + i, b + j, a + j]))
    last = (rings - 2) * n
    faces.append(np.column_stack([np.full(n, south), last + j, last + i]))
    return verts, np.vstack(faces)


def _new_mesh(name: str, verts: np.ndarray, faces: np.ndarray) -> bpy.types.Mesh:
    """Mesh datablock from triangles, in bulk (foreach_set, no Python loops)."""
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    a, b, c = faces.T
    keep = (a != b) & (b != c) & (a != c)  # degenerate triangles make invalid polygons
    faces = faces[keep]
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(verts))
    mesh.vertices.foreach_set("co", np.asarray(verts, dtype=np.float32).ravel())
    mesh.loops.add(faces.size)
    mesh.loops.foreach_set("vertex_index", faces.astype(np.int32).ravel())
    mesh.polygons.add(len(faces))
    mesh.polygons.foreach_set("loop_start", np.arange(0, faces.size, 3, dtype=np.int32))
    mesh.update()
    mesh.validate(clean_customdata=False)  # drops duplicate faces some exporters write
    return mesh


def _geometry_mesh(geo: Geometry, link: str, urdf_path: Path, package_roots,
                   cache: dict, warnings: list[str]) -> bpy.types.Mesh | None:
    """Blender mesh for one visual (shared between identical ones), or None + warning."""
    if geo.kind == "mesh":
        path = resolve_mesh_path(geo.filename, urdf_path, package_roots)
        if path is None:
            warnings.append(f"mesh not found: {geo.filename} (link '{link}')")
            return None
        scale = np.asarray(geo.scale, dtype=float)
        key = ("mesh", str(path), tuple(scale))
        if key not in cache:
            try:
                verts, faces = load_mesh(path)
            except (MeshError, OSError, ValueError) as exc:
                warnings.append(f"mesh unreadable: {geo.filename} (link '{link}'): {exc}")
                cache[key] = None
                return None
            verts = verts * scale
            if np.prod(scale) < 0:  # a mirroring scale turns faces inside out
                faces = faces[:, ::-1]
            cache[key] = _new_mesh(path.stem, verts, faces)
        return cache[key]
    if geo.kind == "box":
        key, build = ("box", tuple(geo.size)), lambda: _box(geo.size)
    elif geo.kind == "cylinder":
        key, build = ("cylinder", geo.radius, geo.length), lambda: _cylinder(geo.radius, geo.length)
    elif geo.kind == "sphere":
        key, build = ("sphere", geo.radius), lambda: _sphere(geo.radius)
    else:
        warnings.append(f"link '{link}': {geo.kind} geometry is not supported")
        return None
    if key not in cache:
        cache[key] = _new_mesh(geo.kind, *build())
    return cache[key]


# -------------------------------------------------------------- the rig ---

def _set_mode(obj: bpy.types.Object, mode: str) -> None:
    """mode_set on exactly `obj` (works in background bpy, no window needed)."""
    with bpy.context.temp_override(active_object=obj, object=obj, selected_objects=[obj],
                                   selected_editable_objects=[obj]):
        bpy.ops.object.mode_set(mode=mode)
    if obj.mode != mode:
        raise RuntimeError(f"could not switch {obj.name!r} to {mode} mode")


def _leave_edit_modes(context) -> None:
    obj = context.view_layer.objects.active
    if obj is not None and obj.mode != 'OBJECT':
        _set_mode(obj, 'OBJECT')


def _build_bones(obj: bpy.types.Object, layout: RigLayout) -> None:
    arm = obj.data
    _set_mode(obj, 'EDIT')
    try:
        for bone in layout.bones:
            eb = arm.edit_bones.new(bone.name)
            if eb.name != bone.name:
                raise RuntimeError(f"Blender renamed bone {bone.name!r} to {eb.name!r}")
            eb.head = (0.0, 0.0, 0.0)
            eb.tail = (0.0, bone.length, 0.0)  # matrix assignment keeps this length
            eb.matrix = Matrix(bone.matrix.tolist())
            eb.use_connect = False
            eb.use_deform = False  # meshes ride on bones; nothing is skinned
            if bone.parent is not None:
                eb.parent = arm.edit_bones[bone.parent]
    finally:
        _set_mode(obj, 'OBJECT')


def _set_bone_props(pb: bpy.types.PoseBone, bone) -> None:
    pb["urdf_link"] = bone.link_name
    pb["urdf_joint_type"] = bone.kind
    if bone.joint is not None:
        pb["urdf_joint"] = bone.joint
        pb["urdf_axis"] = [float(v) for v in bone.axis]
    for key in ("lower", "upper", "velocity", "effort"):
        value = getattr(bone, key)
        if value is not None:
            pb[f"urdf_{key}"] = float(value)
    merged = [name for name, _ in bone.merged_links if name != bone.link_name]
    if merged:
        pb["urdf_merged_links"] = merged
    if bone.mimic is not None:
        pb["urdf_mimic_joint"], pb["urdf_mimic_multiplier"], pb["urdf_mimic_offset"] = bone.mimic


def _setup_pose(obj: bpy.types.Object, layout: RigLayout) -> None:
    """Rotation modes, locks (only the joint channel is free), limits, custom props."""
    by_joint = {b.joint: b for b in layout.bones if b.joint is not None}
    for bone in layout.bones:
        pb = obj.pose.bones[bone.name]
        pb.lock_scale = (True, True, True)
        if bone.kind == "root":
            pb.rotation_mode = 'QUATERNION'
            pb.lock_location = (False, False, False)
            pb.lock_rotation = (False, False, False)
            pb.lock_rotation_w = False
        else:
            pb.rotation_mode = 'XYZ'
            slide = bone.kind == "prismatic"
            pb.lock_rotation = (slide, True, True)
            pb.lock_location = (False, True, True) if slide else (True, True, True)
            if bone.lower is not None and bone.upper is not None:
                if slide:
                    con = pb.constraints.new('LIMIT_LOCATION')
                    con.use_min_x = con.use_max_x = True
                else:
                    con = pb.constraints.new('LIMIT_ROTATION')
                    con.use_limit_x = True
                con.min_x, con.max_x = bone.lower, bone.upper
                con.owner_space = 'LOCAL'
                con.name = f"URDF limit {bone.joint}"
        _set_bone_props(pb, bone)
        if bone.mimic is not None:
            _add_mimic_driver(obj, pb, bone, by_joint.get(bone.mimic[0]))


def _add_mimic_driver(obj, pb, bone, leader) -> None:
    """value = multiplier * leader value + offset, as a simple (Python-free) expression."""
    if leader is None or leader.channel is None:
        return
    prop, index = bone.channel
    fcurve = pb.driver_add(prop, index)
    for mod in list(fcurve.modifiers):
        fcurve.modifiers.remove(mod)
    driver = fcurve.driver
    driver.type = 'SCRIPTED'
    var = driver.variables.new()
    var.name = "q"
    var.type = 'SINGLE_PROP'
    var.targets[0].id_type = 'OBJECT'
    var.targets[0].id = obj
    leader_prop, leader_index = leader.channel
    name = bpy.utils.escape_identifier(leader.name)
    var.targets[0].data_path = f'pose.bones["{name}"].{leader_prop}[{leader_index}]'
    _, mult, offset = bone.mimic
    driver.expression = f"q * {mult!r} + {offset!r}"


def _add_meshes(context, obj, layout, robot, urdf_path, package_roots, collection,
                warnings) -> int:
    """Mesh objects for every visual of every link, parented to their bones."""
    jobs = []
    for bone in layout.bones:
        for link, offset in bone.merged_links:
            for k, geo in enumerate(robot.links[link].visuals):
                jobs.append((bone, link, offset, k, geo))
    cache: dict = {}
    count = 0
    wm = context.window_manager
    wm.progress_begin(0, max(1, len(jobs)))
    try:
        for step, (bone, link, offset, k, geo) in enumerate(jobs):
            wm.progress_update(step)
            mesh = _geometry_mesh(geo, link, urdf_path, package_roots, cache, warnings)
            if mesh is None:
                continue
            child = bpy.data.objects.new(link if k == 0 else f"{link}.visual{k}", mesh)
            collection.objects.link(child)
            child.parent = obj
            child.parent_type = 'BONE'
            child.parent_bone = bone.name
            child.matrix_parent_inverse = Matrix.Identity(4)
            # Bone parenting is relative to the bone's tail in its rest (posed) frame.
            rest = obj.data.bones[bone.name]
            tail = rest.matrix_local @ Matrix.Translation((0.0, rest.length, 0.0))
            link_rest = rest.matrix_local @ Matrix(_b4(bone.axis_change).T.tolist())
            target = link_rest @ Matrix(offset.tolist()) @ Matrix(geo.origin.tolist())
            child.matrix_basis = tail.inverted() @ target
            child["urdf_link"] = link
            count += 1
    finally:
        wm.progress_end()
    return count


def _b4(rot: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = rot
    return out


def import_urdf(context, filepath, package_roots=(), import_meshes=True, name=None):
    """Build the robot rig for a URDF file; returns (armature object, warnings).

    Raises URDFError (nothing created) if the URDF cannot be used. Missing or
    unreadable meshes are warnings, never failures.
    """
    urdf_path = Path(os.path.abspath(bpy.path.abspath(str(filepath))))
    robot = parse_urdf(urdf_path)
    tree = KinematicTree(robot)
    layout = rig_layout(tree)
    roots = [str(Path(bpy.path.abspath(str(r)))) for r in package_roots if str(r).strip()]
    warnings: list[str] = []
    for joint in robot.joints:
        if joint.type in ("floating", "planar"):
            warnings.append(f"joint '{joint.name}': {joint.type} joints are not supported, "
                            "treated as fixed")

    _leave_edit_modes(context)
    before = _snapshot()
    try:
        obj = _build(context, robot, tree, layout, urdf_path, roots, import_meshes,
                     name or robot.name, warnings)
    except BaseException:
        _remove_new(before)  # never leave half a robot behind
        raise
    try:  # motion programs drive the robot by parts: one bone collection per mapped limb
        from .program import make_part_collections

        make_part_collections(obj)
    except (ValueError, KeyError) as exc:  # a mechanism auto-map cannot read has no parts, only a note
        warnings.append(f"no part collections for motion programs: {exc}")
    return obj, warnings


_DATA = ("objects", "meshes", "armatures", "collections")


def _snapshot() -> dict:
    return {kind: {id_.as_pointer() for id_ in getattr(bpy.data, kind)} for kind in _DATA}


def _remove_new(before: dict) -> None:
    for kind in _DATA:
        coll = getattr(bpy.data, kind)
        for id_ in [i for i in coll if i.as_pointer() not in before[kind]]:
            coll.remove(id_)


def _build(context, robot, tree, layout, urdf_path, roots, import_meshes, title, warnings):
    collection = bpy.data.collections.new(title)
    context.scene.collection.children.link(collection)
    arm = bpy.data.armatures.new(title)
    arm.display_type = 'OCTAHEDRAL'
    obj = bpy.data.objects.new(title, arm)
    collection.objects.link(obj)
    obj.show_in_front = True
    view_layer = context.view_layer
    for other in view_layer.objects:
        if other.select_get(view_layer=view_layer):
            other.select_set(False, view_layer=view_layer)
    view_layer.objects.active = obj
    obj.select_set(True, view_layer=view_layer)

    _build_bones(obj, layout)
    _setup_pose(obj, layout)
    obj["urdf_robot"] = robot.name
    obj["urdf_path"] = str(urdf_path)
    obj["urdf_joint_order"] = list(tree.joint_names)

    if import_meshes:
        _add_meshes(context, obj, layout, robot, urdf_path, roots, collection, warnings)
    view_layer.update()
    return obj


def warning_summary(warnings: list[str]) -> str:
    """One line for all warnings: counts and the first few mesh names / problems."""
    meshes = [w for w in warnings if w.startswith("mesh ")]
    others = [w for w in warnings if not w.startswith("mesh ")]
    parts = []
    if meshes:
        names = [Path(w.split(": ", 1)[1].split(" (link ")[0]).name for w in meshes]
        shown = ", ".join(names[:WARNINGS_SHOWN]) + (", ..." if len(names) > WARNINGS_SHOWN else "")
        noun = "mesh" if len(meshes) == 1 else "meshes"
        parts.append(f"{len(meshes)} {noun} could not be loaded ({shown}); "
                     "add their folder to Package Folders to see them")
    if others:
        shown = "; ".join(others[:WARNINGS_SHOWN])
        more = f" (and {len(others) - WARNINGS_SHOWN} more)" if len(others) > WARNINGS_SHOWN else ""
        parts.append(shown + more)
    return " | ".join(parts)


# -------------------------------------------------------------- operator ---

class ROBOT_RETARGET_OT_import_urdf(bpy.types.Operator):
    """Import a URDF robot as an armature: one bone per joint, meshes on bones"""

    bl_idname = "robot_retarget.import_urdf"
    bl_label = "Import URDF as Robot Rig"
    bl_options = {'REGISTER', 'UNDO'}

    filepath: StringProperty(name="File Path", subtype='FILE_PATH',
                             description="URDF file of the robot")
    filter_glob: StringProperty(default="*.urdf;*.xml", options={'HIDDEN'})
    package_roots: StringProperty(
        name="Package Folders",
        description="Folders (';'-separated) where package:// mesh paths are looked up, "
                    "in addition to the folders around the URDF",
        default="",
    )
    import_meshes: BoolProperty(name="Import Meshes", default=True,
                                description="Load link meshes and attach them to the bones")
    name: StringProperty(name="Name", default="",
                         description="Name of the armature object (default: the robot's name)")

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    @reports_errors
    def execute(self, context):
        if not self.filepath:
            self.report({'ERROR'}, "No URDF file given")
            return {'CANCELLED'}
        roots = [r.strip() for r in self.package_roots.split(";") if r.strip()]
        obj, warnings = import_urdf(context, self.filepath, roots, self.import_meshes,
                                    self.name.strip() or None)
        if warnings:
            for line in warnings:  # the full list, for the system console
                print(f"Robot Retarget: import {Path(self.filepath).name}: {line}")
            self.report({'WARNING'}, warning_summary(warnings))
        bones = len(obj.data.bones)
        self.report({'INFO'}, f"Imported robot {obj.get('urdf_robot')!r} as {obj.name!r} "
                              f"({bones} bones)")
        return {'FINISHED'}


def _menu_import(self, context):
    self.layout.operator(ROBOT_RETARGET_OT_import_urdf.bl_idname, text="URDF Robot (.urdf)")


classes = (ROBOT_RETARGET_OT_import_urdf,)


def register():
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)


def unregister():
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
