"""The robot model: MDH table (chains and trees), the immutable RobotModel (its data RobotData), actuator
transmissions, URDF/xacro in and out, inertia algebra, bundled robots."""
