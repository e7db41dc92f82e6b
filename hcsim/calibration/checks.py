"""The calibration's check tables: the models against public measurements they were NOT fitted to.

* ``gemm_validation_rows``: DeepGEMM's FP8 table (H800 SXM5 = H100 SXM compute and HBM) against
  :func:`~hcsim.calibration.compute.gemm_seconds` (kernel time, no launch: DeepGEMM times kernels).
* ``attention_check_rows``: Transformer Engine's own attention benchmark (cuDNN fused attention and FA2,
  forward + backward kernel time on H100 SXM) against
  :func:`~hcsim.calibration.compute.attention_seconds`.
* ``nccl_check_rows``: nccl-tests bus bandwidths and small-message latencies (research notes
  section 5) against :func:`~hcsim.calibration.nccl.nccl_time` at NCCL's own choice.

Each row carries the tolerance the test holds it to; rows beyond 15% say so in the table.
``python -m hcsim.calibration.checks`` prints the markdown that docs/calibration.md embeds.
"""

from __future__ import annotations

from dataclasses import dataclass

from hcsim.calibration.compute import attention_seconds, gemm_seconds
from hcsim.calibration.nccl import bus_factor, nccl_select, nccl_time
from hcsim.calibration.schema import load_calibration

__all__ = ["CheckRow", "attention_check_rows", "gemm_validation_rows", "markdown", "nccl_check_rows"]

_DG = "DeepGEMM@327ec92:README.md (H800 SXM5, FP8 1x128 scaling)"
# (M, N, K, measured TFLOP/s) from the research notes' copy of the DG table
_DEEPGEMM = (
    (64, 2112, 7168, 206), (64, 24576, 1536, 289), (64, 32768, 512, 219),
    (64, 7168, 16384, 336), (64, 4096, 7168, 287), (64, 7168, 2048, 295),
    (128, 2112, 7168, 352), (128, 24576, 1536, 535), (128, 32768, 512, 358),
    (128, 7168, 16384, 645), (128, 4096, 7168, 533), (128, 7168, 2048, 510),
    (4096, 2112, 7168, 1127), (4096, 24576, 1536, 1212), (4096, 32768, 512, 775),
    (4096, 7168, 16384, 1520), (4096, 4096, 7168, 1410), (4096, 7168, 2048, 1168),
)  # fmt: skip


@dataclass(frozen=True)
class CheckRow:
    """One measured point, the model's prediction, and the tolerance the test holds it to."""

    what: str
    measured: float
    predicted: float
    unit: str
    source: str
    tolerance: float  # |error| allowed by tests/calibration (0.15 unless the row says why not)
    note: str = ""

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


def _tiles(m: int, n: int, calib) -> int:
    tm, tn = calib.tiles[0]
    return -(-m // tm) * -(-n // tn)


def gemm_validation_rows() -> list[CheckRow]:
    """DeepGEMM FP8 rows against the GEMM model on ``dgx-h100`` (nothing was fitted to them)."""
    calib = load_calibration("dgx-h100")
    rows = []
    for m, n, k, measured in _DEEPGEMM:
        t = gemm_seconds(m, n, k, "fp8", calib, launch=False)
        notes = []
        if _tiles(m, n, calib) < calib.sms:
            notes.append(f"one partial wave ({_tiles(m, n, calib)} tiles < {calib.sms} SMs)")
        nbytes = m * k + k * n + 2 * m * n  # FP8 in, BF16 out
        if nbytes / calib.hbm_achieved >= t:
            notes.append("memory-bound in the model")
        note = "; ".join(notes)
        rows.append(CheckRow(f"{m} x {n} x {k}", measured, 2.0 * m * n * k / t / 1e12, "TFLOP/s", _DG, 0.75, note))
    return rows


_TE_ATTN = (
    "TransformerEngine@08a85d3b:docs/examples/attention/attention.ipynb "
    "(H100 80GB HBM3, TE 1.10, cuDNN 9.3; nsys kernel time, fwd + bwd, mean of 3)"
)
# (name, batch, seq, heads, head_dim, measured ms fwd + bwd of cuDNN, of FlashAttention-2, tolerance, note):
# the notebook's test_1 and test_3
_TE_ATTN_ROWS = (
    ("test_1: b2 h16 d128 s2048 causal", 2, 2048, 16, 128, 0.3664, 0.5850, 0.35,
     "64 CTAs of 128 query rows x 16 heads x 2 (a third of a wave per CTA slot): launch- and fill-bound; "
     "the model does not time grid under-fill"),
    ("test_3: b2 h32 (GQA 4) d128 s8192 causal", 2, 8192, 32, 128, 7.4875, 11.8879, 0.15, ""),
)  # fmt: skip


def attention_check_rows(machine: str = "dgx-h100") -> list[CheckRow]:
    """TE's attention benchmark (BF16, causal) against the attention model: cuDNN fused attention (the
    ``attention`` tables), then FlashAttention-2 (``attention_flash``, ``--attention-backend flash``)."""
    calib = load_calibration(machine)
    rows = []
    for backend, label in (("auto", "cuDNN"), ("flash", "FA2")):
        kernel = calib.with_attention(backend)
        for what, b, s, h, d, cudnn_ms, fa2_ms, tol, note in _TE_ATTN_ROWS:
            shape = (b, s, s, h, d, True)
            passes = (attention_seconds(shape, p, kernel, launch=False) for p in ("fwd", "bwd"))
            ms = 1e3 * sum(passes)
            measured = cudnn_ms if backend == "auto" else fa2_ms
            name, _, rest = what.partition(":")
            rows.append(CheckRow(f"{name}: {label},{rest}", measured, ms, "ms", _TE_ATTN, tol, note))
    return rows


def _busbw(kind: str, nbytes: int, ranks: int, nodes: int, machine: str) -> tuple[float, str]:
    calib = load_calibration(machine)
    algo, proto = nccl_select(kind, nbytes, ranks, nodes, calib)
    seconds = nccl_time(kind, nbytes, ranks, nodes, algo, proto, calib)[0]
    return nbytes / seconds * bus_factor(kind, ranks) / 1e9, f"{algo}/{proto}"


def _latency_us(kind: str, nbytes: int, ranks: int, nodes: int, machine: str) -> tuple[float, str]:
    calib = load_calibration(machine)
    algo, proto = nccl_select(kind, nbytes, ranks, nodes, calib)
    return nccl_time(kind, nbytes, ranks, nodes, algo, proto, calib)[0] * 1e6, f"{algo}/{proto}"


def nccl_check_rows() -> list[CheckRow]:
    """nccl-tests measurements (research notes section 5) against NCCL's model at NCCL's choice."""
    gib = 1 << 30
    rows = []

    def add(what, measured, value_algo, unit, source, tolerance=0.15, note=""):
        value, algo = value_algo
        rows.append(CheckRow(f"{what} [{algo}]", measured, value, unit, source, tolerance, note))

    h100, a100 = "dgx-h100", "dgx-a100"
    # ring with NVLS off: the same model restricted to NCCL_ALGO=ring
    calib = load_calibration(h100)
    proto = min(("LL", "LL128", "Simple"), key=lambda p: nccl_time("allreduce", 4 * gib, 8, 1, "ring", p, calib)[0])
    t = nccl_time("allreduce", 4 * gib, 8, 1, "ring", proto, calib)[0]
    add(
        "8x H100 allreduce busbw, NVLS off, 4 GiB",
        367.5,
        (4 * gib / t * bus_factor("allreduce", 8) / 1e9, f"ring/{proto}"),
        "GB/s",
        "nccl #1455, nccl-tests #212 (365-370)",
    )
    add(
        "8x H100 allreduce busbw, 8 GiB",
        480,
        _busbw("allreduce", 8 * gib, 8, 1, h100),
        "GB/s",
        "nccl #1455, nccl-tests #212/#290 (~480, algbw ~275)",
        0.20,
        "NVLS: NCCL's graph bandwidth for NVLS is not known; the model uses the NVLink bus (370.8) x 0.85",
    )
    for gpus, measured in ((4, 370), (5, 420), (6, 440), (7, 460)):
        add(
            f"{gpus}x H100 allreduce busbw (NVLS ramp), large",
            measured,
            _busbw("allreduce", 8 * gib, gpus, 1, h100),
            "GB/s",
            "nccl #1455 (4: 370, 5: 420, 6: 440, 7: 460)",
            0.30,
            "NVLS on fewer GPUs: NCCL used ring at 4 GPUs; the model keeps NVLS",
        )
    add(
        "8x A100 allreduce busbw, large",
        232,
        _busbw("allreduce", 8 * gib, 8, 1, a100),
        "GB/s",
        "GTC24 S62129 (232); ML case study 235; nccl-tests #228 220",
    )
    add(
        "DGX-H100 4 nodes (32 GPUs) allreduce busbw, large",
        370,
        _busbw("allreduce", 8 * gib, 32, 4, h100),
        "GB/s",
        "GTC25 slide (32 GPUs, 8x400G NDR per node)",
    )
    add(
        "DGX-H100 2 nodes (16 GPUs) allreduce busbw, large",
        380,
        _busbw("allreduce", 8 * gib, 16, 2, h100),
        "GB/s",
        "GTC24 S62129 (multi-node, node count not recorded; compared at 2 nodes)",
        0.25,
        "NVLSTree doubles the NIC term on <= 2 nodes (tuning.cc); the measured run may use more nodes",
    )
    add(
        "DGX-A100 4 nodes allreduce busbw, large",
        192,
        _busbw("allreduce", 8 * gib, 32, 4, a100),
        "GB/s",
        "GTC24/GTC25 (8x200G HDR per node; node count not recorded)",
    )
    add(
        "NDR 400G per NIC, ring, 2 nodes x 1 GPU",
        47,
        _busbw("allreduce", 8 * gib, 2, 2, h100),
        "GB/s",
        "nccl-tests #290 (46-48 of 50)",
    )
    add(
        "one 200G HDR NIC allreduce, 2 nodes x 1 GPU",
        24,
        _busbw("allreduce", 8 * gib, 2, 2, a100),
        "GB/s",
        "GTC24 S62129 (single 200G NIC: 24)",
    )
    for size, measured in ((8, 12.5), (1024, 16.4), (4096, 16.7)):
        add(
            f"8-GPU allreduce time, {size} B",
            measured,
            _latency_us("allreduce", size, 8, 1, h100),
            "us",
            "DeepEP #303 nccl-tests output (H20 x8: Hopper, NVLink4/NVSwitch; not H100)",
            0.25,
            "an H20 node, not H100; NCCL's model has one latency for all three sizes",
        )
    return rows


def _table(rows: list[CheckRow], value_unit: str) -> str:
    lines = [
        f"| case | measured ({value_unit}) | predicted | error | within | source | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        flag = f"{r.tolerance:.0%}" + (" (OFF >15%)" if abs(r.error) > 0.15 else "")
        lines.append(
            f"| {r.what} | {r.measured:g} | {r.predicted:.1f} | {r.error:+.1%} | {flag} | {r.source} | {r.note} |"
        )
    return "\n".join(lines)


def _summary(rows: list[CheckRow]) -> str:
    errs = sorted(abs(r.error) for r in rows)
    n = len(errs)
    median = errs[n // 2] if n % 2 else (errs[n // 2 - 1] + errs[n // 2]) / 2
    off = sum(e > 0.15 for e in errs)
    return f"{n} rows: median |error| {median:.1%}, max {errs[-1]:.1%}; {off} rows beyond 15%."


def markdown() -> str:
    """Both tables as docs/calibration.md embeds them (regenerated and compared by the tests)."""
    gemm = gemm_validation_rows()
    attention = attention_check_rows()
    nccl = nccl_check_rows()
    return "\n".join(
        [
            "<!-- generated by `python -m hcsim.calibration.checks`; tests/calibration compare it -->",
            "### VALIDATION: GEMM model vs DeepGEMM FP8 (dgx-h100, kernel time)",
            "",
            _table(gemm, "TFLOP/s"),
            "",
            _summary(gemm),
            "",
            *(f"* M = {m}: " + _summary([r for r in gemm if r.what.startswith(f"{m} x")]) for m in (64, 128, 4096)),
            "",
            "### CHECK: attention model vs Transformer Engine's attention benchmark (cuDNN, fwd + bwd)",
            "",
            _table(attention, "ms"),
            "",
            _summary(attention),
            "",
            "### CHECK: NCCL model vs nccl-tests",
            "",
            _table(nccl, "GB/s or us"),
            "",
            _summary(nccl),
            "<!-- end generated -->",
        ]
    )


if __name__ == "__main__":  # pragma: no cover
    print(markdown())
