"""ROS 2 adapters: thin rclpy nodes that convert messages and call the core."""
