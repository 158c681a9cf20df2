"""``python -m robot_dynamics`` = the ``robot-dynamics`` command."""

from .cli import main

raise SystemExit(main())
