"""What a robot is: URDF parsing, the kinematic tree and batched FK, transforms, meshes, rig layout,
and numpy's transcendental functions with the same bits wherever arrays sit (same_bits).

The bottom of core: imports nothing else from core.
"""
