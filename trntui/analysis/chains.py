"""Follow one op down its dependency chain: framework op → runtime call(s) → hardware execution(s).

Works on whatever links the data has (External id, correlation, flows, Neuron flow_id) through the generic
edge list of `Links`, and says what is missing instead of failing. Per-core duplicates of one execution
(same name, same predecessor, overlapping, on different hardware lanes) are merged into one hop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trntui.analysis.links import Links, Rule, build_links, launching_op
from trntui.model.profile import NO_ID, Profile, Tier

MAX_BRANCHES = 256


@dataclass
class Hop:
    """One step of a chain: one event, or several merged per-core duplicates of one execution."""

    events: list[int]
    tier: Tier
    name: str
    lane_label: str
    start: int
    end: int
    rule: str
    """How this hop was linked to the previous one (External id, correlation, flow, ...)."""
    prev_start: int | None = None
    prev_end: int | None = None
    spread: int = 0
    """For merged per-core copies (LNC>1): the largest difference between the copies' starts or ends (ns)."""

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def gap(self) -> int | None:
        """ns from the previous hop's end to this hop's start (negative when they overlap, e.g. a kernel that
        starts before its launch call returns); None for the first hop."""
        return None if self.prev_end is None else self.start - self.prev_end

    @property
    def offset(self) -> int | None:
        """ns from the previous hop's start to this hop's start (dispatch latency inside an op)."""
        return None if self.prev_start is None else self.start - self.prev_start

    @property
    def cores(self) -> int:
        return len(self.events)


@dataclass
class Chain:
    """The chain of one selected event."""

    selected: int
    root: int
    """The topmost event reached by walking links upward (normally the framework op)."""
    root_hop: Hop
    branches: list[list[Hop]] = field(default_factory=list)
    """Each branch is one path below the root: e.g. [cudaLaunchKernel, kernel] or [nrta_execute_schedule,
    nc_exec_running]. Launches by child ops are included, with `via` naming the child."""
    via: list[int] = field(default_factory=list)
    """Per branch: the op that launched it (the root itself, or one of its descendants)."""
    parent: int = NO_ID
    children: list[int] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Plain-language notes on links that could not be followed."""
    truncated: int = 0
    """Branches left out beyond MAX_BRANCHES."""

    @property
    def tiers(self) -> list[Tier]:
        seen = [self.root_hop.tier]
        for branch in self.branches:
            for hop in branch:
                if hop.tier not in seen:
                    seen.append(hop.tier)
        return seen


def _hop(profile: Profile, events: list[int], rule: str, prev: Hop | None) -> Hop:
    first = events[0]
    start = min(int(profile.start[e]) for e in events)
    end = max(int(profile.end[e]) for e in events)
    lane = profile.lane_of(first)
    label = lane.label
    if len(events) > 1:
        label = f"{label} (+{len(events) - 1} core{'s' if len(events) > 2 else ''})"
    return Hop(
        events=events,
        tier=lane.tier,
        name=profile.name_of(first),
        lane_label=label,
        start=start,
        end=end,
        rule=rule,
        prev_start=prev.start if prev else None,
        prev_end=prev.end if prev else None,
        spread=(
            max(
                max(int(profile.start[e]) for e in events) - start,
                end - min(int(profile.end[e]) for e in events),
            )
            if len(events) > 1
            else 0
        ),
    )


def _group_duplicates(profile: Profile, succ: list[tuple[int, int]]) -> list[tuple[list[int], int]]:
    """Merge successors that are per-core copies of one execution: same name, same tier, overlapping."""
    groups: list[tuple[list[int], int]] = []
    for ev, rule in sorted(succ, key=lambda x: (int(profile.start[x[0]]), x[0])):
        placed = False
        for members, _ in groups:
            m = members[0]
            if (
                profile.name[m] == profile.name[ev]
                and profile.lane_of(m).tier == profile.lane_of(ev).tier == Tier.HARDWARE
                and profile.lane[m] != profile.lane[ev]
                and profile.start[ev] < max(profile.end[x] for x in members)
                and profile.start[m] < profile.end[ev]
            ):
                members.append(ev)
                placed = True
                break
        if not placed:
            groups.append(([ev], rule))
    return groups


def _rule_label(rule: int) -> str:
    try:
        return Rule(rule).label
    except ValueError:
        return "link"


def _walk_down(profile: Profile, links: Links, hop: Hop, out: list[list[Hop]], path: list[Hop], seen: set[int]) -> None:
    succ = []
    for e in hop.events:
        succ.extend((s, r) for s, r in links.successors(e) if s not in seen)
    if len(succ) > 1:
        # one edge per successor (e.g. an External id link and a Neuron flow between the same two events)
        first: dict[int, int] = {}
        for s, r in succ:
            first.setdefault(s, r)
        succ = list(first.items())
    if not succ:
        if path:
            out.append(list(path))
        return
    for members, rule in _group_duplicates(profile, succ):
        if len(out) >= MAX_BRANCHES:
            return
        members = [m for m in members if m not in seen]  # reached by an earlier branch (a DAG: op -> dispatch ->
        if not members:  # driver and op -> driver): listed once
            continue
        seen.update(members)
        nxt = _hop(profile, members, _rule_label(rule), hop)
        path.append(nxt)
        _walk_down(profile, links, nxt, out, path, seen)
        path.pop()


def find_root(profile: Profile, links: Links, i: int) -> int:
    """Walk links upward from `i` to the topmost event (a framework op when the links exist)."""
    seen = {i}
    cur = i
    while True:
        preds = [p for p, _ in links.predecessors(cur) if p not in seen]
        if not preds:
            return cur
        cur = min(preds, key=lambda p: int(profile.start[p]))
        seen.add(cur)


def follow(profile: Profile, i: int) -> Chain:
    """The dependency chain through event `i`, from its framework op down to hardware."""
    links = build_links(profile)
    root = launching_op(profile, i)  # the op every pane calls its launcher (links.launching_ops)
    if root < 0:
        root = find_root(profile, links, i)
    root_hop = _hop(profile, [root], "selected" if root == i else "launched it", None)
    parent_arr, _ = profile.nesting()
    chain = Chain(selected=i, root=root, root_hop=root_hop, parent=int(parent_arr[root]))

    # direct children on the root's lane (ops nested inside it)
    lane_events = profile.lane_window(int(profile.lane[root]), int(profile.start[root]), int(profile.end[root]))
    chain.children = [int(e) for e in lane_events.tolist() if int(parent_arr[e]) == root][:MAX_BRANCHES]

    seen = {root}
    before = len(chain.branches)
    _walk_down(profile, links, root_hop, chain.branches, [], seen)
    chain.via.extend([root] * (len(chain.branches) - before))
    if not chain.branches and links.frontend[root]:
        # launches made by descendant ops (e.g. aten::linear -> aten::addmm -> cudaLaunchKernel)
        t0, t1 = int(profile.start[root]), int(profile.end[root])
        lane_events = profile.lane_window(int(profile.lane[root]), t0, t1)
        for e in lane_events.tolist():
            if e == root or not links.frontend[e] or profile.end[e] > t1:
                continue
            if not links.successors(e):
                continue
            before = len(chain.branches)
            sub = _hop(profile, [e], "child op", root_hop)
            _walk_down(profile, links, sub, chain.branches, [sub], seen)
            chain.via.extend([e] * (len(chain.branches) - before))
            if len(chain.branches) >= MAX_BRANCHES:
                chain.truncated = 1
                break

    _explain_missing(profile, links, chain)
    return chain


def _explain_missing(profile: Profile, links: Links, chain: Chain) -> None:
    root = chain.root
    name = profile.name_of(root)
    has_device = bool(links.device.any()) or any(l.tier == Tier.HARDWARE for l in profile.lanes)
    if not chain.branches:
        if not has_device:
            chain.missing.append("CPU-only profile: no runtime or hardware tier to follow")
        elif links.frontend[root]:
            chain.missing.append(
                f"no runtime call or device execution is linked to {name!s} "
                "(no External id, correlation or flow matches it or its child ops)"
            )
        else:
            tier = profile.lane_of(root).tier
            chain.missing.append(
                f"no framework op is linked to this {tier.title} event "
                "(its External id / correlation / flow matches nothing)"
            )
        return
    tiers = chain.tiers
    if Tier.HARDWARE not in tiers and has_device:
        chain.missing.append("no hardware execution linked (runtime call without a matching device row)")
    if links.frontend[root] is False or not links.frontend[root]:
        if profile.lane_of(root).tier != Tier.DISPATCH:
            chain.missing.append("no framework op linked above this event")
