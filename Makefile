# robot_dynamics: `make demo` runs the main job, `make test` runs the tests.
# Both create the project-local environment (.venv) when it is missing; every
# step is stamped, so a second run rebuilds nothing.

SHELL := /bin/bash
PYTHON ?= python3
VENV := $(CURDIR)/.venv
VPY := $(VENV)/bin/python
STAMPS := $(VENV)/.stamps
BUILD := $(CURDIR)/build/robot_dynamics_interfaces
ROS_ENV := CMAKE_PREFIX_PATH=$(VENV) AMENT_PREFIX_PATH=$(VENV) PATH=$(VENV)/bin:$$PATH
# DDS traffic stays on this machine; each run picks its own domain in the tests.
# one BLAS thread a process: many small matrices, 2 cores shared by several node processes
RUN_ENV := ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST RMW_IMPLEMENTATION=rmw_fastrtps_cpp OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
INTERFACE_FILES := $(wildcard robot_dynamics_interfaces/msg/*.msg robot_dynamics_interfaces/srv/*.srv) \
	robot_dynamics_interfaces/CMakeLists.txt robot_dynamics_interfaces/package.xml
# control_msgs is not on PyPI: the subset the project uses (FollowJointTrajectory, JointTolerance,
# JointTrajectoryControllerState), upstream's definitions unchanged, is built into the venv. colcon ignores
# that directory (COLCON_IGNORE): on a ROS install the distribution's control_msgs is used.
CONTROL_MSGS := interfaces/control_msgs
CONTROL_MSGS_BUILD := $(CURDIR)/build/control_msgs
CONTROL_MSGS_FILES := $(wildcard $(CONTROL_MSGS)/msg/*.msg $(CONTROL_MSGS)/action/*.action) \
	$(CONTROL_MSGS)/CMakeLists.txt $(CONTROL_MSGS)/package.xml
PYTEST_ARGS ?=
# the integration tier runs two test files side by side when two cores are idle as it starts, one otherwise
# (tools/ros_workers.py; each worker in its own ROS domain: 8.3 instead of 12 min on an idle 2-core host); ROS_WORKERS=1
# or 2 chooses
ROS_WORKERS ?= auto
# the two interface packages build side by side (independent targets); recipes stay sequential
MAKEFLAGS += --jobs=2

.PHONY: env test test-fast demo lint bench clean-env

env: $(STAMPS)/package

$(STAMPS)/venv:
	$(PYTHON) -m venv $(VENV)
	@mkdir -p $(STAMPS) && touch $@

# uv installs the pinned set (the same versions pip resolves) in ~25 s instead of ~100 s; pip does it when uv
# cannot be had
UV := uv==0.13.9
$(STAMPS)/requirements: requirements.txt $(STAMPS)/venv
	( $(VPY) -m pip install -q $(UV) && $(VENV)/bin/uv pip install -q --python $(VPY) -r requirements.txt ) \
		|| $(VPY) -m pip install -q -r requirements.txt
	$(VPY) -c "import rclpy, numpy, scipy, sympy, pinocchio, mujoco, urdf_parser_py, dask, distributed, xdist"
	$(VPY) tools/fix_cmake_exports.py
	@touch $@

$(STAMPS)/interfaces: $(INTERFACE_FILES) $(STAMPS)/requirements
	@mkdir -p $(BUILD)
	cd $(BUILD) && $(ROS_ENV) cmake $(CURDIR)/robot_dynamics_interfaces \
		-DCMAKE_INSTALL_PREFIX=$(VENV) -DPython3_EXECUTABLE=$(VPY) -DBUILD_TESTING=OFF >cmake.log 2>&1 \
		|| (cat cmake.log; exit 1)
	cd $(BUILD) && $(ROS_ENV) $(MAKE) --no-print-directory -j2 >make.log 2>&1 || (tail -50 make.log; exit 1)
	cd $(BUILD) && $(ROS_ENV) $(MAKE) --no-print-directory install >install.log 2>&1 || (tail -50 install.log; exit 1)
	$(VPY) -c "import robot_dynamics_interfaces.srv, robot_dynamics_interfaces.msg"
	@touch $@

$(STAMPS)/control_msgs: $(CONTROL_MSGS_FILES) $(STAMPS)/requirements
	@mkdir -p $(CONTROL_MSGS_BUILD)
	cd $(CONTROL_MSGS_BUILD) && $(ROS_ENV) cmake $(CURDIR)/$(CONTROL_MSGS) \
		-DCMAKE_INSTALL_PREFIX=$(VENV) -DPython3_EXECUTABLE=$(VPY) -DBUILD_TESTING=OFF >cmake.log 2>&1 \
		|| (cat cmake.log; exit 1)
	cd $(CONTROL_MSGS_BUILD) && $(ROS_ENV) $(MAKE) --no-print-directory -j2 >make.log 2>&1 || (tail -50 make.log; exit 1)
	cd $(CONTROL_MSGS_BUILD) && $(ROS_ENV) $(MAKE) --no-print-directory install >install.log 2>&1 || (tail -50 install.log; exit 1)
	$(VPY) -c "import control_msgs.action, control_msgs.msg"
	@touch $@

$(STAMPS)/package: pyproject.toml $(STAMPS)/interfaces $(STAMPS)/control_msgs
	$(VPY) -m pip install -q --no-deps --no-build-isolation -e .
	$(VPY) -c "import rclpy, robot_dynamics, robot_dynamics_interfaces.srv"
	@touch $@

# everything: the core tier (no node processes, no DDS: the tests not marked `ros`) on every core, then the ROS 2
# integration tier (node processes over DDS) ROS_WORKERS files at a time; either tier failing, or collecting
# nothing, fails
test: env
	$(RUN_ENV) $(VPY) -m pytest -m "not ros" -n auto --dist worksteal $(PYTEST_ARGS)
	@w=$(ROS_WORKERS); if [ "$$w" = auto ]; then w=$$($(VPY) tools/ros_workers.py) || exit 1; fi; \
	args=; if [ "$$w" -gt 1 ]; then args="-n $$w --dist loadfile"; fi; \
	echo "$(RUN_ENV) $(VPY) -m pytest -m ros $$args $(PYTEST_ARGS)"; \
	$(RUN_ENV) $(VPY) -m pytest -m ros $$args $(PYTEST_ARGS)

# the core tier alone
test-fast: env
	$(RUN_ENV) $(VPY) -m pytest -m "not ros" -n auto --dist worksteal $(PYTEST_ARGS)

demo: env
	$(RUN_ENV) $(VENV)/bin/robot-dynamics demo --output out/demo

lint: env
	$(VENV)/bin/ruff check robot_dynamics test bench tools

bench: env
	for b in bench/bench_*.py; do echo "== $$b"; $(VPY) $$b || exit 1; done

clean-env:
	rm -rf $(VENV) build
