"""Self-collision: per-link capsule proxies fitted to the URDF's geometry (proxies), batched
capsule distances over frames (distance), the pairs worth checking (pairs: the allowed-collision
matrix), the separation term the chain and planted-leg solves carry (avoid), and the report's
figures (figures).

Above feet (it reads body geometry with core.feet.geometry) and below retarget, which builds
the avoidance and hands it to the solvers as a plain object (chains and feet never import it).
May import: core.model, core.motion, core.chains, core.feet.
"""
from .pairs import CollisionPairs, collision_pairs
from .proxies import CollisionModel, collision_model

__all__ = ["CollisionModel", "CollisionPairs", "collision_model", "collision_pairs"]
