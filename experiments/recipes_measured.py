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
        ("--optimizer-dtype", "bf16", "--recompute", "selective"),
        "Adam state in bf16 without an fp32 master copy, and selective recomputation (Megatron's core_attn): "
        "NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/nemotron/nemotron_340b.yaml@8325688d "
        "(tag 24.07): line 122 activations_checkpoint_granularity: selective, lines 158-162 optim "
        "distributed_fused_adam, dtype bf16, grad_sync_dtype bf16 (the same at @7c842fcd); "
        "NVIDIA/NeMo nemo/collections/nlp/models/language_modeling/megatron_base_model.py@579983fb lines 785-801 "
        "(store_params False when the optimizer dtype is the model's)",
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
        "line 61 (GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16: recompute_modules layernorm, moe_act; "
        "src/megatron/bridge/perf_recipes/gpt_oss/h100/gpt_oss.py@067f987d lines 39-40 add recompute_granularity "
        "selective)",
    ),
}
#: The same for every row of a (source, precision), lower case: Megatron-Bridge's FP8-CS recipe keeps and
#: all-gathers the parameters in fp8.
PRECISION_RECIPES: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("megatron-bridge-25.11", "fp8-cs"): (
        ("--fp8-param-gather",),
        "NVIDIA-NeMo/Megatron-Bridge scripts/performance/utils/precision.py@00b7660b line 28 (fp8_cs: "
        "bf16_with_fp8_current_scaling_mixed) and src/megatron/bridge/training/mixed_precision.py@00b7660b "
        "line 289 (bf16_with_fp8_current_scaling_mixed: fp8_param_gather = True)",
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
    "nemo-24.01": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.01 = @cf411a9e, line 68")),
    "nemo-24.03": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.03 = @d4ec7c8b, line 68")),
    "nemo-24.05": (("--attention-backend", "flash"), _FA2_WHY.format("tag 24.05 = @599ecfcb, line 70")),
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

Entry = tuple[tuple[str, ...], str]
_TPO: tuple[str, ...] = ("--tp-comm-overlap",)


def _add(table: dict, keys: list[tuple[str, ...]], entry: Entry) -> None:
    for key in keys:
        assert key not in table, f"recipe entry {key} given twice"
        table[key] = entry


# NeMo 24.01 to 24.07: the launcher recipes (ub_tp_comm_overlap: true with sequence_parallel: true) of the
# models the vendored 24.07 rows do not cover, read at each tag the same way as the 24.07 entries above.
_NFL_EARLY = {
    "nemo-24.01": (
        "24.01",
        "cf411a9e",
        {
            "llama2-13b": ("llama/llama2_13b.yaml", 135),
            "llama2-70b": ("llama/llama2_70b.yaml", 135),
            "nemotron-8b": ("nemotron/nemotron_8b.yaml", 156),
            "nemotron-15b": ("nemotron/nemotron_15b.yaml", 156),
            "nemotron-22b": ("nemotron/nemotron_22b.yaml", 156),
        },
    ),
    "nemo-24.03": (
        "24.03",
        "d4ec7c8b",
        {
            "llama2-13b": ("llama/llama2_13b.yaml", 136),
            "llama2-70b": ("llama/llama2_70b.yaml", 136),
            "nemotron-8b": ("nemotron/nemotron_8b.yaml", 157),
            "nemotron-15b": ("nemotron/nemotron_15b.yaml", 157),
            "nemotron-22b": ("nemotron/nemotron_22b.yaml", 157),
        },
    ),
    "nemo-24.05": (
        "24.05",
        "599ecfcb",
        {
            "gpt3-20b": ("gpt3/20b.yaml", 149),
            "llama2-70b": ("llama/llama2_70b.yaml", 136),
            "llama3-70b": ("llama/llama3_70b.yaml", 135),
            "nemotron-8b": ("nemotron/nemotron_8b.yaml", 157),
            "nemotron-15b": ("nemotron/nemotron_15b.yaml", 157),
            "nemotron-22b": ("nemotron/nemotron_22b.yaml", 157),
        },
    ),
    "nemo-24.07": (
        "24.07",
        "8325688d",
        {"nemotron-15b": ("nemotron/nemotron_15b.yaml", 158), "llama3-405b": ("llama/llama3_1_405b.yaml", 137)},
    ),
}
for _source, (_tag, _commit, _models) in _NFL_EARLY.items():
    for _model, (_file, _line) in _models.items():
        _why = (
            f"NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/{_file}@{_commit} (tag {_tag}), "
            f"line {_line}: {_UB}"
        )
        _add(RECIPES, [(_source, _model)], (_TPO, _why))

# NeMo 24.09 and 24.12: the NeMo-Framework-Launcher tag of the same name (NeMo 1 YAML recipes, the releases'
# tested configurations; NeMo 2's performance scripts only appear in NVIDIA/NeMo v2.2.0, 25.02). Its
# config.yaml no longer sets NVTE_FUSED_ATTN (so no flash override: TE's default, cuDNN on H100), and no
# recipe sets fp8_params. UNCERTAIN: which stack ran these two tables is in no repository (24.09 ships NeMo
# 2.0.0: docs.nvidia.com/nemo-framework/user-guide/24.09/softwarecomponentversions.html). NeMo 2's recipes in
# performance mode (NVIDIA/NeMo nemo/collections/llm/recipes/*.py@e938df32, v2.0.0, and @633cb602, v2.1.0)
# agree on every flag below except GPT3-175B and Nemotron-340B, which they run with TP overlap (and
# Nemotron-340B with fp32 Adam state). Keyed by the hcsim preset (LLAMA3.1-70B folds to llama3-70b, whose
# launcher recipe llama3_1_70b.yaml sets the overlap too, line 140).
_NFL_TAGS = {"nemo-24.09": ("24.09", "35e43939"), "nemo-24.12": ("24.12", "5730fac6")}
_NFL_UB = {  # ub_tp_comm_overlap: true, with sequence_parallel: true; the line at both tags
    "gpt3-20b": ("gpt3/20b.yaml", 149),
    "llama2-70b": ("llama/llama2_70b.yaml", 140),
    "llama3-70b": ("llama/llama3_70b.yaml", 139),
    "llama3-405b": ("llama/llama3_1_405b.yaml", 140),
    "nemotron-8b": ("nemotron/nemotron_8b.yaml", 158),
    "nemotron-15b": ("nemotron/nemotron_15b.yaml", 158),
    "nemotron-22b": ("nemotron/nemotron_22b.yaml", 158),
}
for _source, (_tag, _commit) in _NFL_TAGS.items():
    for _model, (_file, _line) in _NFL_UB.items():
        _why = (
            f"NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/{_file}@{_commit} (tag {_tag}), "
            f"line {_line}: {_UB}"
        )
        _add(RECIPES, [(_source, _model)], (_TPO, _why))
_add(
    RECIPES,
    [("nemo-24.09", "nemotron-340b")],
    (
        ("--optimizer-dtype", "bf16", "--recompute", "selective"),
        "NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/nemotron/nemotron_340b.yaml@35e43939 "
        "(tag 24.09): line 122 activations_checkpoint_granularity: selective (Megatron's core_attn), lines "
        "159-162 optim distributed_fused_adam with dtype bf16 (Adam state in bf16 without an fp32 master: "
        "NVIDIA/NeMo nemo/collections/nlp/models/language_modeling/megatron_base_model.py@e938df32 (v2.0.0, "
        "the 24.09 container's NeMo) lines 781-809); ub_tp_comm_overlap: False (line 156)",
    ),
)
_add(
    RECIPES,
    [("nemo-24.12", "nemotron-340b")],
    (
        ("--recompute", "selective"),
        "NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/nemotron/nemotron_340b.yaml@5730fac6 "
        "(tag 24.12): line 122 activations_checkpoint_granularity: selective; optim mcore_distributed_optim "
        "(line 166), whose Adam state Megatron-Core keeps in fp32: NVIDIA/NeMo nemo/core/classes/modelPT.py@633cb602 "
        "lines 614-627 build its OptimizerConfig without the dtype: bf16 of line 170. Not set here: "
        "ub_tp_comm_overlap, given twice (line 139 True, line 164 False: a duplicate key OmegaConf refuses)",
    ),
)

# NeMo 25.02 to 25.09: NVIDIA/NeMo's NeMo 2 performance scripts (pretrain_<model>.py, the recommended
# model_configs_h100.csv, utils.py / helpers.py) at the version the container ships: 25.02 v2.2.0, 25.04
# v2.3.0, 25.07 v2.4.0 (the changelog's "perf scripts 25.07 refactor"), 25.09 NeMo 2.5.0 (Megatron-Bridge
# docs/releases/software-versions.md, "NeMo Framework 25.09"; the mirror holds tag v2.5.0rc0 and the release
# branch r2.5.0, cited here at its head). Every script runs pretrain_recipe(performance_mode=True) with
# sequence parallelism = tp > 1; executors set NVTE_FUSED_ATTN=1 (cuDNN attention, hcsim's default);
# the Adam state stays fp32 (Megatron-Core's default, no flag).
_NEMO2 = {
    "nemo-25.02": ("v2.2.0", "7192a2c9", "scripts/llm/performance"),
    "nemo-25.04": ("v2.3.0", "2b03b748", "scripts/performance/llm"),
    "nemo-25.07": ("v2.4.0", "2381f42f", "scripts/performance/llm"),
    "nemo-25.09": ("r2.5.0", "1b067109", "scripts/performance/llm"),
}
_NEMO2_TPO = {  # pretrain_performance_optimizations: MegatronCommOverlapCallback(tp_comm_overlap=True); same line
    "gpt3-175b": ("gpt3_175b.py", 230),
    "llama3-70b": ("llama3_70b.py", 232),
    "llama3-405b": ("llama31_405b.py", 239),
    "nemotron-8b": ("nemotron3_8b.py", 214),
    "nemotron-22b": ("nemotron3_22b.py", 213),
    "nemotron-15b": ("nemotron4_15b.py", 213),
    "nemotron-340b": ("nemotron4_340b.py", 213),
}
for _source, (_tag, _commit, _scripts) in _NEMO2.items():
    for _model, (_file, _line) in _NEMO2_TPO.items():
        _why = (
            f"NVIDIA/NeMo nemo/collections/llm/recipes/{_file}@{_commit} ({_tag}) line {_line}: "
            "MegatronCommOverlapCallback(tp_comm_overlap=True) in pretrain_performance_optimizations, which "
            f"{_scripts}/pretrain_*.py apply (performance_mode=True); the callback drops it when tp < 2"
        )
        _add(RECIPES, [(_source, _model)], (_TPO, _why))
for _source, _line in (("nemo-25.07", 75), ("nemo-25.09", 84)):  # Qwen3 scripts append the callback themselves
    _tag, _commit, _scripts = _NEMO2[_source]
    for _model, _file, _l in (
        ("qwen3-235b-a22b", "qwen3_235b_a22b", _line),
        ("qwen3-30b-a3b", "qwen3_30b_a3b", _line - 1),
    ):
        _why = (
            f"NVIDIA/NeMo {_scripts}/pretrain_{_file}.py@{_commit} ({_tag}) line {_l}: "
            "MegatronCommOverlapCallback(tp_comm_overlap=True) (dropped by the callback when tp < 2); the script "
            "resets the recipe's recomputation to none"
        )
        _add(RECIPES, [(_source, _model)], (_TPO, _why))
_add(
    RECIPES,
    [("nemo-25.04", "deepseek-v3")],
    (
        ("--recompute-modules", "mla_up_proj"),
        "NVIDIA/NeMo scripts/performance/recommended_model_configs/model_configs_h100.csv@2b03b748 (v2.3.0) "
        "line 29 (recompute_modules mla_up_proj), applied by scripts/performance/utils.py lines 218 and 358; "
        "scripts/performance/llm/pretrain_deepseek_v3.py line 65 sets recompute_granularity selective",
    ),
)
_add(
    RECIPES,
    [("nemo-25.07", "deepseek-v3")],
    (
        ("--recompute-modules", "mla_up_proj,mlp"),
        "NVIDIA/NeMo scripts/performance/recommended_model_configs/model_configs_h100.csv@2381f42f (v2.4.0) "
        "lines 33-34 (recompute_modules mla_up_proj/mlp), applied by scripts/performance/helpers.py lines 116 "
        "and 264 (selective). Run as the script's default it fails helpers.py's assertion (pretrain_deepseek_v3.py "
        "lines 60-64 reset the granularity unless --recompute_modules is given), so the run passed the modules; "
        "the CSV's are taken",
    ),
)
_add(
    RECIPES,
    [("nemo-25.09", "deepseek-v3")],
    (
        ("--recompute-modules", "mla_up_proj,mlp"),
        "NVIDIA/NeMo scripts/performance/recommended_model_configs/model_configs_h100.csv@1b067109 (r2.5.0) "
        "lines 33-34: recompute_modules mla_up_proj/mlp/moe (helpers.py lines 116 and 262; the same script "
        "caveat as 25.07). Megatron-Core's 'moe' (the whole MoE layer) has no hcsim module and is left out: "
        "the recomputation counted is a lower bound",
    ),
)
_NEMO2_FP8 = "fp8_param_gather = True"
for _source, (_tag, _commit, _scripts) in _NEMO2.items():
    if _source == "nemo-25.02":
        _why = (
            "NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py@7192a2c9 (v2.2.0) line 53 "
            "(bf16_with_fp8_mixed: fp8_params = True, which nemo/lightning/pytorch/plugins/mixed_precision.py "
            f"lines 99-105 turn into fp8_param_gather); {_scripts}/pretrain_*.py use it for fp8"
        )
        _add(PRECISION_RECIPES, [(_source, "fp8"), (_source, "fp8-ds")], (("--fp8-param-gather",), _why))
        continue
    _cs = 137 if _source == "nemo-25.09" else 135
    _why = (
        f"NVIDIA/NeMo nemo/collections/llm/recipes/precision/mixed_precision.py@{_commit} ({_tag}) line 70 "
        f"(bf16_with_fp8_mixed, the scripts' default --fp8_recipe ds: {_NEMO2_FP8}) and line {_cs} "
        f"(bf16_with_fp8_current_scaling_mixed, cs: {_NEMO2_FP8})"
    )
    _add(
        PRECISION_RECIPES, [(_source, "fp8"), (_source, "fp8-ds"), (_source, "fp8-cs")], (("--fp8-param-gather",), _why)
    )
_NEMO2_ETP = {  # the H100 pre-training rows of model_configs_h100.csv with etp_size 1
    "nemo-25.02": {"mixtral-8x22b": "lines 19-20"},
    "nemo-25.04": {"mixtral-8x22b": "lines 19-20", "deepseek-v3": "line 29"},
    "nemo-25.07": {"mixtral-8x22b": "lines 19-20", "deepseek-v3": "lines 33-34", "qwen3-30b-a3b": "line 47"},
    "nemo-25.09": {"mixtral-8x22b": "lines 19-20", "deepseek-v3": "lines 33-34", "qwen3-30b-a3b": "line 47"},
}
for _source in ("nemo-25.07", "nemo-25.09"):
    _NEMO2_ETP[_source]["qwen3-235b-a22b"] = "line 48"
for _source, _models in _NEMO2_ETP.items():
    _tag, _commit, _scripts = _NEMO2[_source]
    _csv = _scripts.removesuffix("/llm") + "/recommended_model_configs/model_configs_h100.csv"
    for _model, _lines in _models.items():
        _why = (
            f"NVIDIA/NeMo {_csv}@{_commit} ({_tag}) {_lines}: etp_size 1, which the scripts' "
            "set_primary_perf_configs pass to expert_tensor_parallel_size"
        )
        _add(SOURCE_ETP, [(_source, _model)], (1, _why))

# Megatron-Bridge: scripts/performance at the version each NeMo container ships (docs/releases/
# software-versions.md at @067f987d: 25.09 0.1.0rc3, 25.11 0.2.0, 26.02 0.3.0, 26.04 0.4.0, 26.06 0.5.0;
# known-issues.md: 26.02.01 = r0.3.1). The executors set no NVTE_FUSED_ATTN (cuDNN attention, hcsim's
# default). 25.11's own entries are above (cited at @00b7660b, the commit of that table).
_MB_CITE = "NVIDIA-NeMo/Megatron-Bridge {}@{} ({})"
_MB09 = ("megatron-bridge-25.09", "v0.1.0rc3", "bf71eba0")  # YAML perf matrix + run_script.py overrides
_MB09_S, _MB09_T, _MB09_C = _MB09


def _mb09(path: str, where: str) -> str:
    return _MB_CITE.format(path, _MB09_C, _MB09_T) + " " + where


_add(
    RECIPES,
    [(_MB09_S, "llama3-70b")],
    (
        _TPO,
        _mb09("src/megatron/bridge/recipes/llama/llama3_70b.py", "line 221: CommOverlapConfig(tp_comm_overlap=True)"),
    ),
)
_add(
    RECIPES,
    [(_MB09_S, "llama3-405b")],
    (
        _TPO,
        _mb09("src/megatron/bridge/recipes/llama/llama31_405b.py", "line 237: CommOverlapConfig(tp_comm_overlap=True)"),
    ),
)
_add(
    RECIPES,
    [(_MB09_S, "deepseek-v3")],
    (
        ("--recompute-modules", "mla_up_proj,mlp"),
        _mb09("scripts/performance/run_script.py", "lines 88-89 (H100: recompute_modules mla_up_proj, mlp)")
        + "; scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.yaml line 22 (selective)",
    ),
)
for _model, _line in (("qwen3-30b-a3b", 100), ("qwen3-235b-a22b", 107)):
    _add(
        RECIPES,
        [(_MB09_S, _model)],
        (
            _TPO,
            _mb09("scripts/performance/run_script.py", f"line {_line}: CommOverlapConfig(tp_comm_overlap=True)")
            + " (none when tp < 2); the model's YAML resets recomputation to null",
        ),
    )
for _precision, _line in (("fp8-ds", 197), ("fp8-cs", 268)):
    _add(
        PRECISION_RECIPES,
        [(_MB09_S, _precision)],
        (
            ("--fp8-param-gather",),
            _mb09("src/megatron/bridge/training/mixed_precision.py", f"line {_line}: fp8_param_gather = True")
            + " (scripts/performance/utils/helpers.py lines 92-103 pick it for fp8 with --fp8_recipe "
            + _precision[-2:]
            + ")",
        ),
    )
_add(
    SOURCE_ETP,
    [(_MB09_S,)],
    (
        1,
        _mb09("scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.yaml", "line 73")
        + ", qwen3/qwen3_30b_a3b_llm_pretrain.yaml line 68, qwen3/qwen3_235b_a22b_llm_pretrain.yaml line 69 "
        "(H100: etp: 1), applied by scripts/performance/utils/helpers.py line 163",
    ),
)

# 25.11: the models its table has beyond the vendored rows (same commit as the entries above).
_add(
    RECIPES,
    [("megatron-bridge-25.11", "deepseek-v3")],
    (
        ("--recompute-modules", "mla_up_proj,mlp"),
        _MB.format(
            "scripts/performance/configs/deepseek/deepseek_workload_base_configs.py",
            " line 86 (DEEPSEEK_V3_PRETRAIN_CONFIG_H100_BASE_CONFIG: recompute_modules mla_up_proj, mlp); "
            "scripts/performance/configs/deepseek/deepseek_llm_pretrain.py@00b7660b line 48 (selective)",
        ),
    ),
)
_add(
    RECIPES,
    [("megatron-bridge-25.11", "qwen3-30b-a3b")],
    (
        _TPO,
        _MB.format(
            "scripts/performance/configs/qwen/qwen3_llm_pretrain.py",
            " line 270 (H100: CommOverlapConfig(tp_comm_overlap=True); none when tp < 2); Qwen3-235B-A22B's H100 "
            "config sets it False (line 180)",
        ),
    ),
)

# 26.02 to 26.06: per-GPU workload base configs (scripts/performance/configs/*/*_workload_base_configs.py,
# applied by utils/overrides.py) on the library recipes. Lines per tag:
_MB26 = {
    "megatron-bridge-26.02": ("v0.3.0", "21b02e0c"),
    "megatron-bridge-26.02.01": ("v0.3.1", "9c9dd848"),
    "megatron-bridge-26.04": ("v0.4.0", "0fbfe7d3"),
    "megatron-bridge-26.06": ("v0.5.0", "fcbb6031"),
}
_MB26_LINES = {  # llama3.py 70b, 405b; llama3 8b recompute; overrides full/selective; gpt-oss; deepseek;
    # deepseek selective; qwen3-30b H100 overlap; mixed_precision fp8_cs
    "v0.3.0": (302, 416, 457, 138, 143, 82, 128, 34, 314, 289),
    "v0.3.1": (738, 1189, 457, 139, 144, 82, 128, 39, 313, 289),
    "v0.4.0": (738, 1189, 471, 140, 145, 82, 134, 39, 297, 294),
    "v0.5.0": (739, 1203, 476, 151, 156, 154, 170, 40, 372, 302),
}
for _source, (_tag, _commit) in _MB26.items():
    _l70, _l405, _l8, _lfull, _lsel, _loss, _lds, _ldsel, _lq, _lmp = _MB26_LINES[_tag]

    def _c(path: str, where: str, _commit: str = _commit, _tag: str = _tag) -> str:
        return _MB_CITE.format(path, _commit, _tag) + " " + where

    _llama = "src/megatron/bridge/recipes/llama/llama3.py"
    _h100 = "; scripts/performance/configs/llama/{}_llm_pretrain.py keeps it on H100"
    _add(
        RECIPES,
        [(_source, "llama3-70b")],
        (_TPO, _c(_llama, f"line {_l70} (llama3_70b_pretrain_config: tp_comm_overlap=True)") + _h100.format("llama3")),
    )
    _add(
        RECIPES,
        [(_source, "llama3-405b")],
        (
            _TPO,
            _c(_llama, f"line {_l405} (llama31_405b_pretrain_config: tp_comm_overlap=True)") + _h100.format("llama31"),
        ),
    )
    _add(
        RECIPES,
        [(_source, "llama3-8b", "fp8-cs")],
        (
            ("--recompute", "full", "--recompute-num-layers", "5"),
            _c(
                "scripts/performance/configs/llama/llama3_workload_base_configs.py",
                f"line {_l8} (LLAMA3_8B_PRETRAIN_CONFIG_H100_FP8_CS: recompute_num_layers=5); "
                f"scripts/performance/utils/overrides.py lines {_lfull}-{_lfull + 1} (full, block)",
            ),
        ),
    )
    _add(
        RECIPES,
        [(_source, "gpt-oss-120b")],
        (
            ("--recompute-modules", "layernorm,moe_act"),
            _c(
                "scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py",
                f"line {_loss} (GPT_OSS_120B_PRETRAIN_CONFIG_H100: recompute_modules layernorm, moe_act); "
                f"scripts/performance/utils/overrides.py line {_lsel} (selective)",
            ),
        ),
    )
    _add(
        RECIPES,
        [(_source, "deepseek-v3")],
        (
            ("--recompute-modules", "mla_up_proj,mlp"),
            _c(
                "scripts/performance/configs/deepseek/deepseek_workload_base_configs.py",
                f"line {_lds} (DEEPSEEK_V3_PRETRAIN_CONFIG_H100: recompute_modules mla_up_proj, mlp); "
                f"deepseek_llm_pretrain.py line {_ldsel} (selective)",
            ),
        ),
    )
    _add(
        RECIPES,
        [(_source, "qwen3-30b-a3b")],
        (
            _TPO,
            _c(
                "scripts/performance/configs/qwen/qwen3_llm_pretrain.py",
                f"line {_lq} (H100: CommOverlapConfig(tp_comm_overlap=True); none when tp < 2; "
                "Qwen3-235B-A22B's H100 config sets it False)",
            ),
        ),
    )
    _add(
        PRECISION_RECIPES,
        [(_source, "fp8-cs")],
        (
            ("--fp8-param-gather",),
            _c(
                "src/megatron/bridge/training/mixed_precision.py",
                f"line {_lmp} (bf16_with_fp8_current_scaling_mixed: fp8_param_gather = True), picked for fp8_cs "
                "by scripts/performance/utils/precision.py line 28 (fp8_sc keeps bf16 parameters)",
            ),
        ),
    )
    _add(
        SOURCE_ETP,
        [(_source,)],
        (
            1,
            _c(
                "scripts/performance/configs/deepseek/deepseek_workload_base_configs.py",
                "line 33, gpt_oss/gpt_oss_workload_base_configs.py and qwen/qwen3_workload_base_configs.py "
                "(BASE_* configs: expert_tensor_parallel_size=1), applied by scripts/performance/utils/overrides.py "
                "set_workload_base_configs",
            ),
        ),
    )

#: The loss's kernels a release's recipe runs (Megatron-Core's cross_entropy_loss_fusion and, from 2025,
#: cross_entropy_fusion_impl), as ``--cross-entropy``; by (source, model), else (source,); a source not listed
#: keeps Megatron-Core's default (unfused). NeMo 1 launcher configs set ``cross_entropy_loss_fusion: true`` per
#: model (mcore's fusion then is the jit-fused "native" one); NeMo 2's GPTConfig and Megatron-Bridge's
#: GPTModelProvider default it to True, and their performance scripts choose Transformer Engine's kernel.
KERNEL_RECIPES: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {}
_LLAMA2_CE = {"llama2-7b": ("llama/llama2_7b.yaml", 128), "llama2-13b": ("llama/llama2_13b.yaml", 128),
              "llama2-70b": ("llama/llama2_70b.yaml", 129)}  # fmt: skip
_NFL_CE = {  # tag -> (commit, {model: (file, line)}): cross_entropy_loss_fusion: true
    "nemo-24.07": ("8325688d", {}),
    "nemo-24.09": ("35e43939", dict(_LLAMA2_CE)),
    "nemo-24.12": ("5730fac6", dict(_LLAMA2_CE)),
}
for _source, (_commit, _models) in _NFL_CE.items():
    _models.update({
        "llama3-8b": ("llama/llama3_8b.yaml", 94), "llama3-70b": ("llama/llama3_70b.yaml", 109),
        "llama3.1-8b": ("llama/llama3_1_8b.yaml", 94), "llama3.1-70b": ("llama/llama3_1_70b.yaml", 110),
        "llama3.1-405b": ("llama/llama3_1_405b.yaml", 110), "nemotron-8b": ("nemotron/nemotron_8b.yaml", 114),
        "nemotron-15b": ("nemotron/nemotron_15b.yaml", 114), "nemotron-22b": ("nemotron/nemotron_22b.yaml", 114),
    })  # fmt: skip
    for _model, (_file, _line) in _models.items():
        _why = (
            f"NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/{_file}@{_commit}, line {_line}: "
            "cross_entropy_loss_fusion: true (Megatron-Core's jit-fused megatron/core/fusions/fused_cross_entropy.py)"
        )
        _add(KERNEL_RECIPES, [(_source, _model)], (("--cross-entropy", "native"), _why))
_CE_DEFAULT = "cross_entropy_loss_fusion = True; Megatron-Core's cross_entropy_fusion_impl default 'native'"
_CE_PERF = "set_perf_optimization_configs sets cross_entropy_fusion_impl = 'te'; cross_entropy_loss_fusion = True"
_NEMO2_CE = {
    "nemo-25.02": ("native", f"nemo/collections/llm/gpt/model/base.py@7192a2c9 (v2.2.0) line 184: {_CE_DEFAULT}"),
    "nemo-25.04": ("native", f"nemo/collections/llm/gpt/model/base.py@2b03b748 (v2.3.0) line 290: {_CE_DEFAULT}"),
    "nemo-25.07": ("te", f"scripts/performance/helpers.py@2381f42f (v2.4.0) line 311: {_CE_PERF} (base.py line 301)"),
    "nemo-25.09": ("te", f"scripts/performance/helpers.py@1b067109 (r2.5.0) line 367: {_CE_PERF} (base.py line 301)"),
}  # fmt: skip
for _source, (_impl, _where) in _NEMO2_CE.items():
    _add(KERNEL_RECIPES, [(_source,)], (("--cross-entropy", _impl), "NVIDIA/NeMo " + _where))
_add(
    KERNEL_RECIPES,
    [("nemo-25.04", "deepseek-v3")],
    (("--cross-entropy", "te"), "NVIDIA/NeMo scripts/performance/llm/pretrain_deepseek_v3.py@2b03b748 (v2.3.0) "
     "line 68: cross_entropy_fusion_impl = 'te'"),
)  # fmt: skip
_add(
    KERNEL_RECIPES,
    [(_MB09_S,)],
    (("--cross-entropy", "native"), _mb09("src/megatron/bridge/models/gpt_provider.py", f"line 152: {_CE_DEFAULT}")),
)  # fmt: skip
for _model, _file, _line in (
    ("llama3-8b", "llama3/llama3_8b_llm_pretrain.yaml", 17), ("llama3-70b", "llama3/llama3_70b_llm_pretrain.yaml", 21),
    ("llama3.1-405b", "llama31/llama31_405b_llm_pretrain.yaml", 21),
    ("deepseek-v3", "deepseek/deepseek_v3_llm_pretrain.yaml", 20),
    ("qwen3-30b-a3b", "qwen3/qwen3_30b_a3b_llm_pretrain.yaml", 17),
    ("qwen3-235b-a22b", "qwen3/qwen3_235b_a22b_llm_pretrain.yaml", 17),
):  # fmt: skip
    _add(KERNEL_RECIPES, [(_MB09_S, _model)], (("--cross-entropy", "te"), _mb09(
        f"scripts/performance/configs/{_file}", f"line {_line}: cross_entropy_fusion_impl: te")))  # fmt: skip
for _source, _commit, _line in (
    ("megatron-bridge-25.11", "00b7660b", 55), ("megatron-bridge-26.02", "21b02e0c", 64),
    ("megatron-bridge-26.02.01", "9c9dd848", 65), ("megatron-bridge-26.04", "0fbfe7d3", 66),
    ("megatron-bridge-26.06", "fcbb6031", 70),
):  # fmt: skip
    _add(KERNEL_RECIPES, [(_source,)], (("--cross-entropy", "te"), (
        f"NVIDIA-NeMo/Megatron-Bridge scripts/performance/utils/overrides.py@{_commit} line {_line}: "
        "cross_entropy_fusion_impl = 'te' (GPTModelProvider: cross_entropy_loss_fusion = True)")))  # fmt: skip
#: Every row whose CSV precision is FP8-CS ran Transformer Engine's current-scaling recipe (the column names it).
FP8_CS_RECIPE: tuple[tuple[str, ...], str] = (
    ("--fp8-recipe", "current"),
    "FP8-CS is Transformer Engine's Float8CurrentScaling (an amax pass and a scale kernel before each cast: "
    "NVIDIA/TransformerEngine transformer_engine/pytorch/csrc/quantizer.cpp@d0067d0d lines 980-1030); "
    "Megatron-Bridge scripts/performance/utils/precision.py@00b7660b line 28 (fp8_cs: "
    "bf16_with_fp8_current_scaling_mixed)",
)
_NFL_ALL = (("nemo-24.01", "cf411a9e"), ("nemo-24.03", "d4ec7c8b"), ("nemo-24.05", "599ecfcb"),
            ("nemo-24.07", "8325688d"), ("nemo-24.09", "35e43939"), ("nemo-24.12", "5730fac6"))  # fmt: skip
for _source, _commit in _NFL_ALL:
    for _size in ("5b", "20b", "175b"):
        _add(KERNEL_RECIPES, [(_source, f"gpt3-{_size}")], (("--hidden-dropout",), (
            f"NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/gpt3/{_size}.yaml@{_commit}, line 74: "
            "hidden_dropout: 0.1 (and attention_dropout: 0.1, inside the attention kernel: not timed)")))  # fmt: skip
