"""The control_msgs subset built into the venv (issue 18, groundwork of "MoveIt-ready").

control_msgs is not on PyPI, so ``make env`` builds FollowJointTrajectory, JointTolerance,
JointComponentTolerance (a dependency of FollowJointTrajectory) and JointTrajectoryControllerState from
interfaces/control_msgs/, whose definitions are upstream's, field for field. A real MoveIt (or a
ros2_control joint_trajectory_controller) talks to our nodes only if the types are the same, field for field:
the RIHS01 type hashes of REP 2016 say so. These tests pin (a) the definition files to upstream's commit,
(b) the fields and constants of the built types, (c) their type hashes, and (d) an action round trip over DDS.

On a ROS install the distribution's control_msgs is imported instead of ours (interfaces/control_msgs has a
COLCON_IGNORE); then (b)-(d) check that the distribution's types are the ones we expect.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFS = REPO / "interfaces" / "control_msgs"

# (a) upstream: https://github.com/ros-controls/control_msgs, branch master, tag 6.8.0 (2026-02-02). Our files
# declare the same fields and constants in the same order (the comments are ours): the sha256 below is that of
# upstream's definition lines at UPSTREAM_COMMIT, comments and blank lines removed (what the wire type is made of).
# These definitions last changed upstream in 6.3.0 (FollowJointTrajectory.action: int32 index/multi_dof_index
# in the feedback), 5.3.0 (JointTrajectoryControllerState.msg: speed_scaling_factor) and 3.0.0
# (JointTolerance.msg, JointComponentTolerance.msg); they are the same in every release from 6.3.0 to 6.8.0.
UPSTREAM_COMMIT = "13dacdd8748264b6cd7cbbc9893c18c90e24be00"
UPSTREAM_DEFINITIONS = {
    "action/FollowJointTrajectory.action":
        "299b12f452eac2c35a1c4a1a43d18d999c1bde2ec74c33269d1890ab0cc58c9f",
    "msg/JointComponentTolerance.msg":
        "aced51e1362398d8755a7c9bfa75c86725b2a95decbf5d481e56a5cc8c712502",
    "msg/JointTolerance.msg":
        "5b15c727fd04824f8f927e4457feb3830cf588bf7106d008c7be10e3885daec5",
    "msg/JointTrajectoryControllerState.msg":
        "36ff10ce33ecfce87c2d79037e6fb12af6d56c9806499ddad3b06a19659e5944",
    "msg/SpeedScalingFactor.msg":  # added upstream in 5.3.0 with speed_scaling_factor (JTC's ~/speed_scaling_input)
        "a5148692464003ad1ee55fe04a3d77ec8225d5c878fc1eb9cc7dba70e1c81287",
}


def _definition_lines(text: str) -> str:
    """The lines that make a type: comments and blank lines removed, trailing blanks stripped."""
    lines = [line.split("#")[0].rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line.strip()) + "\n"


# (c) RIHS01 type hashes (REP 2016) of the types, as rosidl_generator_type_description of Kilted computes them
# when `make env` builds interfaces/control_msgs: read from the type descriptions it installs
# (<prefix>/share/control_msgs/{msg,action}/<Type>.json, key "type_hashes") and checked below against the hash
# that rmw_fastrtps_cpp announces on the DDS graph for live endpoints. A type hash is the SHA-256 of the type
# description: the field names, field types and nested types (recursively), not the comments, constants or
# package version. So identical definitions + the same Kilted std_msgs/trajectory_msgs/geometry_msgs/
# builtin_interfaces/action_msgs/unique_identifier_msgs/service_msgs give identical hashes to those of a
# Kilted binary build of upstream control_msgs 6.3.0 .. 6.10.0. Evidence found in stored public material: a
# `ros2 topic info --verbose` of a running ros2_control joint_trajectory_controller (a Jazzy install, with
# MoveIt) shows "control_msgs/msg/JointTrajectoryControllerState" with exactly the hash below (its definition
# is the same in Jazzy's control_msgs 5.3+), and trajectory_msgs/JointTrajectory with the hash that our Kilted
# wheels give. No published FollowJointTrajectory hash was found. NB Jazzy's FollowJointTrajectory feedback has
# no index/multi_dof_index, so its Feedback/FeedbackMessage (and action) hashes differ from Kilted's.
TYPE_HASHES = {
    "control_msgs/msg/JointTolerance":
        "RIHS01_c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648",
    "control_msgs/msg/JointComponentTolerance":
        "RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4",
    "control_msgs/msg/JointTrajectoryControllerState":
        "RIHS01_51d8dd89cc624cbe9daaeeb4d80d6de9b86168ffdc3be41fefc0953e3c26e480",
    "control_msgs/msg/SpeedScalingFactor":
        "RIHS01_0c240f349f2b74e33e8741f83e0f196ddeb6585923663876ed3c1f51f0566037",
    "control_msgs/action/FollowJointTrajectory":
        "RIHS01_ff29901b2693f5deb847e96084a1c2cdb26e70b7c847be21859b70a55fb29cf0",
    "control_msgs/action/FollowJointTrajectory_Goal":
        "RIHS01_8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205",
    "control_msgs/action/FollowJointTrajectory_Result":
        "RIHS01_8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220",
    "control_msgs/action/FollowJointTrajectory_Feedback":
        "RIHS01_0bb018d181bdc6384dd75365480967bd1d6eaee4ef3dd597c64cd0b8bdc10867",
    "control_msgs/action/FollowJointTrajectory_FeedbackMessage":
        "RIHS01_95618cc73912d99b9acaa17d2da5e832cb0bfdeede7534fa8ec600feca2a6c4b",
    "control_msgs/action/FollowJointTrajectory_SendGoal":
        "RIHS01_b13789dddc325a7a962825c45e28c77d37237ec129dd0c34dc5994562938c57f",
    "control_msgs/action/FollowJointTrajectory_SendGoal_Request":
        "RIHS01_179c93691f1f6d1d115881ff88c3917b7cc6eac2ba4bf56766cc7c4389e19ef1",
    "control_msgs/action/FollowJointTrajectory_SendGoal_Response":
        "RIHS01_e6a48ba740ae254500129a877f0b071be8663a115da1a539b74599cc97921fbf",
    "control_msgs/action/FollowJointTrajectory_SendGoal_Event":
        "RIHS01_906dd566308db02673c73c654f69bdd84738589629c1bc2841ddb49059ed1c6f",
    "control_msgs/action/FollowJointTrajectory_GetResult":
        "RIHS01_e3ceb38e3e1867c8dc0f46014df26e90eb93422f27e9e97f936e07f94be4bc8b",
    "control_msgs/action/FollowJointTrajectory_GetResult_Request":
        "RIHS01_ecf7ea8463d3beec7084bca75216d0b01b87b6e1e4e09679bb26093041efcbe9",
    "control_msgs/action/FollowJointTrajectory_GetResult_Response":
        "RIHS01_08eefbaa146ce02ba45898d5e99160afd6c4c54a30d159aee0f2ca6035b1580f",
    "control_msgs/action/FollowJointTrajectory_GetResult_Event":
        "RIHS01_43161a489e52daaa5bbc2fa74f73f1804d099574fcf8f819170807d75472662a",
}

# (b) fields in upstream's order, as rosidl's Python classes spell their types (read from the files above)
JTP = "trajectory_msgs/JointTrajectoryPoint"
MDJTP = "trajectory_msgs/MultiDOFJointTrajectoryPoint"
FIELDS = {
    "JointTolerance": {"name": "string", "position": "double", "velocity": "double", "acceleration": "double"},
    "JointComponentTolerance": {"joint_name": "string", "component": "uint16", "position": "double",
                                "velocity": "double", "acceleration": "double"},
    "JointTrajectoryControllerState": {
        "header": "std_msgs/Header", "joint_names": "sequence<string>",
        "reference": JTP, "feedback": JTP, "error": JTP, "output": JTP,
        "multi_dof_joint_names": "sequence<string>",
        "multi_dof_reference": MDJTP, "multi_dof_feedback": MDJTP, "multi_dof_error": MDJTP, "multi_dof_output": MDJTP,
        "speed_scaling_factor": "double"},
    "SpeedScalingFactor": {"factor": "double"},
    "FollowJointTrajectory.Goal": {
        "trajectory": "trajectory_msgs/JointTrajectory", "multi_dof_trajectory": "trajectory_msgs/MultiDOFJointTrajectory",
        "path_tolerance": "sequence<control_msgs/JointTolerance>",
        "component_path_tolerance": "sequence<control_msgs/JointComponentTolerance>",
        "goal_tolerance": "sequence<control_msgs/JointTolerance>",
        "component_goal_tolerance": "sequence<control_msgs/JointComponentTolerance>",
        "goal_time_tolerance": "builtin_interfaces/Duration"},
    "FollowJointTrajectory.Result": {"error_code": "int32", "error_string": "string"},
    "FollowJointTrajectory.Feedback": {
        "header": "std_msgs/Header", "joint_names": "sequence<string>",
        "desired": JTP, "actual": JTP, "error": JTP, "index": "int32",
        "multi_dof_joint_names": "sequence<string>",
        "multi_dof_desired": MDJTP, "multi_dof_actual": MDJTP, "multi_dof_error": MDJTP, "multi_dof_index": "int32"},
}
CONSTANTS = {
    "JointTolerance": {},
    "JointComponentTolerance": {"X_AXIS": 1, "Y_AXIS": 2, "Z_AXIS": 3, "TRANSLATION": 4, "ROTATION": 5},
    "JointTrajectoryControllerState": {},
    "SpeedScalingFactor": {},
    "FollowJointTrajectory.Goal": {},
    "FollowJointTrajectory.Result": {"SUCCESSFUL": 0, "INVALID_GOAL": -1, "INVALID_JOINTS": -2,
                                     "OLD_HEADER_TIMESTAMP": -3, "PATH_TOLERANCE_VIOLATED": -4,
                                     "GOAL_TOLERANCE_VIOLATED": -5},
    "FollowJointTrajectory.Feedback": {},
}


def _type(name: str):
    import control_msgs.action
    import control_msgs.msg

    if name.startswith("FollowJointTrajectory."):
        return getattr(control_msgs.action.FollowJointTrajectory, name.split(".")[1])
    return getattr(control_msgs.msg, name)


def _constants(cls) -> dict:
    meta = type(cls)
    return dict(getattr(meta, f"_{meta.__name__}__constants"))


def _share() -> Path:
    """<prefix>/share/control_msgs of the imported control_msgs (the venv's, or a ROS install's)."""
    import control_msgs

    prefix = Path(control_msgs.__file__).resolve().parents[4]  # <prefix>/lib/pythonX.Y/site-packages/control_msgs
    return prefix / "share" / "control_msgs"


# ---------------------------------------------------------------------------------------------------- (a)
def test_definitions_are_upstreams_field_for_field() -> None:
    """Our definitions are upstream's at UPSTREAM_COMMIT, line for line once comments are dropped; no other files."""
    found = sorted(str(p.relative_to(DEFS)) for p in DEFS.glob("*/*") if p.suffix in (".msg", ".action", ".srv"))
    assert found == sorted(UPSTREAM_DEFINITIONS), found
    for rel, sha256 in UPSTREAM_DEFINITIONS.items():
        lines = _definition_lines((DEFS / rel).read_text())
        assert hashlib.sha256(lines.encode()).hexdigest() == sha256, f"{rel} differs from upstream {UPSTREAM_COMMIT}"
    assert (DEFS / "COLCON_IGNORE").is_file(), "colcon must never build our subset on a ROS install"
    cmake = (DEFS / "CMakeLists.txt").read_text()
    assert all(f'"{rel}"' in cmake for rel in UPSTREAM_DEFINITIONS)


def test_installed_definitions_are_ours() -> None:
    """The venv holds the build of these very files (`make env` rebuilt it after any change)."""
    share = _share()
    for rel in UPSTREAM_DEFINITIONS:
        assert (share / rel).read_bytes() == (DEFS / rel).read_bytes(), share / rel


# ---------------------------------------------------------------------------------------------------- (b)
@pytest.mark.parametrize("name", sorted(FIELDS))
def test_fields_and_constants_are_upstreams(name: str) -> None:
    cls = _type(name)
    assert list(cls.get_fields_and_field_types().items()) == list(FIELDS[name].items())
    assert _constants(cls) == CONSTANTS[name]
    for k, v in CONSTANTS[name].items():
        assert getattr(cls, k) == v and getattr(cls(), k) == v


def test_result_codes() -> None:
    from control_msgs.action import FollowJointTrajectory

    r = FollowJointTrajectory.Result
    assert (r.SUCCESSFUL, r.INVALID_GOAL, r.INVALID_JOINTS, r.OLD_HEADER_TIMESTAMP, r.PATH_TOLERANCE_VIOLATED,
            r.GOAL_TOLERANCE_VIOLATED) == (0, -1, -2, -3, -4, -5)


# ---------------------------------------------------------------------------------------------------- (c)
def _installed_hashes() -> dict[str, str]:
    out: dict[str, str] = {}
    for f in sorted(_share().glob("*/*.json")):
        for h in json.loads(f.read_text())["type_hashes"]:
            if h["type_name"].startswith("control_msgs/"):
                assert out.setdefault(h["type_name"], h["hash_string"]) == h["hash_string"]
    return out


def test_type_hashes(capsys) -> None:
    hashes = _installed_hashes()
    with capsys.disabled():
        print("\ncontrol_msgs RIHS01 type hashes (installed type descriptions):")
        for k, v in sorted(hashes.items()):
            print(f"  {k} {v}")
    assert hashes == TYPE_HASHES


def _strip_defaults(td: dict) -> dict:
    return {"type_name": td["type_name"],
            "fields": [{k: v for k, v in f.items() if k != "default_value"} for f in td["fields"]]}


def test_type_hashes_are_functions_of_the_fields_alone() -> None:
    """Recompute every hash (REP 2016, RIHS01) from the installed type descriptions: SHA-256 of the JSON of the
    type's fields (name, type id, capacities, nested type name; no default values, no comments, no constants)
    and of the fields of every type it nests, sorted by name. Nothing of the package (version, build) enters."""
    checked = 0
    for f in sorted(_share().glob("*/*.json")):
        data = json.loads(f.read_text())
        msg = data["type_description_msg"]
        types = {t["type_name"]: t for t in (msg["type_description"], *msg["referenced_type_descriptions"])}

        def nested(name: str, seen: set[str], types=types) -> set[str]:
            for field in types[name]["fields"]:
                n = field["type"]["nested_type_name"]
                if n and n not in seen:
                    seen.add(n)
                    nested(n, seen)
            return seen

        for h in data["type_hashes"]:
            name = h["type_name"]
            canonical = {"type_description": _strip_defaults(types[name]),
                         "referenced_type_descriptions": [_strip_defaults(types[n]) for n in sorted(nested(name, set()))]}
            digest = hashlib.sha256(json.dumps(canonical, separators=(", ", ": ")).encode()).hexdigest()
            assert h["hash_string"] == f"RIHS01_{digest}", name
            checked += 1
    assert checked >= len(TYPE_HASHES)


# ---------------------------------------------------------------------------------------------------- (d)
def _graph_hash(node, topic: str, *, reader: bool = False) -> str:
    """The type hash the DDS graph holds for the server's endpoint on ``topic`` (a DDS topic name)."""
    query = node.get_subscriptions_info_by_topic if reader else node.get_publishers_info_by_topic
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        infos = [i for i in query(topic, no_mangle=True) if i.node_name == "fjt_server"]
        if infos:
            return str(infos[0].topic_type_hash)
        time.sleep(0.05)
    raise AssertionError(f"no endpoint of fjt_server on {topic}")


@pytest.mark.ros
def test_follow_joint_trajectory_over_dds() -> None:
    """An ActionServer and an ActionClient in two nodes of one process: goal, feedback and result over DDS;
    the hashes announced on the DDS graph are the recorded ones."""
    import rclpy
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTolerance, JointTrajectoryControllerState
    from rclpy.action import ActionClient, ActionServer
    from rclpy.executors import MultiThreadedExecutor
    from trajectory_msgs.msg import JointTrajectoryPoint

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    server_node = rclpy.create_node("fjt_server", context=ctx)
    client_node = rclpy.create_node("fjt_client", context=ctx)
    executor = MultiThreadedExecutor(num_threads=2, context=ctx)
    executor.add_node(server_node)
    executor.add_node(client_node)
    received_goals: list = []

    def execute(goal_handle):
        goal = goal_handle.request
        received_goals.append(goal)
        for i, point in enumerate(goal.trajectory.points):
            fb = FollowJointTrajectory.Feedback(joint_names=list(goal.trajectory.joint_names), index=i)
            fb.desired = point
            fb.actual.positions = [p + 0.001 for p in point.positions]
            fb.error.positions = [-0.001] * len(point.positions)
            goal_handle.publish_feedback(fb)
            time.sleep(0.05)
        goal_handle.succeed()
        return FollowJointTrajectory.Result(error_code=FollowJointTrajectory.Result.SUCCESSFUL,
                                            error_string="done")

    server = ActionServer(server_node, FollowJointTrajectory, "arm_controller/follow_joint_trajectory", execute)
    client = ActionClient(client_node, FollowJointTrajectory, "arm_controller/follow_joint_trajectory")
    state_pub = server_node.create_publisher(JointTrajectoryControllerState, "arm_controller/controller_state", 1)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        assert client.wait_for_server(timeout_sec=10.0)
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = ["j1", "j2"]
        goal.trajectory.points = [
            JointTrajectoryPoint(positions=[0.1 * k, -0.1 * k], time_from_start=Duration(sec=0, nanosec=100_000_000 * k))
            for k in (1, 2, 3)]
        goal.goal_tolerance = [JointTolerance(name="j1", position=0.01), JointTolerance(name="j2", position=0.02)]
        goal.goal_time_tolerance = Duration(sec=1)
        feedback: list = []
        send = client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback))
        deadline = time.monotonic() + 10.0
        while not send.done() and time.monotonic() < deadline:
            time.sleep(0.02)
        handle = send.result()
        assert handle is not None and handle.accepted
        result_future = handle.get_result_async()
        while not result_future.done() and time.monotonic() < deadline + 10.0:
            time.sleep(0.02)
        response = result_future.result()
        assert response is not None
        assert response.result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
        assert response.result.error_string == "done"
        # the goal crossed DDS unchanged
        assert len(received_goals) == 1
        got = received_goals[0]
        assert list(got.trajectory.joint_names) == ["j1", "j2"]
        assert [list(p.positions) for p in got.trajectory.points] == [list(p.positions) for p in goal.trajectory.points]
        assert [p.time_from_start.nanosec for p in got.trajectory.points] == [100_000_000, 200_000_000, 300_000_000]
        assert [(t.name, t.position) for t in got.goal_tolerance] == [("j1", 0.01), ("j2", 0.02)]
        assert got.goal_time_tolerance.sec == 1
        # feedback arrives (best effort in timing: at least one, in order, with the index set)
        deadline = time.monotonic() + 5.0
        while len(feedback) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert feedback, "no feedback"
        assert [f.index for f in feedback] == sorted(f.index for f in feedback)
        assert all(list(f.joint_names) == ["j1", "j2"] for f in feedback)
        assert list(feedback[-1].desired.positions) == list(goal.trajectory.points[feedback[-1].index].positions)
        # the hashes that rmw_fastrtps_cpp announces for these endpoints are the recorded ones
        # (DDS topic names: rt/ topics, rq/ requests, rr/ replies)
        action = "arm_controller/follow_joint_trajectory/_action"
        announced = {
            "control_msgs/msg/JointTrajectoryControllerState": _graph_hash(client_node, "rt/arm_controller/controller_state"),
            "control_msgs/action/FollowJointTrajectory_FeedbackMessage": _graph_hash(client_node, f"rt/{action}/feedback"),
            "control_msgs/action/FollowJointTrajectory_SendGoal_Request":
                _graph_hash(client_node, f"rq/{action}/send_goalRequest", reader=True),
            "control_msgs/action/FollowJointTrajectory_SendGoal_Response":
                _graph_hash(client_node, f"rr/{action}/send_goalReply"),
            "control_msgs/action/FollowJointTrajectory_GetResult_Request":
                _graph_hash(client_node, f"rq/{action}/get_resultRequest", reader=True),
            "control_msgs/action/FollowJointTrajectory_GetResult_Response":
                _graph_hash(client_node, f"rr/{action}/get_resultReply"),
        }
        print("announced on the DDS graph:", announced)
        assert announced == {k: TYPE_HASHES[k] for k in announced}
        state_pub.publish(JointTrajectoryControllerState(joint_names=["j1", "j2"], speed_scaling_factor=1.0))
    finally:
        executor.shutdown()
        spinner.join(timeout=5.0)
        server.destroy()
        client.destroy()
        server_node.destroy_node()
        client_node.destroy_node()
        rclpy.shutdown(context=ctx)
