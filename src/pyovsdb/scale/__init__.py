"""`pyovsdb scale`: an OVN control plane at scale on one machine.

A control plane (our servers and northd, the real C ones, or a mix), hundreds of
simulated chassis that behave on the Southbound as ovn-controller 23.03 does (many per
process, one connection and one replica each), and a CMS driver that builds an
ovn-kubernetes cluster and replays an ovn-heater scenario on it, measuring what a pod
costs from its Northbound write to its port being up, and a policy until every chassis
has it.

- `topology.py`: the ovn-kubernetes node topology and the pods, as Northbound
  operations (pure).
- `cloud.py`: an OpenStack-like cloud as Neutron writes it, as Northbound operations
  (pure).
- `chassis.py`: the simulated chassis and their program.
- `stack.py`: starting and stopping a control plane, sampling its processes.
- `driver.py`: the measuring CMS: writes, pods, the latencies.
- `scenarios.py`: ovn-heater's scenarios, on the driver.
- `report.py`: the summary and the HTML report (pure).
"""
