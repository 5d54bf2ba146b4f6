"""Framework rows of an Explorer export: the ops of an export-only directory, and robust matching to trace.json.

The walkthrough's naive RMSNorm step ("the seed table": aten::mul 3 calls, Self NEURON 1164.5 us; aten::add,
aten::rsqrt, aten::mean; Self NEURON total 2354.9 us) must come out of
- a directory holding only `SystemProfileEvents*.parquet` (no trace.json),
- trace.json + an export whose framework rows are shifted (+50 us, -3 ms: two clocks, a conversion rounding),
  lack 10% of their rows, or lack their categories,
- trace.json carrying PrivateUse1 dispatch rows named like their op (torch folds them into the op),
and when nothing matches, the device time stays on Explorer's rows with a note. Synthetic data built to the
documented schema (scripts/make_neuron_samples.py); no real export was available.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from trntui.analysis.chains import follow
from trntui.analysis.key_averages import key_averages
from trntui.cli import main
from trntui.session import find_runs, load_run

from tests.neuron_samples import generator

SEED = {"aten::mul": (3, 1164.5), "aten::add": (1, 434.6), "aten::rsqrt": (1, 415.0), "aten::mean": (1, 340.8)}
SEED_CPU = {"aten::mul": 60.9, "aten::add": 26.6, "aten::rsqrt": 15.6, "aten::mean": 21.1}
TOTAL = 2354.9


def _write(root: Path, cap, *, trace: bool = True) -> Path:
    gen = generator()
    if trace:
        gen.write_trace(cap, root / f"{cap.instance}_pid_{cap.pid}" / gen.TIMESTAMP_DIR / "trace.json")
    gen.write_parquet_export(cap, root / "explorer_parquet")
    return root


def _shift_framework(cap, ns: int) -> None:
    for r in cap.events:
        if r["trace_event_source"] == "framework":
            r["start_ts"] += ns
            r["end_ts"] += ns


def _seed(profile) -> dict[str, tuple[int, float]]:
    t = key_averages(profile)
    out = {}
    for name in SEED:
        k = t.find(name)
        out[name] = (int(t.count[k]), round(float(t.self_device_time_total[k]), 1)) if k >= 0 else None
    return out


def _load(root: Path):
    (run,) = find_runs(root)
    return load_run(run, cache=False)


def test_export_only_directory_gives_the_seed_table(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = _write(tmp_path / "export_only", generator().build_capture("naive"), trace=False)
    assert [p.name for p in root.iterdir()] == ["explorer_parquet"]
    profile = _load(root)
    table = key_averages(profile)
    assert _seed(profile) == SEED
    for name, cpu in SEED_CPU.items():
        assert table.self_cpu_time_total[table.find(name)] == pytest.approx(cpu)
    assert table.sum_self_device == pytest.approx(TOTAL)
    assert any("no trace.json; the 29 framework row(s) of the system trace are the ops" in n for n in profile.meta.notes)
    assert not any("linked to no framework op" in n for n in profile.meta.notes)
    # the CLI: the table and the footer; info says what is there
    assert main(["summary", str(root), "--limit", "4"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.strip().startswith("aten::")] == [
        "aten::mul", "aten::add", "aten::rsqrt", "aten::mean"]
    assert "Self NEURON time total: 2.355ms" in out
    assert re.search(r"aten::mul\s.*1\.165ms\s+49\.45%.*\s3\s*$", out, re.M)
    assert main(["info", str(root)]) == 0
    info = capsys.readouterr().out
    assert "29 framework rows (the ops: no trace.json)" in info
    assert "no framework trace (trace.json): only runtime/hardware rows" not in info


def test_export_only_without_categories_or_op_copies(tmp_path: Path) -> None:
    """Explorer keeps no category: dispatch rows are recognised by nesting in a row of their name; an export
    with only the PrivateUse1 copies (no cpu_op copies) still gives one op per dispatch row."""
    gen = generator()
    root = _write(tmp_path / "nocat", gen.build_capture("naive", explorer_categories=False), trace=False)
    assert _seed(_load(root)) == SEED
    root = _write(tmp_path / "dispatch_only", gen.build_capture("naive", explorer_ops=False, explorer_categories=False),
                  trace=False)
    profile = _load(root)
    assert _seed(profile) == SEED
    assert key_averages(profile).sum_self_device == pytest.approx(TOTAL)


@pytest.mark.parametrize("shift_ns", [0, 50_000, -3_000_000], ids=["aligned", "plus_50us", "minus_3ms"])
@pytest.mark.parametrize("categories", [True, False], ids=["categories", "no_categories"])
def test_shifted_framework_rows_still_match(tmp_path: Path, shift_ns: int, categories: bool) -> None:
    cap = generator().build_capture("naive", explorer_categories=categories)
    _shift_framework(cap, shift_ns)
    profile = _load(_write(tmp_path / "v", cap))
    assert _seed(profile) == SEED
    assert key_averages(profile).sum_self_device == pytest.approx(TOTAL)
    note = next(n for n in profile.meta.notes if "framework row(s) of the system trace copy trace.json" in n)
    assert note.startswith("explorer_parquet: 29 of 29 ")
    assert f"clock offset {shift_ns / 1000:+.1f} us" in note
    assert profile.meta.trace_meta["neuron_framework_match"]["offset_ns"] == shift_ns
    # one copy of each op: Explorer's copies were merged into trace.json's rows, not added beside them
    names = [profile.name_of(i) for i in range(len(profile))]
    assert names.count("aten::mul") == 6 and names.count("aten::mul.Tensor") == 3


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("shift_ns", [50_000, -3_000_000], ids=["plus_50us", "minus_3ms"])
def test_ten_percent_of_explorer_rows_missing(tmp_path: Path, seed: int, shift_ns: int) -> None:
    cap = generator().build_capture("naive")
    fw = [r for r in cap.events if r["trace_event_source"] == "framework"]
    gone = {id(r) for r in random.Random(seed).sample(fw, k=max(1, len(fw) // 10))}
    cap.events = [r for r in cap.events if id(r) not in gone]
    _shift_framework(cap, shift_ns)
    profile = _load(_write(tmp_path / "v", cap))
    assert _seed(profile) == SEED
    assert key_averages(profile).sum_self_device == pytest.approx(TOTAL)
    assert any(f"{len(fw) - len(gone)} of {len(fw) - len(gone)} framework row(s)" in n for n in profile.meta.notes)


def test_both_framework_copies_of_an_execution_missing(tmp_path: Path) -> None:
    """The worst case: the dispatch and driver copies of the first aten::mul are gone, so no flow reaches its
    execution from the framework: nrta_execute_schedule lies inside the op (on trace.json's clock)."""
    cap = generator().build_capture("naive")
    fw = [r for r in cap.events if r["trace_event_source"] == "framework"]
    first_drv = min((r for r in fw if r["name"] == "aten::mul.Tensor"), key=lambda r: r["start_ts"])
    first_disp = min((r for r in fw if r["name"] == "aten::mul" and r["flow_id"]), key=lambda r: r["start_ts"])
    cap.events = [r for r in cap.events if r is not first_drv and r is not first_disp]
    _shift_framework(cap, 50_000)
    profile = _load(_write(tmp_path / "v", cap))
    assert _seed(profile) == SEED
    assert not any("linked to no framework op" in n for n in profile.meta.notes)


def test_ten_percent_of_trace_json_rows_missing(tmp_path: Path) -> None:
    """trace.json lacks rows Explorer has: a lacking op's copy becomes an op, with its device time."""
    cap = generator().build_capture("naive")
    ops = [e for e in cap.trace["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == "aten::mul"]
    ext = ops[1]["args"]["External id"]  # the second aten::mul and its PrivateUse1 rows
    cap.trace["traceEvents"] = [e for e in cap.trace["traceEvents"] if (e.get("args") or {}).get("External id") != ext]
    _shift_framework(cap, 50_000)
    profile = _load(_write(tmp_path / "v", cap))
    table = key_averages(profile)
    assert _seed(profile) == SEED
    assert table.sum_self_device == pytest.approx(TOTAL)
    note = next(n for n in profile.meta.notes if "copy trace.json rows" in n)
    assert "26 of 29" in note and "3 unmatched" in note and "listed as ops, keeping their device time" in note


def test_privateuse1_dispatch_rows_named_like_their_op(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """torch folds a same-named only child into its op (_remove_dup_nodes) and lifts the child's kernels; the
    Neuron system-trace time is not a torch kernel, so it stays with the op: calls and Self NEURON as seeded."""
    cap = generator().build_capture("naive")
    dispatch = [e for e in cap.trace["traceEvents"] if e.get("cat") == "privateuse1_runtime"]
    assert len(dispatch) == 6 and {e["name"] for e in dispatch} == set(SEED)
    root = _write(tmp_path / "v", cap)
    profile = _load(root)
    table = key_averages(profile)
    assert _seed(profile) == SEED
    for name, cpu in SEED_CPU.items():
        assert table.self_cpu_time_total[table.find(name)] == pytest.approx(cpu)
    # the driver rows lie inside their ops (the scheduling call): the step's Self CPU is its span minus its
    # top-level ops' spans, recomputed here from trace.json's rows
    rows = [e for e in cap.trace["traceEvents"] if e.get("ph") == "X"]
    (step_row,) = [e for e in rows if e["name"] == "ProfilerStep#3"]
    ops = [e for e in rows if e.get("cat") == "cpu_op"]
    top = [e for e in ops if not any(o is not e and o["ts"] <= e["ts"] and o["ts"] + o["dur"] >= e["ts"] + e["dur"]
                                     for o in ops)]
    assert len(top) == 6
    step = table.find("ProfilerStep*")
    assert table.self_cpu_time_total[step] == pytest.approx(step_row["dur"] - sum(e["dur"] for e in top), abs=1e-3)
    assert table.self_cpu_time_total[step] > 0
    assert main(["summary", str(root)]) == 0
    out = capsys.readouterr().out
    assert "negative Self CPU" not in out and "Self CPU % above 100%" not in out


def test_driver_rows_that_outlast_their_op_follow_torchs_rules(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The rule on its own fixture (not the samples' shape): driver rows spanning until the device finished are
    re-threaded under their ops as torch does, outlast them and become children of the step, so the step's
    children add up to more than the step: a negative Self CPU, shown as torch prints it with a note saying why."""
    cap = generator().build_capture("naive", driver_until_device_done=True)
    drivers = [e for e in cap.trace["traceEvents"] if e.get("cat") == "privateuse1_driver"]
    ops = {e["args"]["External id"]: e for e in cap.trace["traceEvents"] if e.get("cat") == "cpu_op" and "args" in e}
    assert len(drivers) == 6
    assert all(d["ts"] + d["dur"] > ops[d["args"]["External id"]]["ts"] + ops[d["args"]["External id"]]["dur"]
               for d in drivers)  # each outlasts its op
    root = _write(tmp_path / "v", cap)
    table = key_averages(_load(root))
    assert _seed(_load(root)) == SEED
    for name, cpu in SEED_CPU.items():
        assert table.self_cpu_time_total[table.find(name)] == pytest.approx(cpu)
    step = table.find("ProfilerStep*")
    assert table.self_cpu_time_total[step] < -5000
    assert main(["summary", str(root)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"ProfilerStep\*\s+-\d+\.\d+%\s+-5\d{3}\.\d{3}us", out)
    assert "negative Self CPU, as torch prints it: ProfilerStep*" in out and "privateuse1_driver" in out
    assert "re-threaded" in out


def test_neuron_total_of_each_row_is_its_own_chains_device_time(tmp_path: Path) -> None:
    """Issue 26: on the bundled sample's shape no row's NEURON total holds another op's execution. Each op's
    NEURON total is the merged nc_exec_running time of the chains that start at its calls (per-core copies
    merged); a driver row's is 0 (its execution is counted once, with its op, as torch counts a launch row's
    kernels with the op); the step's is the sum."""
    import numpy as np

    for trace in (True, False):
        profile = _load(_write(tmp_path / f"v{trace}", generator().build_capture("naive"), trace=trace))
        table = key_averages(profile)
        own: dict[str, float] = {}
        for i in np.nonzero(profile.cat_mask(("cpu_op",)))[0].tolist():
            for branch in follow(profile, i).branches:
                first = branch[0].events[0]  # the op itself, or its dispatch row (named like it, inside it)
                inside = profile.start[i] <= profile.start[first] and profile.end[first] <= profile.end[i]
                if branch[0].name != profile.name_of(i) or not inside or branch[-1].name != "nc_exec_running":
                    continue
                hw = branch[-1]
                own[profile.name_of(i)] = own.get(profile.name_of(i), 0.0) + (hw.end - hw.start) / 1000.0
        assert {k: round(v, 1) for k, v in own.items()} == {k: dev for k, (_, dev) in SEED.items()}
        for name, dev in own.items():
            assert float(table.device_time_total[table.find(name)]) == pytest.approx(dev, abs=0.05)
        for driver in ("aten::mul.Tensor", "aten::mean.dim", "aten::add.Tensor", "aten::rsqrt.default"):
            k = table.find(driver)
            assert k >= 0 and float(table.device_time_total[k]) == 0.0, (trace, driver)
        assert float(table.device_time_total[table.find("ProfilerStep*")]) == pytest.approx(TOTAL, abs=0.05)


def test_nothing_matches_keeps_device_time_on_explorer_rows(tmp_path: Path) -> None:
    """Explorer's framework rows carry other names than trace.json's (nothing matches): their device time stays
    on them (listed as ops) and a note counts them; no Self NEURON is lost silently."""
    cap = generator().build_capture("naive")
    for r in cap.events:
        if r["trace_event_source"] == "framework":
            r["name"] = r["name"].replace("aten::", "neuron::")
    profile = _load(_write(tmp_path / "v", cap))
    table = key_averages(profile)
    assert table.sum_self_device == pytest.approx(TOTAL)
    for name, (calls, dev) in SEED.items():
        k = table.find(name.replace("aten::", "neuron::"))
        assert (int(table.count[k]), round(float(table.self_device_time_total[k]), 1)) == (calls, dev)
        assert table.self_device_time_total[table.find(name)] == 0  # trace.json's op: no link to the device
    note = next(n for n in profile.meta.notes if "copy trace.json rows" in n)
    # the six dispatch copies (device time) and the scalar copy's op (its host-to-device copy)
    assert "1 of 29" in note and "28 unmatched" in note and "7 match no trace.json row" in note


def test_explorer_external_ids_match_directly(tmp_path: Path) -> None:
    """An External id kept in Explorer's attributes matches its trace.json row whatever the clocks say."""
    import json

    cap = generator().build_capture("naive")
    rows = [e for e in cap.trace["traceEvents"] if e.get("ph") == "X" and "External id" in (e.get("args") or {})]
    for r in cap.events:
        if r["trace_event_source"] != "framework":
            continue
        us = (r["start_ts"] - generator().BASE_NS) / 1000
        (src,) = [e for e in rows if e["name"] == r["name"] and abs(e["ts"] - us) < 0.002]
        extra = json.loads(r["extra_attributes_json"] or "{}")
        extra["External id"] = src["args"]["External id"]
        r["extra_attributes_json"] = json.dumps(extra)
    _shift_framework(cap, 7_000_000_000)  # 7 s: no start difference would be believed
    profile = _load(_write(tmp_path / "v", cap))
    assert _seed(profile) == SEED
    assert any("29 of 29" in n and "by External id" in n for n in profile.meta.notes)


def test_dispatch_chain_from_an_export_only_directory(tmp_path: Path) -> None:
    profile = _load(_write(tmp_path / "v", generator().build_capture("naive"), trace=False))
    op = next(i for i in range(len(profile)) if profile.name_of(i) == "aten::mul" and profile.cat_of(i) == "cpu_op")
    (branch,) = follow(profile, op).branches
    assert [h.name for h in branch] == ["aten::mul", "aten::mul.Tensor", "nrta_execute_schedule", "nc_exec_running"]
    assert branch[-1].cores == 2
