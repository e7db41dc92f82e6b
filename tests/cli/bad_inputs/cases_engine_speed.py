"""Bad inputs of the engine's speed switches: iteration memoization on a time-varying platform."""

from __future__ import annotations

from bad_inputs import case

_HOST = (
    '<host id="{name}" speed="1e12f"><prop id="kind" value="xpu"/><prop id="rank" value="{rank}"/>'
    '<prop id="fp32_flops" value="1e12"/></host>'
)
VARYING = (
    "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    '<platform version="4.1"><zone id="z" routing="Full">'
    + _HOST.format(name="x0", rank=0)
    + _HOST.format(name="x1", rank=1)
    + '<link id="l" bandwidth="1e9Bps" latency="1e-6s" bandwidth_file="bw.txt"/>'
    '<route src="x0" dst="x1"><link_ctn id="l"/></route></zone></platform>\n'
)

CASES = [
    case(
        "run-repeat-time-varying-platform",
        "run --platform {tmp}/p.xml --workload allreduce --bytes 1MiB --iterations 3 --repeat",
        "bandwidth_file",  # refused before SimGrid loads it (hcsim.platform.precheck)
        files={"p.xml": VARYING, "bw.txt": "0 1e9\n1 5e8\n"},
    ),
]
