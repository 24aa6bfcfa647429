"""UI panels of Robot Retarget.

Every module listed in MODULES exposes a `classes` tuple of bpy classes and may
define register()/unregister() for anything else it sets up; register() here
registers each module's classes, then calls its register(), in list order.
"""
import bpy

from . import sidebar  # noqa: E402

MODULES: list = [sidebar]


def register():
    for module in MODULES:
        for cls in getattr(module, "classes", ()):
            bpy.utils.register_class(cls)
        if hasattr(module, "register"):
            module.register()


def unregister():
    for module in reversed(MODULES):
        if hasattr(module, "unregister"):
            module.unregister()
        for cls in reversed(getattr(module, "classes", ())):
            bpy.utils.unregister_class(cls)
