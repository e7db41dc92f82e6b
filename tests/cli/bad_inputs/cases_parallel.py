"""Impossible parallel-training layouts and options of ``hcsim run --model`` (issue 16)."""

from bad_inputs import case

RUN = "run --system cxl --xpus 16 --model"
CASES = [
    case("parallel-product", f"{RUN} llama3-8b --parallel dp=2,tp=4,pp=4", "needs dp x tp x pp = 32 XPUs"),
    case("parallel-heads", f"{RUN} llama3-8b --parallel tp=3", "tp x pp = 3 does not divide the 16 XPUs"),
    case("parallel-heads-tp", f"{RUN} llama2-13b --parallel dp=1,tp=16", "40 attention heads, not divisible by tp=16"),
    case("parallel-layers", f"{RUN} llama2-13b --parallel dp=1,pp=16", "40 layers, not divisible by pp=16"),
    case("parallel-experts", f"{RUN} mixtral-8x7b --parallel dp=16,ep=16", "8 experts, not divisible by ep=16"),
    case("parallel-ep-dense", f"{RUN} llama3-8b --parallel dp=16 --ep 2", "dense model"),
    case("parallel-item", f"{RUN} llama3-8b --parallel dp=16,zz=2", "'zz=2' is invalid"),
    case("parallel-microbatches", f"{RUN} llama3-8b --parallel dp=4,pp=4 --microbatches 0", "microbatches 0"),
    case("parallel-mapping", f"{RUN} llama3-8b --parallel dp=4,pp=4 --mapping tp,xx,dp", "rank mapping"),
    case("parallel-tp-option", f"{RUN} llama3-8b --tp 4", "--parallel tp=N"),
]
