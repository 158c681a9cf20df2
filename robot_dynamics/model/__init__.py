"""The robot model: MDH table (chains and trees), the immutable RobotModel, URDF/xacro in and out, inertia algebra, bundled robots."""
