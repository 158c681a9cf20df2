"""The computed-torque controller by concern (the node, :mod:`robot_dynamics.ros.computed_torque_controller`, wires
them to topics, services, actions, parameters and the loop thread):

* :mod:`.parameters`: the parameter schema, as data;
* :mod:`.context`: the control context built from a model and the parameter values (law, gains, limits, guard);
* :mod:`.goal`: a FollowJointTrajectory goal as the loop sees it (result codes, JTC's tolerances, path and goal
  checks);
* :mod:`.pose`: pose references of the task-space laws;
* :mod:`.statistics`: the loop's per-cycle figures;
* :mod:`.core`: the control cycle, pure (``ControlCore.update``), its modes (:mod:`.modes`) and what it adopts at a
  cycle boundary (:mod:`.intake`: contexts, trajectories, goals, pose references);
* the node's ROS side, one concern each (mixins of the node class): :mod:`.loop` (loop thread, inputs taken by
  the loop), :mod:`.inputs` (states, trajectories, pose references, motor states), :mod:`.actions`
  (FollowJointTrajectory goals, parameter swaps), :mod:`.reporting` (commands, state messages, statistics,
  diagnostics).
"""
