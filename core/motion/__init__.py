"""What a clip is: BVH reading, source motion (bone segments in the world), a robot as a source,
the bake CSV, filtering over frames, and atomic file writing.

May import: core.model.
"""
