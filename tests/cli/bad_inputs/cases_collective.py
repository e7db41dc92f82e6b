"""``hcsim collective``: sizes, algorithms, ranks and system sizes, refused before anything is simulated."""

from bad_inputs import case

RUN = "collective --system cxl --xpus 16"

CASES = [
    case("collective-sizes-reversed", f"{RUN} --sizes 1GiB:1KiB", r"'1GiB:1KiB'.*LO <= HI"),
    case("collective-sizes-not-a-size", f"{RUN} --sizes lots", r"--sizes: cannot parse 'lots'"),
    case("collective-sizes-three-parts", f"{RUN} --sizes 1KiB:2KiB:4KiB", r"'1KiB:2KiB:4KiB'.*LO:HI"),
    case("collective-sizes-open-range", f"{RUN} --sizes 1KiB:", r"--sizes: cannot parse ''"),
    case("collective-sizes-empty-item", f"{RUN} --sizes 1KiB,,2KiB", r"--sizes: cannot parse ''"),
    case("collective-sizes-zero", f"{RUN} --sizes 0", r"'0' is invalid.*>= 1"),
    case("collective-sizes-fraction", f"{RUN} --sizes 1.5", r"'1\.5' is invalid.*whole number"),
    case("collective-sizes-1e300", f"{RUN} --sizes 1e300", r"reaches 1e\+300 bytes.*1PiB"),
    case("collective-sizes-to-an-exbibyte", f"{RUN} --sizes 1KiB:1EiB", r"'1KiB:1EiB' reaches.*1PiB"),
    case("collective-algorithm-unknown", f"{RUN} --sizes 1KiB --algorithm warp", r"algorithm 'warp' is unknown.*ring"),
    case("collective-kind-unknown", f"{RUN} --kind allsum", r"--kind 'allsum'.*allreduce"),
    case("collective-ranks-beyond-system", f"{RUN} --sizes 1KiB --ranks 17", r"--ranks 17.*2 to 16"),
    case("collective-ranks-one", f"{RUN} --sizes 1KiB --ranks 1", r"--ranks 1.*2 to 16"),
    case("collective-xpus-1e9", "collective --system cxl --xpus 1000000000 --sizes 1KiB", r"--xpus 1000000000.*4096"),
    case("collective-xpus-ring-5000", "collective --system ring --xpus 5000 --sizes 1KiB", r"--xpus 5000.*4096"),
    case("collective-xpus-not-multiple", "collective --system cxl --xpus 12 --sizes 1KiB", r"--xpus 12.*multiple"),
    case(
        "collective-iterations-1e9", f"{RUN} --sizes 1KiB --iterations 1000000000", r"--iterations 1000000000.*10,000"
    ),
    case("collective-no-platform", "collective --sizes 1KiB", r"platform is required"),
    case(
        "collective-coherent-algorithm-noncoherent",
        "collective --system noncoherent --xpus 16 --sizes 1KiB --algorithm coherent_ring",
        r"coherent_ring.*coherent",
    ),
    case(
        "collective-out-is-file", f"{RUN} --sizes 1KiB --out {{tmp}}/f", r"is a file, not a directory", files={"f": "x"}
    ),
]
