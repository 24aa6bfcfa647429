"""Balance: whole-body centre of mass, the multibody zero moment point (ZMP), the support
polygon and the margin between them, for any joint trajectory and root pose.

May import core.model, core.motion, core.chains, core.feet, core.collision (a gait's
self-collision figures, when its preset avoids) and core.retarget (which finds a robot's feet);
nothing imports it but core.library, the Blender side and the command line.
"""
from .inertia import BalanceError, MassModel, centre_of_mass, multibody_zmp
from .preview import PreviewSettings, follow_zmp
from .support import balance_readout, foot_links, support_margins

__all__ = ["BalanceError", "MassModel", "PreviewSettings", "balance_readout", "centre_of_mass", "follow_zmp",
           "foot_links", "multibody_zmp", "support_margins"]
