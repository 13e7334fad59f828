"""The kernel-enforced boundary around the commands heron runs for the model (docs/permissions.md, "Sandbox")."""

from heron.coding.sandbox.confine import Confinement, Sandbox
from heron.coding.sandbox.policy import SANDBOX_MODES, SandboxMode, SandboxPolicy, sandbox_policy

__all__ = ["SANDBOX_MODES", "Confinement", "Sandbox", "SandboxMode", "SandboxPolicy", "sandbox_policy"]
