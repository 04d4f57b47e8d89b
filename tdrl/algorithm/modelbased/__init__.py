"""Model-based algorithms and wrappers: PSRL (posterior sampling on tabular MDPs) and ICM
(the intrinsic curiosity module wrapping any algorithm)."""

from tdrl.algorithm.modelbased.icm import ICM, IntrinsicCuriosityModule
from tdrl.algorithm.modelbased.psrl import PSRL, PSRLModel, PSRLPolicy, value_iteration

__all__ = ["ICM", "PSRL", "IntrinsicCuriosityModule", "PSRLModel", "PSRLPolicy", "value_iteration"]
