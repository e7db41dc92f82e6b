"""Cluster traces as other tools ship them, gone wrong: gzip files, formats, runs where no job fits."""

import gzip

from bad_inputs import case

_SWF_ROW = "{} {} -1 100 8 -1 -1 8 -1 -1 1 1 -1 -1 -1 {} -1 -1\n"
_SWF = "; Version: 2.2\n" + "".join(_SWF_ROW.format(i, 10 * i, 1) for i in range(1, 5))
_GZ = gzip.compress(_SWF.encode(), mtime=0)

CASES = [
    case("cluster-swf-gz-truncated", "cluster --trace {tmp}/log.swf.gz --out {tmp}/out", "broken gzip",
         files={"log.swf.gz": _GZ[: len(_GZ) // 2]}),
    case("cluster-gz-of-nothing", "cluster --trace {tmp}/log.swf.gz", "empty",
         files={"log.swf.gz": gzip.compress(b"", mtime=0)}),
    case("cluster-format-unknown-names-flag", "cluster --trace {tmp}/mystery", "--format",
         files={"mystery": "hello world\n"}),
    case("cluster-philly-object-not-a-job", "cluster --trace {tmp}/p.json", "top level is a JSON dict",
         files={"p.json": '{"jobs": []}'}),
    case("cluster-every-job-rejected", "cluster --trace {tmp}/t.swf --xpus 16 --partitions 7=1,8=1 --out {tmp}/out",
         "all 4 jobs were rejected", files={"t.swf": _SWF}),
]  # fmt: skip
