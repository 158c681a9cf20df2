"""Independent URDF kinematics through Pinocchio (test oracle).

``PinocchioURDF(text)`` builds ``pin.buildModelFromXML``; poses are returned in the
``base_link`` frame, joint values are given by URDF joint name (others stay at 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin


def reduced(model: pin.Model, locked: dict[str, float] | None) -> pin.Model:
    """``model`` with the ``locked`` joints held at their values (``pin.buildReducedModel``; continuous joints
    as cos/sin); ``model`` itself when nothing is locked."""
    if not locked:
        return model
    q_ref = pin.neutral(model)
    for name, v in locked.items():
        jm = model.joints[model.getJointId(name)]
        if jm.nq == 2:
            q_ref[jm.idx_q : jm.idx_q + 2] = (np.cos(v), np.sin(v))
        else:
            q_ref[jm.idx_q] = v
    return pin.buildReducedModel(model, [model.getJointId(k) for k in locked], q_ref)


class PinocchioURDF:
    def __init__(self, urdf: str | Path, locked: dict[str, float] | None = None) -> None:
        """``locked``: joints locked at a value, removed with ``pin.buildReducedModel`` (the oracle of a chain
        whose off-chain branches are lumped)."""
        text = Path(urdf).read_text() if isinstance(urdf, Path) or not str(urdf).lstrip().startswith("<") else urdf
        self.model = reduced(pin.buildModelFromXML(text), locked)
        self.data = self.model.createData()

    def q_vector(self, names: list[str], q: np.ndarray) -> np.ndarray:
        """Pinocchio configuration with the named URDF joints at ``q`` (continuous joints as cos/sin)."""
        out = pin.neutral(self.model)
        for name, v in zip(names, q, strict=True):
            jid = self.model.getJointId(name)
            jm = self.model.joints[jid]
            if jm.nq == 2:
                out[jm.idx_q : jm.idx_q + 2] = (np.cos(v), np.sin(v))
            else:
                out[jm.idx_q] = v
        return out

    def v_index(self, name: str) -> int:
        return self.model.joints[self.model.getJointId(name)].idx_v

    def link_poses(self, names: list[str], q: np.ndarray, links: list[str], base_link: str) -> dict[str, np.ndarray]:
        """4x4 poses of ``links`` in ``base_link`` for one configuration."""
        pin.framesForwardKinematics(self.model, self.data, self.q_vector(names, q))
        base = self.data.oMf[self.model.getFrameId(base_link, pin.BODY)].inverse()
        return {k: (base * self.data.oMf[self.model.getFrameId(k, pin.BODY)]).homogeneous for k in links}

    def jacobian(self, names: list[str], q: np.ndarray, link: str) -> np.ndarray:
        """(6, n) [v; w] of the ``link`` origin, world-aligned (URDF root frame), columns in ``names`` order."""
        qp = self.q_vector(names, q)
        pin.computeJointJacobians(self.model, self.data, qp)
        pin.framesForwardKinematics(self.model, self.data, qp)
        j = pin.getFrameJacobian(self.model, self.data, self.model.getFrameId(link, pin.BODY), pin.LOCAL_WORLD_ALIGNED)
        return j[:, [self.v_index(n) for n in names]]
