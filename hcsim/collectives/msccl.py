"""MSCCL-IR XML (the format msccl-tools emits and the MSCCL executor runs) as a collective algorithm.

A workload names a file as its ``algorithm`` (any path ending in ``.xml``, e.g.
``"examples/collectives/allreduce_ring_2ch_4gpus.xml"``); :func:`read_msccl` turns it
into a registry :class:`~hcsim.collectives.table.Algorithm` whose schedule runs as
real flows. MSCCL gpu i is the i-th rank of the scope; a chunk is S / ``nchunksperloop``
bytes; the steps of a threadblock run in order and also wait for their ``depid``/``deps``
step; a sending step is one flow of ``cnt`` chunks to the threadblock's ``send`` peer,
matched to the receive of the same rank on the peer and channel; local steps take no
time. Protocols, slicing into protocol-sized pieces, channels beyond matching, compute
time and flow control are not modelled.

Invariants: a file is parsed without entity expansion or network access; a bad file
(missing, malformed, a wrong ``coll`` or ``ngpus``, unknown steps, peers or offsets out
of range, unmatched sends, cycles, a schedule that does not deliver what its kind
promises) is one line naming the file and the gpu / threadblock / step.

Guide: docs/collectives.md, "MSCCL-IR files" (every rule, what is ignored, examples).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict, deque
from dataclasses import dataclass, field

from lxml import etree

from hcsim.collectives.check import check_schedule
from hcsim.collectives.schedule import Schedule
from hcsim.collectives.table import Algorithm
from hcsim.collectives.view import TopologyView
from hcsim.errors import HcsimError

__all__ = ["COLLECTIVES", "STEP_TYPES", "MscclProgram", "parse_msccl", "read_msccl"]

#: MSCCL ``coll`` names -> hcsim kinds
COLLECTIVES = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reducescatter": "reduce_scatter",
    "alltoall": "alltoall",
    "broadcast": "broadcast",
    "reduce": "reduce",
}
SENDS = frozenset({"s", "rcs", "rrs", "rrcs"})
RECEIVES = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})
LOCAL = frozenset({"cpy", "re", "nop"})
STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
BUFFERS = ("i", "o", "s")


@dataclass
class _Step:
    gpu: int
    tb: int
    s: int
    type: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int

    def __str__(self) -> str:
        return f"gpu {self.gpu} tb {self.tb} step {self.s} ({self.type})"


@dataclass
class _Flow:
    src: int
    dst: int
    cnt: int
    after: frozenset[int]
    labels: tuple  # per chunk: the shard it carries, or None
    step: _Step


@dataclass
class MscclProgram:
    """A parsed, validated MSCCL-IR file: flows between gpu indices, in chunks."""

    path: str
    name: str
    kind: str
    ngpus: int
    chunks: int  # nchunksperloop
    shards: int  # for the data-movement check (0: none)
    flows: list[_Flow] = field(default_factory=list)
    depth: int = 0

    def schedule(self, ranks: list[str], nbytes: float) -> Schedule:
        """The schedule over ``ranks`` (gpu i is ranks[i]) for ``nbytes`` of collective data."""
        if len(ranks) != self.ngpus:
            raise HcsimError(
                f"MSCCL-IR file '{self.path}' is written for {self.ngpus} GPUs, the scope has {len(ranks)} ranks "
                f"(valid: a scope of {self.ngpus} ranks)"
            )
        chunk = nbytes / self.chunks
        sch = Schedule(self.kind, list(ranks), shards=self.shards, steps=self.depth, name=self.path)
        for f in self.flows:
            shards = sorted({x for x in f.labels if x is not None})
            sch.add(ranks[f.src], ranks[f.dst], f.cnt * chunk, sorted(f.after), shards)
        return sch


def _fail(path: str, what: str) -> HcsimError:
    return HcsimError(f"MSCCL-IR file '{path}': {what}")


def _int(path: str, el, attr: str, where: str, default: int | None = None) -> int:
    raw = el.get(attr)
    if raw is None:
        if default is not None:
            return default
        raise _fail(path, f"{where} has no '{attr}' attribute (valid: an integer)")
    try:
        return int(raw)
    except ValueError:
        raise _fail(path, f"{where} has {attr}={raw!r} (valid: an integer)") from None


def _initial_labels(kind: str, n: int, c: int) -> tuple[int, dict]:
    """(shards, {(gpu, buffer, chunk): shard}) of the input and output buffers before any step."""
    labels: dict[tuple[int, str, int], int] = {}
    if kind in ("allreduce", "broadcast", "reduce"):
        for g in range(n):
            for k in range(c):
                labels[g, "i", k] = labels[g, "o", k] = k
        return c, labels
    if c % n:
        return 0, labels  # chunks do not split evenly over the gpus: no check
    per = c // n
    for g in range(n):
        for k in range(c):
            if kind == "allgather":
                labels[g, "o", k] = k
                if k < per:
                    labels[g, "i", k] = g * per + k
            elif kind == "reduce_scatter":
                labels[g, "i", k] = k
                if k < per:
                    labels[g, "o", k] = g * per + k
            elif kind == "alltoall":
                labels[g, "i", k] = g * n + k // per
                labels[g, "o", k] = (k // per) * n + g
    return (n * n if kind == "alltoall" else c), labels


def parse_msccl(path: str, kind: str | None = None) -> MscclProgram:
    """Read and validate an MSCCL-IR file (``kind``: the hcsim kind asked for, checked against ``coll``)."""
    if not os.path.isfile(path):
        raise HcsimError(f"MSCCL-IR file '{path}' does not exist (valid: the path of an MSCCL-IR .xml file)")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.parse(path, parser).getroot()
    except (etree.XMLSyntaxError, OSError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise _fail(path, f"is not well-formed XML ({msg})") from None
    if root.tag != "algo":
        raise _fail(path, f"the root element is <{root.tag}> (valid: <algo>)")
    coll = root.get("coll")
    if coll not in COLLECTIVES:
        raise _fail(path, f"coll={coll!r} is not a collective hcsim runs (valid: {', '.join(COLLECTIVES)})")
    file_kind = COLLECTIVES[coll]
    if kind is not None and kind != file_kind:
        wanted = [c for c, k in COLLECTIVES.items() if k == kind]
        valid = f'coll="{wanted[0]}"' if wanted else f"none: MSCCL-IR has no {kind}"
        raise _fail(path, f'coll="{coll}" does not match the kind asked for, {kind} (valid: {valid})')
    n = _int(path, root, "ngpus", "<algo>")
    c = _int(path, root, "nchunksperloop", "<algo>")
    if n < 2:
        raise _fail(path, f"ngpus={n} (valid: 2 or more)")
    if c < 1:
        raise _fail(path, f"nchunksperloop={c} (valid: 1 or more)")

    # -- the steps, threadblock by threadblock -------------------------------------------
    tbs: dict[tuple[int, int], list[_Step]] = {}
    peers: dict[tuple[int, int], tuple[int, int, int]] = {}  # (gpu, tb) -> (send, recv, chan)
    sizes: dict[tuple[int, str], int] = {}
    seen_gpus: set[int] = set()
    for gel in root:
        if not isinstance(gel.tag, str):
            continue  # comments
        if gel.tag != "gpu":
            raise _fail(path, f"<algo> holds a <{gel.tag}> (valid: <gpu> elements)")
        g = _int(path, gel, "id", "a <gpu>")
        if not 0 <= g < n or g in seen_gpus:
            raise _fail(path, f"gpu id {g} is {'repeated' if g in seen_gpus else 'out of range'} (valid: 0..{n - 1})")
        seen_gpus.add(g)
        for b, attr in zip(BUFFERS, ("i_chunks", "o_chunks", "s_chunks"), strict=True):
            sizes[g, b] = _int(path, gel, attr, f"gpu {g}", default=0)
        for tel in gel:
            if not isinstance(tel.tag, str):
                continue
            if tel.tag != "tb":
                raise _fail(path, f"gpu {g} holds a <{tel.tag}> (valid: <tb> elements)")
            t = _int(path, tel, "id", f"a <tb> of gpu {g}")
            where = f"gpu {g} tb {t}"
            if (g, t) in tbs:
                raise _fail(path, f"{where} is repeated (valid: one <tb> per id)")
            send, recv = _int(path, tel, "send", where), _int(path, tel, "recv", where)
            chan = _int(path, tel, "chan", where, default=0)
            for role, p in (("send", send), ("recv", recv)):
                if p != -1 and (not 0 <= p < n or p == g):
                    raise _fail(path, f"{where} has {role}={p} (valid: -1 or another gpu, 0..{n - 1})")
            if chan < 0:
                raise _fail(path, f"{where} has chan={chan} (valid: 0 or more)")
            peers[g, t] = (send, recv, chan)
            steps: list[_Step] = []
            numbers: set[int] = set()
            for sel in tel:
                if not isinstance(sel.tag, str):
                    continue
                if sel.tag != "step":
                    raise _fail(path, f"{where} holds a <{sel.tag}> (valid: <step> elements)")
                s = _int(path, sel, "s", f"a step of {where}")
                sw = f"{where} step {s}"
                typ = sel.get("type")
                if typ not in STEP_TYPES:
                    raise _fail(path, f"{sw} has type={typ!r} (valid: {', '.join(STEP_TYPES)})")
                if s in numbers:
                    raise _fail(path, f"{sw} is repeated (valid: one step per number in a threadblock)")
                numbers.add(s)
                step = _Step(
                    g, t, s, typ,
                    sel.get("srcbuf", "i"), _int(path, sel, "srcoff", sw, default=-1),
                    sel.get("dstbuf", "o"), _int(path, sel, "dstoff", sw, default=-1),
                    _int(path, sel, "cnt", sw, default=1),
                    _int(path, sel, "depid", sw, default=-1), _int(path, sel, "deps", sw, default=-1),
                )  # fmt: skip
                if typ != "nop" and step.cnt < 1:
                    raise _fail(path, f"{step} has cnt={step.cnt} (valid: 1 or more chunks)")
                if typ in SENDS and send < 0:
                    raise _fail(path, f"{step} sends but its threadblock has send=-1 (valid: a send peer)")
                if typ in RECEIVES and recv < 0:
                    raise _fail(path, f"{step} receives but its threadblock has recv=-1 (valid: a recv peer)")
                steps.append(step)
            tbs[g, t] = steps

    # buffer offsets in range
    for steps in tbs.values():
        for st in steps:
            uses = []
            if st.type in ("s", "rrs", "rrcs", "cpy", "re"):
                uses.append(("src", st.srcbuf, st.srcoff))
            if st.type in ("r", "rcs", "rrc", "rrcs", "cpy", "re"):
                uses.append(("dst", st.dstbuf, st.dstoff))
            for role, buf, off in uses:
                if buf not in BUFFERS:
                    raise _fail(path, f"{st} has {role}buf={buf!r} (valid: i, o, s)")
                have = sizes.get((st.gpu, buf), 0)
                if off < 0 or off + st.cnt > have:
                    raise _fail(
                        path,
                        f"{st} uses chunks {off}..{off + st.cnt - 1} of buffer '{buf}', which has {have} "
                        f"(valid: offsets 0..{have - st.cnt} with cnt={st.cnt})",
                    )

    # -- matching sends and receives: one connection per (from, to, channel) -------------
    sends: dict[tuple[int, int, int], list[_Step]] = {}
    recvs: dict[tuple[int, int, int], list[_Step]] = {}
    owner: dict[tuple[str, int, int, int], int] = {}
    for (g, t), steps in sorted(tbs.items()):
        send, recv, chan = peers[g, t]
        for role, table, key, types in (
            ("send to", sends, (g, send, chan), SENDS),
            ("receive from", recvs, (recv, g, chan), RECEIVES),
        ):
            mine = [st for st in steps if st.type in types]
            if not mine:
                continue
            peer = key[1] if role == "send to" else key[0]
            other = owner.setdefault((role, g, peer, chan), t)
            if other != t:
                raise _fail(
                    path,
                    f"gpu {g} tb {other} and tb {t} both {role} gpu {peer} on channel {chan} "
                    "(valid: one threadblock per peer and channel)",
                )
            table[key] = mine
    match: dict[int, _Step] = {}  # id(receive step) -> its send step
    for key in sorted(set(sends) | set(recvs)):
        ss, rs = sends.get(key, []), recvs.get(key, [])
        src, dst, chan = key
        for a, b in zip(ss, rs, strict=False):
            if a.cnt != b.cnt:
                raise _fail(path, f"{a} sends {a.cnt} chunks but its matching receive {b} takes {b.cnt}")
            match[id(b)] = a
        if len(ss) > len(rs):
            raise _fail(
                path,
                f"{ss[len(rs)]} sends to gpu {dst} on channel {chan}, which receives only {len(rs)} of "
                f"{len(ss)} sends from gpu {src} there (valid: every send matched by a receive)",
            )
        if len(rs) > len(ss):
            raise _fail(
                path,
                f"{rs[len(ss)]} receives from gpu {src} on channel {chan}, which sends only {len(ss)} of "
                f"{len(rs)} there (valid: every receive matched by a send)",
            )

    # -- the step graph, in an order where each step follows what it waits for -----------
    order_in_tb: dict[tuple[int, int], dict[int, _Step]] = {k: {st.s: st for st in v} for k, v in tbs.items()}
    waits: dict[int, list[_Step]] = {}
    all_steps = [st for k in sorted(tbs) for st in tbs[k]]
    for (g, _t), steps in tbs.items():
        for i, st in enumerate(steps):
            w = [steps[i - 1]] if i else []
            if st.depid >= 0:
                dep = order_in_tb.get((g, st.depid), {}).get(st.deps)
                if dep is None:
                    raise _fail(
                        path,
                        f"{st} waits for step {st.deps} of tb {st.depid} on gpu {g}, which does not exist "
                        "(valid: depid and deps naming a step of this gpu, or depid=-1)",
                    )
                w.append(dep)
            if id(st) in match:
                w.append(match[id(st)])
            waits[id(st)] = w
    order = _topological(path, all_steps, waits)

    # -- flows: each step's completion as a set of flows; shards through the buffers -------
    shards, labels = _initial_labels(file_kind, n, c)
    done: dict[int, frozenset[int]] = {}
    flow_of: dict[int, int] = {}
    flows: list[_Flow] = []
    for st in order:
        before: frozenset[int] = frozenset()
        for w in waits[id(st)]:
            if w is not match.get(id(st)):
                before |= done[id(w)]
        incoming = flow_of[id(match[id(st)])] if id(st) in match else None
        got = flows[incoming].labels if incoming is not None else ()
        src = [labels.get((st.gpu, st.srcbuf, st.srcoff + k)) for k in range(st.cnt)] if st.srcoff >= 0 else []
        if st.type in SENDS:
            carried = tuple(got) if st.type == "rcs" else tuple(src) if src else tuple(got)
            after = before | ({incoming} if incoming is not None else frozenset())
            flow_of[id(st)] = len(flows)
            flows.append(_Flow(st.gpu, peers[st.gpu, st.tb][0], st.cnt, after, carried, st))
            done[id(st)] = frozenset({len(flows) - 1})
        elif st.type in RECEIVES:
            done[id(st)] = before | {incoming}
        else:
            done[id(st)] = before
        # what the step leaves in its destination chunks
        if st.type in ("r", "rcs"):
            new = list(got)
        elif st.type in ("rrc", "rrcs"):
            new = [a if a is not None else b for a, b in zip(src or [None] * st.cnt, got, strict=True)]
        elif st.type in ("cpy", "re"):
            old = [labels.get((st.gpu, st.dstbuf, st.dstoff + k)) for k in range(st.cnt)]
            new = list(src) if st.type == "cpy" else [a if a is not None else b for a, b in zip(old, src, strict=True)]
        else:
            new = []
        for k, lab in enumerate(new):
            labels[st.gpu, st.dstbuf, st.dstoff + k] = lab

    depth = [0] * len(flows)
    for i, f in enumerate(flows):  # flows were made in dependency order
        depth[i] = 1 + max((depth[d] for d in f.after), default=0)
    prog = MscclProgram(path, root.get("name", ""), file_kind, n, c, shards, flows, max(depth, default=0))
    _check(prog)
    return prog


def _topological(path: str, steps: list[_Step], waits: dict[int, list[_Step]]) -> list[_Step]:
    """``steps`` with each after those it waits for; a cycle is an error naming a step on it."""
    count = {id(st): len(waits[id(st)]) for st in steps}
    released: dict[int, list[_Step]] = defaultdict(list)
    for st in steps:
        for w in waits[id(st)]:
            released[id(w)].append(st)
    ready = deque(st for st in steps if count[id(st)] == 0)
    out = []
    while ready:
        st = ready.popleft()
        out.append(st)
        for nxt in released[id(st)]:
            count[id(nxt)] -= 1
            if count[id(nxt)] == 0:
                ready.append(nxt)
    if len(out) < len(steps):
        stuck = {id(st) for st in steps if count[id(st)] > 0}
        st = next(st for st in steps if id(st) in stuck)
        path_seen: list[_Step] = []
        while st not in path_seen:  # walk back through waiting steps until one repeats: it is on a cycle
            path_seen.append(st)
            st = next(w for w in waits[id(st)] if id(w) in stuck)
        cycle = path_seen[path_seen.index(st) :]
        chain = " waits for ".join(str(x) for x in [*cycle, st][:6]) + (" ..." if len(cycle) > 5 else "")
        raise _fail(path, f"{st} is in a dependency cycle ({chain}; valid: steps that can all complete)")
    return out


def _check(prog: MscclProgram) -> None:
    """Validate and data-check the program over stand-in ranks; name the step behind a failure."""
    if prog.shards == 0:
        return
    ranks = [f"gpu{g}" for g in range(prog.ngpus)]
    sch = prog.schedule(ranks, float(prog.chunks))
    sch.name = prog.path
    try:
        sch.validate()
        check_schedule(sch)
    except HcsimError as e:
        msg = re.sub(r"rank 'gpu(\d+)'", r"gpu \1", str(e).split("does not complete: ", 1)[-1])
        msg = f"is not a complete {prog.kind}: {msg}" if "does not complete" in str(e) else msg
        m = re.search(r"gpu (\d+).*shard (\d+)", msg)
        hint = ""
        if m:
            g, s = int(m.group(1)), int(m.group(2))
            last = [f.step for f in prog.flows if f.dst == g and s in f.labels]
            hint = f"; the last step sending it to gpu {g}: {last[-1]}" if last else f"; no step sends it to gpu {g}"
        raise _fail(prog.path, msg + hint) from None


_CACHE: dict[tuple, MscclProgram] = {}


def read_msccl(path: str, kind: str) -> Algorithm:
    """The algorithm of an MSCCL-IR file, for communication vertices of ``kind``."""
    try:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_mtime_ns, st.st_size, kind, path)
    except OSError:
        key = None
    prog = _CACHE.get(key) if key else None
    if prog is None:
        prog = parse_msccl(path, kind)
        if key:
            _CACHE[key] = prog

    def build(ranks: list[str], nbytes: float, view: TopologyView) -> Schedule:
        return prog.schedule(ranks, nbytes)

    build.__doc__ = f"MSCCL-IR {prog.kind} '{prog.name or os.path.basename(path)}' from {path} ({prog.ngpus} GPUs)"
    return Algorithm(kind, path, build)
