"""The benchmark harness shared by bench/tgb.py (our controller alone) and bench/compare (ours beside ALBC).

kube: API client and watch loop; watcher: the EndpointSlice/pod/binding watcher process; awsemu: the private
emulator and its call log; proc: controller processes (memory, CPU, metrics); stats: pure figures (percentiles,
floors, medians, tables); flavors: how each controller is started and observed; scene: one run on the local
environment; plots: PNGs per scenario.
"""
