"""Registering lists of modules: each exposes `classes` and may add register()/unregister()."""
import bpy


def register_modules(modules) -> None:
    for module in modules:
        for cls in getattr(module, "classes", ()):
            bpy.utils.register_class(cls)
        if hasattr(module, "register"):
            module.register()


def unregister_modules(modules) -> None:
    for module in reversed(modules):
        if hasattr(module, "unregister"):
            module.unregister()
        for cls in reversed(getattr(module, "classes", ())):
            bpy.utils.unregister_class(cls)
