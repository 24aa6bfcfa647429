"""What a clip is: BVH reading, source motion (bone segments in the world), a robot as a source,
the bake CSV, numbers written as text for whole arrays, filtering over frames, and atomic
file writing.

May import: core.model.
"""
