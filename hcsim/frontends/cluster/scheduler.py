"""The cluster scheduler's rules: the controller actor that starts, preempts and migrates jobs.

At every event (arrival, completion, end of a quantum) each partition's policy ranks its
jobs and the placement maps them onto free GPUs. A started trace job (``duration``
known) is one SimGrid ``Exec`` on its first GPU for the time it has left, plus any
preemption or migration overhead; a workload job runs its graph on its GPUs through the
engine's :class:`~hcsim.engine.execution.Execution`, in the same simulation as every
other job, so jobs whose traffic crosses the same links slow each other down.

Preemption cancels a job's activities and returns its GPUs; the job pays ``overhead``
seconds (8 s after Gandiva) when it resumes, anywhere. Migration (when enabled) runs
after each completion: running jobs, smallest first, move onto GPUs of nodes already in
use when that empties one of their nodes; the move costs ``overhead`` plus the job's
GPU memory over the PCIe bandwidth. Jobs that can never run are rejected
(:func:`check_job`). :mod:`.simulator` loads the platform and runs this actor.
Guide: docs/cluster.md, "Model".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hcsim.engine.driver import Driver
from hcsim.engine.execution import EngineOptions, Execution
from hcsim.engine.memory import fill_local_first
from hcsim.frontends.cluster.cluster import Cluster
from hcsim.frontends.cluster.jobs import Job
from hcsim.frontends.cluster.placement import Placement, free_gpu, shape_of
from hcsim.frontends.cluster.policies import Policy
from hcsim.progress import progress_bar

__all__ = ["JobRecord", "JobState", "Scheduler", "check_job"]

_EPS = 1e-9
_TRACE, _OVERHEAD = 0, 1  # owner tags of a job's own activities
_END, _ARRIVAL, _QUANTUM = 0, 1, 2  # driver timer lanes (and keys' kinds)


@dataclass
class JobRecord:
    """What happened to one job (picklable: no graph factories)."""

    index: int  # position in the input job list
    job_id: str
    submit: float
    gpus: int
    partition: str
    state: str  # COMPLETED or REJECTED
    start: float = math.nan  # first start
    finish: float = math.nan
    preemptions: int = 0
    migrations: int = 0
    reason: str = ""  # why it was rejected
    segments: list[tuple[float, float, tuple[int, ...]]] = field(default_factory=list)  # (start, end, GPU ids)


class JobState:
    """The scheduler's mutable view of a job (what policies read)."""

    __slots__ = (
        "index", "job", "seq", "submit", "gpus", "shape", "estimate", "user", "partition", "remaining",
        "attained", "mark", "att0", "level", "entered", "base", "alloc", "state", "seg_start", "seg_overhead",
        "pending_overhead", "act", "act_tag", "end_timer", "execution", "iterations_done", "timer_gen", "record",
        "wanted", "fresh",
    )  # fmt: skip

    def __init__(self, index: int, job: Job, shape: list[int], partition: str, record: JobRecord) -> None:
        self.index, self.job, self.seq = index, job, index
        self.submit, self.gpus, self.shape = job.submit, job.gpus, shape
        self.estimate = job.duration if job.duration is not None else math.inf
        self.user, self.partition = job.user, partition
        self.remaining = job.duration if job.duration is not None else math.inf
        self.attained = 0.0  # seconds of service (overheads excluded) up to ``mark``
        self.mark = 0.0  # while running, service accrues from this time on
        self.att0 = 0.0  # attained service when the current segment started
        self.level, self.entered, self.base = 0, job.submit, 0.0
        self.alloc: list[int] = []
        self.state = "pending"
        self.seg_start = self.seg_overhead = self.pending_overhead = 0.0
        self.act: Any = None
        self.act_tag, self.end_timer = _TRACE, None  # end_timer: the driver timer of its own exec's end
        self.execution: Any = None
        self.iterations_done = 0
        self.timer_gen = 0
        self.record = record
        self.wanted = self.fresh = False  # scratch flags of a scheduling pass

    def attained_at(self, now: float) -> float:
        """Service attained by ``now`` (a running job accrues it once its overhead is paid)."""
        if self.state != "running":
            return self.attained
        return self.attained + max(0.0, now - self.mark)


def check_job(job: Job, cluster: Cluster, node_size: int, any_shape: bool) -> tuple[str, list[int], str]:
    """(partition, shape, reason) for a job; reason is empty when the job can run."""
    parts = cluster.partitions
    part = job.partition if job.partition in parts else ("" if list(parts) == [""] else None)
    if part is None:
        return "", [], f"partition {job.partition!r} is unknown (valid: {', '.join(sorted(parts))})"
    if job.duration is None and job.workload is None:
        return part, [], "it has neither a duration nor a workload"
    if job.duration is not None and not (job.duration >= 0 and math.isfinite(job.duration)):
        return part, [], f"duration {job.duration!r} is invalid (valid: seconds >= 0)"
    if job.gpus < 1:
        return part, [], f"it asks for {job.gpus} GPUs (valid: >= 1)"
    sizes = sorted((len(cluster.nodes[i].gpus) for i in parts[part]), reverse=True)
    total = sum(sizes)
    if job.gpus > total:
        return part, [], f"it needs {job.gpus} GPUs but partition {part!r} has {total}"
    shape = shape_of(job.gpus, job.nodes, job.gpus_per_node, sizes[0])
    if any_shape:
        return part, shape, ""
    if len(shape) > len(sizes) or any(
        need > have for need, have in zip(sorted(shape, reverse=True), sizes, strict=False)
    ):
        shape_text = f"{job.nodes} nodes x {job.gpus_per_node} GPUs" if job.nodes else f"{job.gpus} GPUs"
        return part, [], f"its shape ({shape_text}) never fits partition {part!r} ({len(sizes)} nodes of {sizes[0]})"
    return part, shape, ""


class _IterationCount:
    """An observer of a job's execution: counts the iterations it finished."""

    def __init__(self, js: JobState) -> None:
        self.js = js

    def iteration_done(self, k: int, now: float) -> None:
        self.js.iterations_done += 1


class Scheduler:
    """Lives in the SimGrid child process: the controller actor's state and rules."""

    def __init__(
        self,
        sg: Any,
        hosts: dict[str, Any],
        cluster: Cluster,
        jobs: list[Job],
        policies: dict[str, Policy],
        place: Placement,
        migration: bool,
        overhead: float,
        progress: bool,
    ) -> None:
        self.sg, self.hosts, self.cluster = sg, hosts, cluster
        self.policies, self.place, self.migration, self.overhead = policies, place, migration, overhead
        self.gpu_hosts = [hosts[g] for g in cluster.gpu_names]
        self.free_slots: list[list[int]] = [
            list(range(f, f + len(n.gpus))) for f, n in zip(cluster.node_first_gpu, cluster.nodes, strict=True)
        ]
        self.free = [len(s) for s in self.free_slots]
        self.node_used = [0] * len(cluster.nodes)
        self.node_part = [n.partition for n in cluster.nodes]
        self.part_gpus = {p: cluster.partition_gpus(p) for p in cluster.partitions}
        self.part_free = dict(self.part_gpus)
        self.used_gpus = self.used_nodes = 0
        self.pending: dict[str, list[JobState]] = {p: [] for p in cluster.partitions}
        self.running: dict[str, list[JobState]] = {p: [] for p in cluster.partitions}
        self.n_pending = self.n_running = 0
        self.user_done: dict[str, float] = {}
        self.user_running: dict[str, list[JobState]] = {}
        self.service_at, self.service_cache = -1.0, {}
        # timer lanes, handled in this order at one instant: jobs' own exec ends, arrivals, quanta
        self.driver = Driver(sg, lanes=3, horizon=lambda now: now + _EPS)
        self.changed = self.drained = False  # of the current wake-up
        self.exec_job: dict[int, JobState] = {}  # id(Execution) -> its job
        self.series: list[tuple[float, int, int, int, int]] = []
        self.events = 0
        node_size = max(len(n.gpus) for n in cluster.nodes)
        self.states: list[JobState] = []
        self.records: list[JobRecord] = []
        for i, job in enumerate(jobs):
            part, shape, reason = check_job(job, cluster, node_size, any_shape=place is free_gpu)
            rec = JobRecord(i, job.job_id, job.submit, job.gpus, part, "REJECTED" if reason else "COMPLETED")
            rec.reason = reason
            self.records.append(rec)
            if not reason:
                self.states.append(JobState(i, job, shape, part, rec))
        self.bar = progress_bar(len(self.states), "scheduling", "job", show=progress, leave=False)

    # ------------------------------------------------------------------ bookkeeping
    def user_service(self, user: str, now: float) -> float:
        """GPU-seconds of service ``user``'s jobs attained up to ``now`` (for LAS; cached per instant)."""
        if self.service_at != now:
            self.service_at, self.service_cache = now, {}
        s = self.service_cache.get(user)
        if s is None:
            s = self.user_done.get(user, 0.0)
            for js in self.user_running.get(user, ()):
                s += js.gpus * (js.attained_at(now) - js.att0)
            self.service_cache[user] = s
        return s

    def note(self, now: float) -> None:
        row = (now, self.used_gpus, self.used_nodes, self.n_pending, self.n_running)
        series = self.series
        if series and series[-1][1:] == row[1:]:
            return
        if series and series[-1][0] == now:
            series[-1] = row
        else:
            series.append(row)

    def take(self, js: JobState, where: list[tuple[int, int]]) -> None:
        alloc = []
        for node, count in where:
            slots = self.free_slots[node]
            alloc.extend(slots[:count])
            del slots[:count]
            self.free[node] -= count
            self.part_free[self.node_part[node]] -= count
            if self.node_used[node] == 0:
                self.used_nodes += 1
            self.node_used[node] += count
        self.used_gpus += js.gpus
        js.alloc = alloc

    def give_back(self, js: JobState) -> None:
        node_of = self.cluster.gpu_node
        touched = set()
        for g in js.alloc:
            n = node_of[g]
            self.free_slots[n].append(g)
            self.free[n] += 1
            self.part_free[self.node_part[n]] += 1
            self.node_used[n] -= 1
            touched.add(n)
        for n in touched:
            self.free_slots[n].sort()
            if self.node_used[n] == 0:
                self.used_nodes -= 1
        self.used_gpus -= len(js.alloc)
        js.alloc = []

    # ------------------------------------------------------------------ starting and stopping
    def start(self, js: JobState, where: list[tuple[int, int]], now: float) -> None:
        self.take(js, where)
        self.pending[js.partition].remove(js)
        self.running[js.partition].append(js)
        self.user_running.setdefault(js.user, []).append(js)
        self.n_pending -= 1
        self.n_running += 1
        js.state = "running"
        js.seg_start, js.seg_overhead, js.pending_overhead = now, js.pending_overhead, 0.0
        js.mark, js.att0 = now + js.seg_overhead, js.attained
        rec = js.record
        if math.isnan(rec.start):
            rec.start = now
        host = self.gpu_hosts[js.alloc[0]]
        if js.job.workload is None:
            self.exec(host, js.seg_overhead + js.remaining, js, _TRACE, now)
        elif js.seg_overhead > 0:
            self.exec(host, js.seg_overhead, js, _OVERHEAD, now)
        else:
            self.run_workload(js, now)
        self.arm(js, now)

    def exec(self, host: Any, seconds: float, js: JobState, tag: int, now: float) -> None:
        """Run ``seconds`` of a job's own work on its first GPU.

        The GPU is the job's alone, so SimGrid ends the exec at now + seconds; the
        scheduler keeps that instant in a heap and sleeps until it, instead of making
        SimGrid scan every running job's exec at every wake-up (wait_any is linear).
        """
        act = self.sg.this_actor.exec_init(seconds * host.speed)
        act.host = host
        act.start()
        js.act, js.act_tag = act, tag
        js.end_timer = self.driver.add_timer(now + seconds, (_END, js), lane=_END, order=js.seq)

    def run_workload(self, js: JobState, now: float) -> None:
        wj = js.job.workload
        graph = wj.build([self.cluster.gpu_names[g] for g in js.alloc])
        js.act = None
        js.execution = Execution(
            self.sg,
            graph,
            self.hosts,
            wj.iterations - js.iterations_done,
            wj.coherent,
            fill_local_first,
            self.driver,
            # timed_execs off: a preempted job's execs must be found and cancelled
            options=EngineOptions(record_flows=False, record_trace=False, timed_execs=False),
            observers=[_IterationCount(js)],
        )
        self.exec_job[id(js.execution)] = js
        js.execution.start(now)

    def arm(self, js: JobState, now: float) -> None:
        """Set the timer for the end of the running job's quantum, if its policy has quanta."""
        pol = self.policies[js.partition]
        if not pol.preemptive:
            return
        change = pol.next_change(js)
        if change is None:
            return
        js.timer_gen += 1
        at = js.mark + max(0.0, change - js.attained)
        self.driver.add_timer(at, (_QUANTUM, js, js.timer_gen), lane=_QUANTUM, order=js.seq)

    def stop(self, js: JobState, now: float, finished: bool) -> None:
        """Take a running job off its GPUs (finished, or preempted: then it resumes later)."""
        if js.act is not None:
            act = js.act
            if not finished:
                left = act.remaining / act.host.speed
                act.cancel()
                if js.act_tag == _TRACE:
                    js.remaining = min(js.remaining, left)
            js.act = None
            self.driver.cancel_timer(js.end_timer)
            js.end_timer = None
        if js.execution is not None:
            ex = js.execution
            if not finished:
                for a in [a for a, key in self.driver.owner.items() if key[0] is ex]:
                    self.driver.cancel(a, now)
            del self.exec_job[id(ex)]
            js.execution = None
        js.attained = js.attained_at(now)
        self.user_done[js.user] = self.user_done.get(js.user, 0.0) + js.gpus * (js.attained - js.att0)
        self.user_running[js.user].remove(js)
        js.record.segments.append((js.seg_start, now, tuple(js.alloc)))
        js.timer_gen += 1
        self.give_back(js)
        self.running[js.partition].remove(js)
        self.n_running -= 1
        if finished:
            js.state = "done"
            js.record.finish = now
            self.bar.update(1)
        else:
            js.state = "pending"
            self.pending[js.partition].append(js)
            self.n_pending += 1

    def preempt(self, js: JobState, now: float, overhead: float) -> None:
        act = js.act
        if act is not None and js.act_tag == _TRACE and act.remaining <= _EPS * act.host.speed:
            js.remaining = 0.0  # it ends at this instant anyway: a completion, not a preemption
            self.stop(js, now, finished=True)
            return
        self.stop(js, now, finished=False)
        js.pending_overhead = overhead
        js.record.preemptions += 1

    # ------------------------------------------------------------------ policies
    def schedule(self, now: float) -> None:
        for part, pol in self.policies.items():
            if pol.preemptive:
                if self.pending[part]:
                    self.schedule_preemptive(part, pol, now)
            elif self.pending[part]:
                self.schedule_queue(part, pol, now)

    def schedule_queue(self, part: str, pol: Policy, now: float) -> None:
        nodes = self.cluster.partitions[part]
        queue = sorted(self.pending[part], key=lambda j: pol.key(j, now, self))
        for i, js in enumerate(queue):
            where = self.place(js.shape, nodes, self.free) if self.part_free[part] >= js.gpus else None
            if where is not None:
                self.start(js, where, now)
                continue
            if pol.backfill:
                self.backfill(part, js, queue[i + 1 :], now)
            return

    def backfill(self, part: str, head: JobState, rest: list[JobState], now: float) -> None:
        """EASY: reserve the head's start; start later jobs that do not delay it."""
        nodes = self.cluster.partitions[part]
        avail = self.part_free[part]
        ends = sorted(
            (j.seg_start + j.seg_overhead + j.remaining if j.job.workload is None else math.inf, j.gpus)
            for j in self.running[part]
        )
        shadow, extra = math.inf, 0
        for end, g in ends:
            avail += g
            if avail >= head.gpus:
                shadow, extra = end, avail - head.gpus
                break
        failed: set[tuple[int, ...]] = set()
        for js in rest:
            if self.part_free[part] == 0:
                break
            end = now + js.pending_overhead + js.estimate
            short = end <= shadow + _EPS
            shape = tuple(js.shape)
            if (not short and js.gpus > extra) or js.gpus > self.part_free[part] or shape in failed:
                continue
            where = self.place(js.shape, nodes, self.free)
            if where is None:
                failed.add(shape)
                continue
            self.start(js, where, now)
            if not short:
                extra -= js.gpus

    def schedule_preemptive(self, part: str, pol: Policy, now: float) -> None:
        """Rank running and pending jobs together; the best-ranked that fit the partition run.

        A wanted pending job takes free GPUs, else preempts the fewest worst-ranked
        unwanted running jobs that make it fit; what is left goes to unwanted pending
        jobs in rank order (work conservation). A shape that failed stays failed for
        the rest of the pass (free GPUs only shrink), which keeps a pass near linear.
        """
        nodes = self.cluster.partitions[part]
        ordered = sorted(self.running[part] + self.pending[part], key=lambda j: pol.key(j, now, self))
        budget = self.part_gpus[part]
        for js in ordered:
            js.wanted = js.gpus <= budget
            if js.wanted:
                budget -= js.gpus
        victims = [j for j in reversed(ordered) if j.state == "running" and not j.wanted]
        failed: set[tuple[int, ...]] = set()
        for js in ordered:
            if js.state != "pending" or not js.wanted:
                continue
            shape = tuple(js.shape)
            if shape in failed:
                continue
            where = self.place(js.shape, nodes, self.free) if self.part_free[part] >= js.gpus else None
            if where is None and victims:
                where = self.make_room(js, nodes, victims, now)
            if where is None:
                failed.add(shape)
            else:
                self.start(js, where, now)
        failed.clear()
        for js in ordered:  # work conservation: lower-ranked jobs use what is left
            if self.part_free[part] == 0:
                break
            if js.state == "pending" and not js.wanted and not js.fresh:
                shape = tuple(js.shape)
                if shape in failed or js.gpus > self.part_free[part]:
                    continue
                where = self.place(js.shape, nodes, self.free)
                if where is None:
                    failed.add(shape)
                else:
                    self.start(js, where, now)
        for js in ordered:
            js.fresh = False

    def make_room(
        self, js: JobState, nodes: list[int], victims: list[JobState], now: float
    ) -> list[tuple[int, int]] | None:
        """Preempt the fewest worst-ranked victims that let ``js`` fit; none if even all would not."""
        free = list(self.free)
        node_of = self.cluster.gpu_node
        for v in victims:
            for g in v.alloc:
                free[node_of[g]] += 1
        if self.place(js.shape, nodes, free) is None:
            return None
        free = list(self.free)
        for m, v in enumerate(victims, start=1):
            for g in v.alloc:
                free[node_of[g]] += 1
            if self.place(js.shape, nodes, free) is not None:
                for victim in victims[:m]:
                    self.preempt(victim, now, self.overhead)
                    victim.fresh = True
                del victims[:m]
                return self.place(js.shape, nodes, self.free)
        return None

    def migrate(self, part: str, now: float) -> None:
        """After a completion: move small jobs onto used nodes when that empties one of theirs."""
        cl = self.cluster
        node_of = cl.gpu_node
        for js in sorted(self.running[part], key=lambda j: (j.gpus, j.seq)):
            if js.state != "running":
                continue
            mine: dict[int, int] = {}
            for g in js.alloc:
                mine[node_of[g]] = mine.get(node_of[g], 0) + 1
            if not any(self.node_used[n] == c for n, c in mine.items()):
                continue  # moving it would empty none of its nodes
            targets = [n for n in cl.partitions[part] if self.node_used[n] > 0 and n not in mine]
            where = self.place(js.shape, targets, self.free)
            if where is None:
                continue
            cost = self.overhead + js.gpus * cl.gpu_memory / cl.pcie_bandwidth
            self.stop(js, now, finished=False)
            js.pending_overhead = cost
            js.record.migrations += 1
            self.start(js, where, now)

    # ------------------------------------------------------------------ the actor
    def run(self) -> None:
        """The controller actor: at each wake-up, account for what ended, then arrivals and quanta, then schedule."""
        for js in self.states:
            self.driver.add_timer(js.submit, (_ARRIVAL, js), lane=_ARRIVAL, order=js.seq)
        self.driver.run(self.completed, self.timer, after_wake=self.after_wake)
        self.bar.close()

    def completed(self, act: Any, key: Any, now: float) -> None:
        """An activity of a workload job's execution completed."""
        ex = key[0]
        ex.complete(act, key, now)
        if ex.done:
            self.changed = self.finished(self.exec_job[id(ex)], now) or self.changed

    def timer(self, key: tuple, now: float) -> None:
        kind, js = key[0], key[1]
        if kind == _END:  # a job's own exec ends now (first: it frees GPUs)
            self.changed = self.own_exec_done(js, now) or self.changed
            return
        if not self.drained:  # other jobs may end at this very instant: account for them before ranking anyone
            self.drained = True
            self.driver.drain(now, self.completed)
        if kind == _ARRIVAL:
            self.pending[js.partition].append(js)
            self.n_pending += 1
            self.changed = True
        elif js.state == "running" and js.timer_gen == key[2]:  # a quantum ends
            js.attained, js.mark = js.attained_at(now), max(now, js.mark)
            pol = self.policies[js.partition]
            pol.on_change(js, now)
            self.arm(js, now)
            self.changed = True

    def after_wake(self, now: float, act: Any) -> None:
        self.events += 1
        if self.changed:
            self.schedule(now)
            self.note(now)
        self.changed = self.drained = False

    def own_exec_done(self, js: JobState, now: float) -> bool:
        """A job's own exec (its trace run time, or the overhead before its workload) ended."""
        act = js.act
        if act.remaining > 0:  # our instant and SimGrid's may differ by rounding: let SimGrid finish it
            act.wait()
        js.act = js.end_timer = None
        if js.act_tag == _OVERHEAD:
            self.run_workload(js, now)
            return False
        return self.finished(js, now)

    def finished(self, js: JobState, now: float) -> bool:
        js.remaining = 0.0
        self.stop(js, now, finished=True)
        if self.migration:
            self.migrate(js.partition, now)
        return True
