"""Job traces for ``hcsim cluster`` (Helios CSV, Philly JSON, SWF): damaged, empty, out-of-range and unsorted files."""

from bad_inputs import case

HEADER = "job_id,vc,gpu_num,submit_time,duration\n"
SWF_ROW = "{n} {submit} 0 {run} 4 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1 -1\n"


def helios(*rows: str) -> dict[str, str | bytes]:
    """A Helios trace ``t.csv`` with the minimal header and ``rows``."""
    return {"t.csv": HEADER + "".join(r + "\n" for r in rows)}


def swf(*rows: tuple[object, object]) -> dict[str, str | bytes]:
    """An SWF trace ``t.swf`` of jobs (submit, run time), 4 processors each."""
    return {"t.swf": "".join(SWF_ROW.format(n=i, submit=s, run=r) for i, (s, r) in enumerate(rows, 1))}


CSV = "cluster --trace {tmp}/t.csv"
SWF = "cluster --trace {tmp}/t.swf"
PHILLY = "cluster --trace {tmp}/t.json"
OUT = "--out {tmp}/out"
JOB = '{"jobid": "j1", "vc": "v", "status": "Pass", "submitted_time": "2017-10-01 00:00:00", "attempts": [ATTEMPT]}'
ATTEMPT = '{"start_time": "START", "end_time": "2017-10-01 01:00:00", "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}'


def philly(start: str = "2017-10-01 00:10:00") -> dict[str, str | bytes]:
    """A one-job Philly trace ``t.json`` whose attempt starts at ``start``."""
    return {"t.json": "[" + JOB.replace("ATTEMPT", ATTEMPT.replace("START", start)) + "]"}


CASES = [
    case("helios-header-only", CSV, r"t\.csv: no jobs", files=helios()),
    case("helios-non-utf8", CSV, r"t\.csv line 2: not UTF-8", files={"t.csv": HEADER.encode() + b"j1,v\xff,1,x,1\n"}),
    case("helios-nul-byte", CSV, r"t\.csv line 2: a NUL byte", files=helios("j1,v\x00,1,2020-01-01 00:00:00,10")),
    case(
        "helios-run-time-1e300",
        f"{CSV} {OUT}",
        r"line 2 \(job j1\): run time 1e\+300 s is out of range",
        files=helios("j1,v,1,2020-01-01 00:00:00,1e300", "j2,v,1,2020-01-01 00:00:01,10"),
    ),
    case(
        "helios-span-of-ten-millennia",
        f"{CSV} {OUT}",
        r"line 3 \(job j2\): submit time .* out of range",
        files=helios("j1,v,1,0001-01-01 00:00:00,10", "j2,v,1,9999-12-31 00:00:00,10"),
    ),
    case(
        "helios-non-monotone",
        CSV,
        r"line 3: submit_time .* is before .*sort",
        files=helios("j1,v,1,2020-01-02 00:00:00,10", "j2,v,1,2020-01-01 00:00:00,10"),
    ),
    case(
        "helios-too-few-fields", CSV, r"line 2: 4 fields, the header has 5", files=helios("j1,v,1,2020-01-01 00:00:00")
    ),
    case("helios-too-many-fields", CSV, r"line 2: 6 fields", files=helios("j1,v,1,2020-01-01 00:00:00,10,x")),
    case("helios-no-gpu-column", CSV, r"no column 'gpu_num'", files={"t.csv": "job_id,vc,submit_time,duration\n"}),
    case("helios-bad-time", CSV, r"submit_time 'yesterday' is not a time", files=helios("j1,v,1,yesterday,10")),
    case("helios-negative-gpus", CSV, r"gpu_num '-4' is negative", files=helios("j1,v,-4,2020-01-01 00:00:00,10")),
    case("swf-header-only", SWF, r"t\.swf: no jobs", files={"t.swf": "; Version: 2.2\n; MaxProcs: 64\n"}),
    case("swf-non-utf8", SWF, r"line 2: not UTF-8", files={"t.swf": b"; Version: 2.2\n; \xff\xfe\n"}),
    case("swf-nul-byte", SWF, r"line 2: a NUL byte", files={"t.swf": SWF_ROW.format(n=1, submit=0, run=5) + "\x00\n"}),
    case("swf-run-time-1e300", f"{SWF} {OUT}", r"line 1 \(job 1\): run time 1e\+300", files=swf((0, "1e300"), (5, 10))),
    case(
        "swf-submit-1e300", f"{SWF} {OUT}", r"line 2 \(job 2\): submit time 1e\+300", files=swf((0, 10), ("1e300", 10))
    ),
    case("swf-non-monotone", SWF, r"line 2: field 2 \(submit time\) '5' is before 10", files=swf((10, 10), (5, 10))),
    case("swf-wrong-field-count", SWF, r"line 1: 8 fields \(valid: 18", files={"t.swf": "1 0 0 100 4 -1 -1 -1\n"}),
    case("swf-field-not-a-number", SWF, r"field 4 \(run time\) 'ten'", files=swf((0, "ten"))),
    case(
        "philly-deeply-nested",
        PHILLY,
        r"t\.json: JSON nested too deeply",
        files={"t.json": "[" * 100000 + "]" * 100000},
    ),
    case("philly-empty-list", PHILLY, r"no jobs \(the list is empty\)", files={"t.json": "[]"}),
    case("philly-not-json", PHILLY, r"line 1 column \d+: not valid JSON", files={"t.json": "[{'jobid': 1}]"}),
    case("philly-bad-start-time", PHILLY, r"attempt 1: 'start_time' 'noon' is not a time", files=philly("noon")),
    case("philly-non-utf8", PHILLY, r"t\.json line 1: not UTF-8", files={"t.json": b'[{"jobid": "\xff"}]'}),
    case(
        "trace-format-unknown",
        "cluster --trace {tmp}/t.txt",
        r"cannot tell the trace format",
        files={"t.txt": "hello\n"},
    ),
]
