"""``hcsim cluster``: cluster size, partitions, policy options and durations, refused before scheduling."""

from bad_inputs import case

SWF = "".join(f"{i} {10 * i} 0 100 4 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1 -1\n" for i in range(1, 4))
ONE = {"t.swf": SWF}
HUGE_JOB = {"t.swf": "1 0 0 100 1000000 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1 -1\n"}
RUN = "cluster --trace {tmp}/t.swf"

CASES = [
    case("cluster-xpus-1e9", f"{RUN} --xpus 1000000000", r"--xpus 1000000000.*from 8 to 4096", files=ONE, timeout=30),
    case("cluster-xpus-not-multiple", f"{RUN} --xpus 12", r"--xpus 12.*multiple of 8", files=ONE),
    case("cluster-xpus-zero", f"{RUN} --xpus 0", r"--xpus 0", files=ONE),
    case(
        "cluster-job-of-1e6-gpus-default-cluster",
        RUN,
        r"job 1 \(line 1\) asks for 1,000,000 GPUs.*--xpus 8\.\.4096 to reject",
        files=HUGE_JOB,
        timeout=30,
    ),
    case("cluster-partitions-duplicate", f"{RUN} --xpus 16 --partitions a=1,a=1", r"partition 'a' twice", files=ONE),
    case("cluster-partitions-no-count", f"{RUN} --partitions train", r"'train'.*name=nodes", files=ONE),
    case("cluster-partitions-no-name", f"{RUN} --partitions =1", r"'=1'.*name=nodes", files=ONE),
    case(
        "cluster-partitions-too-many-nodes", f"{RUN} --xpus 16 --partitions a=100", r"'a' asks for 100 nodes", files=ONE
    ),
    case(
        "cluster-slice-with-fcfs",
        f"{RUN} --slice 5",
        r"--slice does not apply to policy 'fcfs'.*--policy rr",
        files=ONE,
    ),
    case("cluster-quanta-with-easy", f"{RUN} --policy easy --quanta 1h", r"--quanta.*'easy'.*mlfq", files=ONE),
    case("cluster-slice-zero", f"{RUN} --policy rr --slice 0", r"--slice '0'.*> 0", files=ONE),
    case("cluster-slice-inf", f"{RUN} --policy rr --slice inf", r"--slice 'inf'.*finite", files=ONE),
    case("cluster-quanta-negative", f"{RUN} --policy mlfq --quanta 1h,-2h", r"quanta.*> 0", files=ONE),
    case("cluster-snapshot-nan", f"{RUN} --snapshot nan --out {{tmp}}/out", r"--snapshot.*'nan'", files=ONE),
    case("cluster-snapshot-negative", f"{RUN} --snapshot -5 --out {{tmp}}/out", r"--snapshot '-5'.*>= 0", files=ONE),
    case("cluster-overhead-negative", f"{RUN} --overhead -1", r"--overhead '-1'.*>= 0", files=ONE),
    case("cluster-policy-unknown", f"{RUN} --policy lottery", r"policy 'lottery'.*fcfs", files=ONE),
    case("cluster-placement-unknown", f"{RUN} --placement random-fit", r"random-fit", files=ONE),
    case("cluster-trace-missing", "cluster --trace {tmp}/none.swf", r"none\.swf.*does not exist"),
    case("cluster-out-is-file", f"{RUN} --out {{tmp}}/f", r"--out .*is a file", files={**ONE, "f": "x"}),
]
