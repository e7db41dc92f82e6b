"""Calibration files: every shipped number has a source; the loader refuses bad files in one line."""

from __future__ import annotations

import dataclasses
from importlib import resources

import pytest
import yaml

from hcsim.calibration import CALIBRATIONS, load_calibration, parse_calibration
from hcsim.errors import HcsimError

SHIPPED = [name for name in CALIBRATIONS if name != "ideal"]


def _text(name: str) -> str:
    return (resources.files("hcsim.calibration") / "data" / f"{name}.yaml").read_text(encoding="utf-8")


def _leaves(node, path=""):
    """Every entry of the raw YAML, found independently of the loader: a mapping holding 'value'."""
    if isinstance(node, dict):
        if "value" in node:
            yield path, node
            return
        for key, child in node.items():
            yield from _leaves(child, f"{path}.{key}" if path else key)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_entry_has_a_source(name):
    raw = yaml.safe_load(_text(name))
    leaves = list(_leaves({k: v for k, v in raw.items() if k not in ("sources", "name", "description")}))
    assert len(leaves) > 50
    for path, entry in leaves:
        assert isinstance(entry.get("source"), str) and len(entry["source"].strip()) > 10, path
        assert entry.get("unit"), path
    calib = load_calibration(name)
    assert set(calib.entries) == {p for p, _ in leaves}
    assert all(e.source.strip() for e in calib.entries.values())


#: the one NeMo file kind a calibration may cite: the launcher's userbuffers configs (SM counts, no throughput)
UB_CONFIG = (
    "nvidia/nemo-framework-launcher@26e42fa91d9e608897ce485b4911c263a4b57008:"
    "launcher_scripts/conf/training/tp_overlap/ub_cfg_"
)

#: ... and the launcher's global config, for the one setting it holds that picks a kernel (NVTE_FUSED_ATTN)
LAUNCHER_CONFIG = (
    "nvidia/nemo-framework-launcher@8325688d8345a5513660f0f8390f0482a721c009 (tag 24.07):"
    "launcher_scripts/conf/config.yaml"
)


def test_no_source_is_end_to_end_training_throughput():
    for name in SHIPPED:
        for entry in load_calibration(name).entries.values():
            text = (entry.source + " " + entry.note).lower()
            if entry.path.startswith("tp_overlap.") and UB_CONFIG in text:  # a config file's SM count or chunks
                assert entry.unit == "count" and "tokens" not in text, (name, entry.path)
                text = text.replace(UB_CONFIG, "")
            if entry.path == "attention_flash.kernel" and LAUNCHER_CONFIG in text:  # which kernel, not how fast
                assert entry.unit == "text", (name, entry.path)
                text = text.replace(LAUNCHER_CONFIG, "")
            for banned in ("tokens/s", "nemo", "performance summary", "measured/"):
                assert banned not in text, (name, entry.path)


def test_loaded_values_in_si():
    h = load_calibration("dgx-h100")
    assert h.peak["fp8"] == 1979e12 and h.peak["bf16"] == 989.4e12
    assert h.hbm_capacity == 80 * 2**30 and h.hbm_bandwidth == 3350e9
    assert h.nic_line_rate == 50e9 and h.launch == pytest.approx(2.5e-6)
    assert h.base_latency["ring"] == pytest.approx((6.6e-6, 14.0e-6, 8.4e-6))
    assert h.tiles == ((128, 256),) and h.sms == 132 and isinstance(h.sms, int)
    assert h.attention_fwd[(128, True)][3] == 518e12  # cuDNN, TE's kernel on sm90
    assert (64, True) in h.attention_bwd or (64, False) in h.attention_bwd
    a = load_calibration("dgx-a100")
    assert "fp8" not in a.peak and not a.nvls_available
    assert load_calibration("ideal") is None


def test_results_are_frozen():
    calib = load_calibration("dgx-h100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        calib.sms = 1
    with pytest.raises(TypeError):
        calib.peak["bf16"] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        calib.entries["device.sms"].value = 1


def test_user_yaml_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(_text("dgx-h100").replace("value: 132, unit: count", "value: 114, unit: count"))
    calib = load_calibration(str(path))
    assert calib.sms == 114 and calib.path == str(path)


def _edit(old: str, new: str, name: str = "dgx-h100") -> str:
    text = _text(name)
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("  sms: {", "  smz: {", "unknown key 'device.smz' (valid keys here: name, peak, hbm_capacity"),
        (
            "memory:\n",
            "memory:\n  bandwidth_x: {value: 1, unit: GB/s, source: x}\n",
            "unknown key 'memory.bandwidth_x'",
        ),
        ("value: 132, unit: count, source: *ML_accel", "value: 132, unit: count", "device.sms: entry has no source"),
        (
            "value: 132, unit: count, source: *ML_accel",
            "value: 132, unit: count, source: ' '",
            "device.sms: entry has no",
        ),
        ("value: 132, unit: count", "value: 132, unit: SMs", "device.sms: unit 'SMs' is invalid (valid: count)"),
        ("value: 132, unit: count", "value: -132, unit: count", "device.sms: value -132 is negative"),
        ("value: 132, unit: count", "value: 13.5, unit: count", "device.sms: value 13.5 is not an integer count"),
        ("value: 132, unit: count", "value: '132', unit: count", "device.sms: value '132' is not a finite number"),
        ("value: 2.5, unit: us", "value: 2.5, unit: parsecs", "launch.kernel: unit 'parsecs' is invalid (valid: s, ms"),
        ("value: true, unit: bool, source: *MMBG", "value: 1, unit: bool, source: *MMBG", "is not a boolean"),
        ("value: 0.85, unit: fraction", "value: 1.5, unit: fraction", "nccl.nvls_efficiency: 1.5 is a fraction"),
        ("value: [6.6, 14.0, 8.4]", "value: [6.6, 14.0]", "nccl.base_latency.ring: value [6.6, 14.0] must have 3"),
        ("launch:\n  kernel:", "launch:\n  kernels:", "unknown key 'launch.kernels' (valid keys here: kernel)"),
        ("name: dgx-h100\n", "name: dgx-h100\nname2: x\n", "unknown key 'name2' (valid keys: name, description"),
        (
            "  hbm_capacity: {value: 80, unit: GiB,",
            "  hbm_capacity: {value: 80, unit: GiB, color: red,",
            "unknown key 'color'",
        ),
        (
            "memory:\n  hbm_achieved",
            "memory:\n  hbm_bandwidth: {value: 1, unit: GB/s, source: x}\n  hbm_achieved",
            "unknown key 'memory.hbm_bandwidth'",
        ),
        (
            '  sms: {value: 132, unit: count, source: *ML_accel, note: "132 SMs, 528 tensor cores"}\n',
            "",
            "missing key 'device.sms'",
        ),
        ("name: dgx-h100\n", "name: dgx-h100\nname: again\n", "duplicate key 'name'"),
        ("    fp8: {value: 1979,", "    bf16: {value: 1979,", "duplicate key 'bf16'"),
        ("value: [335, 373, 395, 408, 412, 413]", "value: [335, 373]", "2 values for 6 seqlens"),
        ("value: [512, 1024,", "value: [1024, 512,", "attention.seqlens"),
        (
            '    fp8: {value: 1979, unit: TFLOP/s, source: *ML_accel, note: "dense (datasheet prints 3958 '
            'with sparsity)"}\n',
            "",
            "device.peak.fp8 and gemm.max_fraction.fp8 go together",
        ),
    ],
)
def test_bad_file_is_one_line(old, new, message):
    with pytest.raises(HcsimError) as err:
        parse_calibration(_edit(old, new), "test.yaml")
    text = str(err.value)
    assert message in text and "\n" not in text


def test_not_yaml_and_not_mapping():
    with pytest.raises(HcsimError, match="not valid YAML"):
        parse_calibration("a: [1, 2", "x.yaml")
    with pytest.raises(HcsimError, match="not a YAML mapping"):
        parse_calibration("- 1\n", "x.yaml")


def test_unknown_machine_lists_valid_names(tmp_path):
    with pytest.raises(HcsimError) as err:
        load_calibration("dgx-h200")
    assert "dgx-h100, dgx-a100, ideal, or a path to a .yaml file" in str(err.value)
    with pytest.raises(HcsimError, match="cannot read"):
        load_calibration(str(tmp_path / "absent.yaml"))
