"""Limb chains, the method's engine: mapping presets (which bones form which chain), reference
points along normalised chains, and the batched Levenberg-Marquardt chain solver.

Below feet and retarget because planting feet solves leg chains with the same solver.
May import: core.model, core.motion.
"""
