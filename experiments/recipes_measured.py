"""The published runs' recipe settings that the measured CSV has no column for, as ``hcsim run`` flags.

Read by ``validate_measured.py``: each entry is ``(flags, why)``, ``why`` citing the release's file@commit
(and line) the setting comes from. Tables by key (lower case): :data:`RECIPES` by (source, model) or
(source, model, precision), :data:`PRECISION_RECIPES` by (source, precision), :data:`SOURCE_RECIPES` by
source, :data:`SOURCE_ETP` (expert tensor parallelism of rows with ep > 1, tp > 1 and no etp column).
A source names a software release as the CSV's ``source`` column spells it (experiments/data/measured/
README.md, "How a source is named"). Invariant: every setting was read from the release's code or
configuration; none was chosen by looking at a measured throughput, and a source not listed gets no flags.
"""

from __future__ import annotations

#: A row's published recipe settings that the CSV has no column for, as ``hcsim run`` flags, each with its
#: source; keyed by the CSV's (source, model) or (source, model, precision), lower case. Memory and time follow
#: from them; nothing here was chosen by looking at the measured throughput.
_NFL = "NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/{}@8325688d (tag 24.07), line {}: {}"
_MB = "NVIDIA-NeMo/Megatron-Bridge {}@00b7660b{}"
_UB = "ub_tp_comm_overlap: true (TE userbuffers, with sequence_parallel: true)"
RECIPES: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {
    ("nemo-24.07", "nemotron-340b"): (
        ("--optimizer-dtype", "bf16"),
        "Adam state in bf16 without an fp32 master copy: NVIDIA/NeMo-Framework-Launcher "
        "launcher_scripts/conf/training/nemotron/nemotron_340b.yaml@7c842fcd (the Nemotron-4 340B recipe of "
        "NeMo 24.07's time: optim distributed_fused_adam, dtype bf16, grad_sync_dtype bf16); NVIDIA/NeMo "
        "nemo/collections/nlp/models/language_modeling/megatron_base_model.py@579983fb (store_params False "
        "when the optimizer dtype is the model's)",
    ),
    ("nemo-24.07", "gpt3-20b"): (("--tp-comm-overlap",), _NFL.format("gpt3/20b.yaml", 149, _UB)),
    ("nemo-24.07", "llama2-70b"): (("--tp-comm-overlap",), _NFL.format("llama/llama2_70b.yaml", 136, _UB)),
    ("nemo-24.07", "nemotron-8b"): (("--tp-comm-overlap",), _NFL.format("nemotron/nemotron_8b.yaml", 158, _UB)),
    ("nemo-24.07", "nemotron-22b"): (("--tp-comm-overlap",), _NFL.format("nemotron/nemotron_22b.yaml", 158, _UB)),
    ("nemo-24.07", "llama3-70b"): (("--tp-comm-overlap",), _NFL.format("llama/llama3_70b.yaml", 136, _UB)),
    ("megatron-bridge-25.11", "llama3-70b"): (
        ("--tp-comm-overlap",),
        _MB.format(
            "src/megatron/bridge/recipes/llama/llama3.py",
            " lines 288-303 (llama3_70b_pretrain_config: "
            "CommOverlapConfig(tp_comm_overlap=True)); scripts/performance/configs/llama/llama3_llm_pretrain.py"
            "@00b7660b lines 185-203 keep it for H100 FP8-CS",
        ),
    ),
    ("megatron-bridge-25.11", "llama3.1-405b"): (
        ("--tp-comm-overlap",),
        _MB.format(
            "src/megatron/bridge/recipes/llama/llama3.py",
            " lines 400-417 (llama31_405b_pretrain_config: "
            "CommOverlapConfig(tp_comm_overlap=True)); scripts/performance/configs/llama/llama31_llm_pretrain.py"
            "@00b7660b line 86 keeps it except under nvfp4",
        ),
    ),
    ("megatron-bridge-25.11", "llama3-8b", "fp8-cs"): (
        ("--recompute", "full", "--recompute-num-layers", "5"),
        _MB.format(
            "scripts/performance/configs/llama/llama3_workload_base_configs.py",
            " lines 229-233 "
            "(LLAMA3_8B_PRETRAIN_CONFIG_H100_FP8_CS_BASE_CONFIG: recompute_num_layers=5) and "
            "scripts/performance/utils/overrides.py@00b7660b lines 128-131 (recompute_granularity full, "
            "recompute_method block)",
        ),
    ),
    ("megatron-bridge-25.11", "gpt-oss-120b"): (
        ("--recompute-modules", "layernorm,moe_act"),
        "NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py@00b7660b "
        "(GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16: recompute_modules layernorm, moe_act; "
        "src/megatron/bridge/perf_recipes/gpt_oss/h100/gpt_oss.py@067f987d adds recompute_granularity selective)",
    ),
}
#: The same for every row of a (source, precision), lower case: Megatron-Bridge's FP8-CS recipe keeps and
#: all-gathers the parameters in fp8.
PRECISION_RECIPES: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("megatron-bridge-25.11", "fp8-cs"): (
        ("--fp8-param-gather",),
        "NVIDIA-NeMo/Megatron-Bridge scripts/performance/utils/precision.py@00b7660b (fp8_cs: "
        "bf16_with_fp8_current_scaling_mixed) and src/megatron/bridge/training/mixed_precision.py@00b7660b "
        "(bf16_with_fp8_current_scaling_mixed: fp8_param_gather = True)",
    ),
}
#: The same for every row of a source (a software release), lower case: the launcher's global configuration at
#: NeMo-Framework-Launcher tags 24.01 to 24.07 set NVTE_FUSED_ATTN=0, so Transformer Engine ran FlashAttention-2
#: instead of cuDNN's fused attention (removed at 24.09; docs/research/attention-h100.md, section 1.4). A
#: source not listed keeps every default (TE's own choice: cuDNN on H100).
_FA2_WHY = (
    "NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/config.yaml, env_vars NVTE_FUSED_ATTN: 0 "
    "('Disable cudnn FA until we've tested it more'), exported to every job by stages.py get_env_vars(): "
    "{}; Transformer Engine then runs flash-attn (2.4.2-2.5.8 at the 24.07 pin TE@7d576ed2)"
)
SOURCE_RECIPES: dict[str, tuple[tuple[str, ...], str]] = {
    "nemo-24.01": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.01, line 68")),
    "nemo-24.03": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.03, line 68")),
    "nemo-24.05": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.05, line 70")),
    "nemo-24.07": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.07 = @8325688d, line 72")),
}
#: Expert tensor parallelism a release's MoE recipes set (rows with ep > 1, tp > 1, no etp column), by
#: (source, model) or (source,), and why.
SOURCE_ETP: dict[tuple[str, ...], tuple[int, str]] = {
    ("megatron-bridge-25.11",): (
        1,
        "expert tensor parallelism 1 on every expert-parallel row (Megatron-Core's MoE parallel folding): "
        "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py@067f987d lines 60-876, "
        "deepseek/h100/deepseek_v3.py lines 132 and 300, gpt_oss/h100/gpt_oss.py lines 65 and 190 "
        "(cfg.model.expert_tensor_parallel_size = 1)",
    ),
}
