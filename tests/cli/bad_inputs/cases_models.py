"""Transformer models: presets, HuggingFace config.json files, inference layouts, serving (docs/models.md)."""

import json

from bad_inputs import case

_LLAMA = {
    "hidden_size": 4096,
    "num_hidden_layers": 2,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 11008,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "torch_dtype": "float16",
}


def _config(**change: object) -> str:
    return json.dumps({k: v for k, v in {**_LLAMA, **change}.items() if v is not None})


_RUN = "run --system ring --xpus 4 --inference --batch 8 --context 1024"

CASES = [
    case("model-unknown-preset", f"{_RUN} --model llama9", "model 'llama9' is unknown.*llama2-7b"),
    case("model-config-missing", f"{_RUN} --model {{tmp}}/none.json", "none.json' does not exist"),
    case("model-config-not-json", f"{_RUN} --model {{tmp}}/c.json", "not valid JSON", files={"c.json": "{oops"}),
    case(
        "model-config-missing-key",
        f"{_RUN} --model {{tmp}}/c.json",
        "'hidden_size' is missing",
        files={"c.json": _config(hidden_size=None)},
    ),
    case(
        "model-config-bad-heads",
        f"{_RUN} --model {{tmp}}/c.json",
        "num_attention_heads 0 is invalid",
        files={"c.json": _config(num_attention_heads=0)},
    ),
    case(
        "model-config-bad-dtype",
        f"{_RUN} --model {{tmp}}/c.json",
        "torch_dtype 'int4' is unsupported",
        files={"c.json": _config(torch_dtype="int4")},
    ),
    case(
        "model-config-kv-heads",
        f"{_RUN} --model {{tmp}}/c.json",
        "heads 32 is not divisible by kv_heads 5",
        files={"c.json": _config(num_key_value_heads=5)},
    ),
    case("model-tp-not-dividing-xpus", f"{_RUN} --model llama2-7b --tp 8", "--tp 8 does not divide the 4 XPUs"),
    case(
        "model-tp-not-dividing-heads",
        "run --system ring --xpus 16 --model llama2-13b --inference --context 128",
        "tp 16 does not divide the 40 attention heads",
    ),
    case("model-batch-zero", f"{_RUN} --model llama2-7b --batch 0", "--batch 0 is invalid"),
    case("model-no-context", "run --system ring --xpus 4 --model llama2-7b --inference", "needs --context"),
    case("model-no-inference", "run --system ring --xpus 4 --model llama2-7b --context 8", "needs --inference"),
    case("model-and-workload", f"{_RUN} --model llama2-7b --workload fig3", "either --workload or --model"),
    case("model-fast", f"{_RUN} --model llama2-7b --fast", "--fast applies to data-parallel"),
    case("run-no-workload", "run --system ring --xpus 4 --iterations 1", "a workload is required"),
    case("run-no-iterations", "run --system ring --xpus 4 --workload fig3", "--iterations is required"),
    case("serve-model-no-system", "serve --model llama2-7b --rho 0.5 --max-batch 2 --context 64", "needs --system"),
    case(
        "serve-model-no-max-batch",
        "serve --model llama2-7b --rho 0.5 --system ring --xpus 2 --context 64",
        "needs --max-batch",
    ),
    case(
        "serve-model-no-context",
        "serve --model llama2-7b --rho 0.5 --system ring --xpus 2 --max-batch 2",
        "needs --context",
    ),
    case(
        "serve-model-bad-tp",
        "serve --model llama2-13b --rho 0.5 --system ring --xpus 2 --max-batch 2 --context 64 --tp 3",
        "--tp 3 does not divide the 2 XPUs",
    ),
    case(
        "serve-model-unstable",
        "serve --model llama2-7b --rho 1.5 --system ring --xpus 2 --max-batch 1 --context 16 --output-tokens 1",
        "unstable",
    ),
    case(
        "serve-system-without-model", "serve --gpu v100 --rho 0.5 --system cxl --xpus 8", "--system applies to --model"
    ),
]
