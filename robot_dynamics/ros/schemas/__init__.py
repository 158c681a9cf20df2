"""The nodes' parameter schemas as YAML (generate_parameter_library's format): read by
:mod:`robot_dynamics.ros.parameter_files`."""
