"""Seed robots as MDH tables: Stäubli RX-90, Stanford arm, SCARA, planar 2R.

* RX-90: geometry of 002 Table 3.1 with D3 = RL4 = 0.45 m (real RX-90 values; the
  seed gives none).  The seed has no inertial data (001 Table 7.4 is absent), so
  plausible link masses/inertias, limits and friction are chosen here.
* Stanford arm: seed 003 (Lin) Figure 2.  Lin's "normal driving-axis" frames are
  Khalil's MDH frames (003 eqs. 3-4: beta = alpha, b = d, d = r), so the table,
  masses, COMs c_i in E_i = R_j and diagonal inertias about the COM are used as
  printed.  One exception: link 1's (I11, I22) = (0.276, 0.255) violate the
  triangle inequality with I33 = 0.71 (0.276 + 0.255 < 0.71, physically
  impossible); they are raised to (0.366, 0.345).  With the fixed vertical
  joint 1 these two entries never enter the dynamics (only ZZ1 does), so all of
  Lin's results are unchanged.  h_7 = 0.2554 m is read as the tool length along z6.
* SCARA: 002 Table 3.2 (theta_4 = 0, errata 40) with D2 = 0.425 m, D3 = 0.375 m.
* Planar 2R in a vertical plane (R0 = Rot(x, pi/2) in base_link, gravity -z).

``python -m robot_dynamics.model.seed_robots [DIR]`` regenerates ``urdf/*.urdf`` (kinematics, inertials,
limits, friction, plus visual/collision shapes and a ``world`` link for RViz).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .mdh import PRISMATIC, REVOLUTE
from .robot_model import MDHJoint, RobotModel
from .urdf_conversion import inertia_about_origin, make_transform

DEG = math.pi / 180.0
PI2 = math.pi / 2


def link_inertial(mass: float, com: Any, inertia_com: Any) -> np.ndarray:
    """Standard parameters [XX..ZZ MX MY MZ M] (001 eq. 7.3) of a body with principal
    moments ``inertia_com`` (diagonal, about its COM, axes of R_j) and COM ``com`` in R_j."""
    return inertia_about_origin(mass, np.asarray(com, float), np.eye(3), np.diag(np.asarray(inertia_com, float)))


def _model(
    name: str,
    table: list[tuple[int, float, float, float, float]],
    limits: list[tuple[float, float, float, float, float]],
    bodies: list[tuple[float, tuple[float, float, float], tuple[float, float, float]]],
    tool: np.ndarray,
    base_transform: np.ndarray | None = None,
    Ia: Any = None,
    Fc: Any = None,
    Fv: Any = None,
) -> RobotModel:
    """MDH rows (sigma, alpha, d, theta, r), limits (lower, upper, velocity, effort, acceleration),
    bodies (mass, COM in R_j, principal inertias about COM), tool pose in R_n."""
    joints = []
    frames: dict[str, tuple[int, np.ndarray]] = {"base_link": (0, np.eye(4))}
    bt = np.eye(4) if base_transform is None else base_transform
    frames["base_link"] = (0, np.linalg.inv(bt))
    for j, ((sigma, alpha, d, theta, r), (lo, up, vel, eff, acc)) in enumerate(zip(table, limits, strict=True), start=1):
        joints.append(
            MDHJoint(
                name=f"joint{j}", antecedent=j - 1, sigma=sigma, alpha=alpha, d=d, theta=theta, r=r,
                link=f"link{j}", lower=lo, upper=up, velocity=vel, effort=eff, acceleration=acc,
            )
        )
        frames[f"link{j}"] = (j, np.eye(4))
    n = len(joints)
    frames["tool"] = (n, tool)
    return RobotModel(
        joints=joints, base_link="base_link", tip_link="tool", name=name, base_transform=bt, frames=frames,
        inertial=np.array([link_inertial(*b) for b in bodies]), Ia=Ia, Fc=Fc, Fv=Fv,
    )


def rx90(D3: float = 0.45, RL4: float = 0.45) -> RobotModel:
    """Stäubli RX-90, 002 Table 3.1 (base_link on the floor, 0.42 m below O1; flange 0.085 m along z6)."""
    table = [
        (REVOLUTE, 0.0, 0.0, 0.0, 0.0),
        (REVOLUTE, PI2, 0.0, 0.0, 0.0),
        (REVOLUTE, 0.0, D3, 0.0, 0.0),
        (REVOLUTE, -PI2, 0.0, 0.0, RL4),
        (REVOLUTE, PI2, 0.0, 0.0, 0.0),
        (REVOLUTE, -PI2, 0.0, 0.0, 0.0),
    ]
    # datasheet ranges (deg), speeds (deg/s); efforts and accelerations plausible
    rng = [(-160, 160), (-137.5, 137.5), (-142.5, 142.5), (-270, 270), (-105, 120), (-270, 270)]
    vel = [236, 200, 286, 401, 320, 580]
    eff = [300.0, 300.0, 150.0, 40.0, 40.0, 20.0]
    acc = [10.0, 10.0, 12.0, 20.0, 20.0, 30.0]
    limits = [(a * DEG, b * DEG, v * DEG, e, ac) for (a, b), v, e, ac in zip(rng, vel, eff, acc, strict=True)]
    bodies = [
        (20.0, (0.0, 0.0, -0.1), (0.30, 0.30, 0.25)),
        (15.0, (0.2, 0.0, 0.05), (0.05, 0.30, 0.30)),
        (8.0, (0.0, 0.1, 0.0), (0.15, 0.04, 0.15)),
        (4.0, (0.0, 0.0, -0.15), (0.05, 0.05, 0.01)),
        (1.5, (0.0, 0.02, 0.0), (0.004, 0.003, 0.004)),
        (0.5, (0.0, 0.0, 0.06), (0.001, 0.001, 0.0005)),
    ]
    return _model(
        "rx90", table, limits, bodies, make_transform(np.eye(3), (0.0, 0.0, 0.085)),
        base_transform=make_transform(np.eye(3), (0.0, 0.0, 0.42)),
        Ia=[1.0, 1.0, 0.5, 0.1, 0.1, 0.05], Fc=[3.0, 3.0, 2.0, 0.5, 0.5, 0.2], Fv=[2.0, 2.0, 1.5, 0.3, 0.3, 0.1],
    )


def stanford_arm() -> RobotModel:
    """Stanford arm, seed 003 Figure 2 (Lin): theta2 = q2 + 90 deg, r3 = q3 + 0.6447, theta5 = q5 - 90 deg."""
    table = [
        (REVOLUTE, 0.0, 0.0, 0.0, 0.0),
        (REVOLUTE, PI2, 0.0, PI2, 0.1529),
        (PRISMATIC, PI2, 0.0, 0.0, 0.6447),
        (REVOLUTE, 0.0, 0.0, 0.0, 0.0),
        (REVOLUTE, PI2, 0.0, -PI2, 0.0),
        (REVOLUTE, PI2, 0.0, 0.0, 0.0),
    ]
    limits = [
        (-170 * DEG, 170 * DEG, 1.5, 100.0, 5.0),
        (-100 * DEG, 100 * DEG, 1.5, 100.0, 5.0),
        (-0.3, 0.3, 0.5, 200.0, 2.0),
        (-170 * DEG, 170 * DEG, 3.0, 20.0, 10.0),
        (-100 * DEG, 100 * DEG, 3.0, 20.0, 10.0),
        (-170 * DEG, 170 * DEG, 3.0, 10.0, 10.0),
    ]
    bodies = [
        (9.29, (0.0, 0.1105, 0.0175), (0.366, 0.345, 0.71)),  # (I11, I22) raised, see module docstring
        (5.01, (0.0, 0.0, -0.1054), (0.108, 0.018, 0.1)),
        (4.25, (0.0, 0.0, -0.6447), (2.51, 2.51, 0.006)),
        (1.08, (0.0092, 0.0054, 0.0), (0.002, 0.001, 0.001)),
        (0.63, (0.0, -0.0566, 0.0), (0.003, 0.003, 0.0004)),
        (0.51, (0.0, 0.0, 0.1554), (0.013, 0.013, 0.0003)),
    ]
    return _model("stanford_arm", table, limits, bodies, make_transform(np.eye(3), (0.0, 0.0, 0.2554)))


def scara(D2: float = 0.425, D3: float = 0.375) -> RobotModel:
    """4-dof SCARA, 002 Table 3.2 (joint 4 prismatic along z4 = z3)."""
    table = [
        (REVOLUTE, 0.0, 0.0, 0.0, 0.0),
        (REVOLUTE, 0.0, D2, 0.0, 0.0),
        (REVOLUTE, 0.0, D3, 0.0, 0.0),
        (PRISMATIC, 0.0, 0.0, 0.0, 0.0),
    ]
    limits = [
        (-105 * DEG, 105 * DEG, 386 * DEG, 150.0, 20.0),
        (-150 * DEG, 150 * DEG, 720 * DEG, 60.0, 40.0),
        (-2 * math.pi, 2 * math.pi, 1200 * DEG, 10.0, 80.0),
        (-0.21, 0.0, 1.1, 400.0, 10.0),
    ]
    bodies = [
        (10.0, (D2 / 2, 0.0, 0.0), (0.02, 0.16, 0.16)),
        (6.0, (D3 / 2, 0.0, 0.0), (0.01, 0.07, 0.07)),
        (1.0, (0.0, 0.0, 0.0), (0.005, 0.005, 0.001)),
        (1.5, (0.0, 0.0, -0.15), (0.012, 0.012, 0.0005)),
    ]
    return _model(
        "scara", table, limits, bodies, make_transform(np.eye(3), (0.0, 0.0, -0.25)),
        base_transform=make_transform(np.eye(3), (0.0, 0.0, 0.4)),
        Fc=[2.0, 1.5, 0.5, 5.0], Fv=[1.0, 0.8, 0.2, 10.0],
    )


def planar_2r(L1: float = 0.5, L2: float = 0.4) -> RobotModel:
    """Planar 2R arm moving in the vertical x-z plane of base_link (z0 = -y_base)."""
    table = [(REVOLUTE, 0.0, 0.0, 0.0, 0.0), (REVOLUTE, 0.0, L1, 0.0, 0.0)]
    limits = [(-170 * DEG, 170 * DEG, 3.0, 20.0, 5.0), (-170 * DEG, 170 * DEG, 3.0, 10.0, 5.0)]  # a_max: torque-feasible
    bodies = [
        (2.0, (L1 / 2, 0.0, 0.0), (0.001, 2.0 * L1**2 / 12, 2.0 * L1**2 / 12)),
        (1.5, (L2 / 2, 0.0, 0.0), (0.0008, 1.5 * L2**2 / 12, 1.5 * L2**2 / 12)),
    ]
    rot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # Rot(x, pi/2)
    return _model(
        "planar_2r", table, limits, bodies, make_transform(np.eye(3), (L2, 0.0, 0.0)),
        base_transform=make_transform(rot, (0.0, 0.0, 0.0)),
    )


SEED_ROBOTS = {"rx90": rx90, "stanford": stanford_arm, "scara": scara, "planar2r": planar_2r}


def urdf_text(key: str) -> str:
    """URDF of seed robot ``key`` as written to ``urdf/<key>.urdf`` (with visual/collision geometry and a
    ``world`` link for RViz, see :mod:`robot_dynamics.model.urdf_export`; ``RobotModel.from_urdf`` ignores both)."""
    from .urdf_export import model_to_urdf

    return model_to_urdf(SEED_ROBOTS[key](), geometry=True, world_link=True)


def write_urdfs(directory: str | Path) -> list[Path]:
    """(Re)generate ``<directory>/<key>.urdf`` for every seed robot."""
    out = []
    for key in SEED_ROBOTS:
        path = Path(directory) / f"{key}.urdf"
        path.write_text(urdf_text(key))
        out.append(path)
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "urdf"
    for p in write_urdfs(target):
        print(p)
