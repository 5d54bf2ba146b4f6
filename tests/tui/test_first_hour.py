"""The app's first hour with a user's own traces (issue 26): numbers that look wrong say why, load notes are
visible, error screens offer only what works and exit 2."""

from __future__ import annotations

import re

from trntui.analysis.surprises import MARK
from trntui.cli import main
from trntui.tui.screens.error import ErrorScreen
from trntui.tui.screens.notes import NotesScreen

from tests.malformed import valid_trace

from .conftest import REPO, opened, settle


def cli_notes(capsys, *args: str) -> list[str]:
    """The `Note:` lines `trntui summary` prints under its table."""
    assert main(["summary", *args]) == 0
    return [line[len("Note: "):] for line in capsys.readouterr().out.splitlines() if line.startswith("Note: ")]


def notes_shown(app) -> str:
    """The notes screen's text, as drawn (lines joined, the wrapping undone)."""
    assert isinstance(app.screen, NotesScreen)
    widget = app.screen.query_one("#notes-text")
    lines = [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]
    return " ".join(line.strip() for line in lines if line.strip())


async def test_surprising_cells_are_marked_and_explained_like_the_cli(corpus_dir, capsys):
    """ROCm's `ProfilerStep*` Self CUDA % of 692% is drawn with a `!`, and `!` on its row shows the note the CLI
    prints for it (one text, made once: trntui/analysis/surprises.py); an ordinary row has no mark."""
    path = corpus_dir / "rocm_mi250_train.json.gz"
    [note] = [n for n in cli_notes(capsys, str(path)) if n.startswith("Self CUDA % above 100%")]
    async with opened(path, size=(120, 30)) as (app, pilot):
        ops = app.ops
        rows = [ops.render_line(y).text for y in range(1, len(ops.view) + 1)]
        step = next(r for r in rows if r.startswith("ProfilerStep* "))
        assert re.search(r"692\.00%" + re.escape(MARK) + r"\s*$", step), step
        assert not any(MARK in r for r in rows if r.startswith("aten::copy_ "))
        ops.move_to_row(ops.table.find("ProfilerStep*"))
        await pilot.press("exclamation_mark")
        await pilot.pause()
        shown = notes_shown(app)
        assert "The numbers marked ! on ProfilerStep*" in shown
        assert " ".join(note.split()) in shown


async def test_negative_self_cpu_is_marked(capsys, tmp_path):
    """A negative Self CPU of `ProfilerStep*` (a Neuron capture whose driver rows outlast their ops; the bundled
    sample's do not) is marked; the explanation is the CLI's note."""
    from tests.neuron_samples import generator

    gen = generator()
    cap = gen.build_capture("naive", driver_until_device_done=True)
    path = tmp_path / "naive"
    gen.write_trace(cap, path / f"{cap.instance}_pid_{cap.pid}" / gen.TIMESTAMP_DIR / "trace.json")
    gen.write_parquet_export(cap, path / gen.EXPORT_DIR)
    notes = [n for n in cli_notes(capsys, str(path)) if n.startswith("negative Self CPU")]
    assert len(notes) == 1 and "ProfilerStep*" in notes[0]
    async with opened(path, size=(120, 30)) as (app, pilot):
        ops = app.ops
        rows = [ops.render_line(y).text for y in range(1, len(ops.view) + 1)]
        marked = [r for r in rows if MARK in r]
        for note in notes:
            assert any(r.startswith("ProfilerStep*") and re.search(r"-\d+\.\d{3}us" + re.escape(MARK), r) for r in marked)
        await pilot.press("exclamation_mark")
        await pilot.pause()
        shown = notes_shown(app)
        for note in notes:
            assert " ".join(note.split()) in shown


async def test_truncated_trace_shows_a_banner_and_the_clis_notes(tmp_path, capsys):
    """A trace cut short: a banner under the header says so in the CLI's words (not only `· 1 skipped`), and
    `!` lists every note the CLI prints."""
    data = valid_trace()
    path = tmp_path / "cut.json"
    path.write_bytes(data[: len(data) * 2 // 3])
    notes = cli_notes(capsys, str(path))
    truncated = next(n for n in notes if n.startswith("file is truncated"))
    async with opened(path, size=(120, 30)) as (app, pilot):
        banner = app.query_one("#notice")
        assert banner.display and banner.region.height == 1
        assert truncated in banner.render_line(0).text
        await pilot.press("exclamation_mark")
        await pilot.pause()
        shown = notes_shown(app)
        assert all(" ".join(n.split()) in shown for n in notes)
        assert "Skipped 1 input record(s)" in shown


async def test_skipped_records_alone_show_a_banner_in_the_clis_words(tmp_path, capsys):
    """A whole file with one unusable event (no truncation): the banner says what was skipped, in the words of
    the CLI's `Skipped …` line, and `!` lists it with the CLI's notes."""
    import json

    doc = json.loads(valid_trace())
    doc["traceEvents"].append({"ph": "X", "name": "bad", "ts": "soon", "dur": 1, "pid": 1, "tid": 1, "cat": "cpu_op"})
    path = tmp_path / "one_bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    (skipped,) = [line for line in out.splitlines() if line.startswith("Skipped ")]
    assert "truncated" not in out
    async with opened(path, size=(120, 30)) as (app, pilot):
        banner = app.query_one("#notice")
        assert banner.display and banner.region.height == 1
        line = banner.render_line(0).text
        assert skipped in line and "!: every note" in line
        await pilot.press("exclamation_mark")
        await pilot.pause()
        assert skipped in notes_shown(app)


async def test_clean_trace_has_no_banner(corpus_dir):
    """A whole trace: no banner takes a line."""
    async with opened(corpus_dir / "cuda_simple_add.json.gz", size=(100, 24)) as (app, pilot):
        assert app.query_one("#notice").region.height == 0


async def test_error_screen_offers_what_works_and_quits_with_2(tmp_path):
    """A single bad file: the error screen does not offer `r: pick another run` (there is no other run), `r`
    does nothing there, and `q` quits with exit code 2, like the CLI."""
    bad = tmp_path / "trace.json"
    bad.write_text("this is not json at all {")
    async with opened(bad) as (app, pilot):
        assert isinstance(app.screen, ErrorScreen)
        keys = app.screen.query_one("#error-keys").render_line(0).text
        assert "pick another run" not in keys and "q: quit" in keys
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.exit_code() == 2


async def test_quit_after_closing_the_error_exits_2(tmp_path):
    """Closing the error and quitting later still exits 2 while nothing was loaded."""
    bad = tmp_path / "trace.json"
    bad.write_text("[1, 2")
    async with opened(bad) as (app, pilot):
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.exit_code() == 2


async def test_panes_agree_on_the_op_that_launched_a_hardware_event():
    """On a hardware `nc_exec_running` event of the Neuron sample, the chain pane's launching op is the op `t`
    opens the call tree on, the op the call-tree pane follows, and selecting that op highlights the event
    (one rule: analysis/links.launching_ops); before, `t` said there was no launching op."""
    from trntui.model.profile import Tier
    from trntui.tui.screens.calltree import CallTreeScreen

    async with opened(REPO / "sample_profiles" / "neuron" / "naive", size=(160, 50)) as (app, pilot):
        profile = app.profile
        hw = min((i for i in range(len(profile)) if profile.name_of(i) == "nc_exec_running"
                  and profile.lane_of(i).tier == Tier.HARDWARE), key=lambda i: int(profile.start[i]))
        app.timeline.focus()
        app.timeline.go_to_event(hw)
        app.chain_event(hw)
        await pilot.pause()
        chain = app.chain.chain
        op = chain.root
        assert profile.lane_of(op).tier == Tier.DISPATCH and profile.name_of(op).startswith("aten::")
        assert chain.root_hop.rule == "launched it"
        assert app.timeline.event_under_cursor() == hw
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, CallTreeScreen), [str(n.message) for n in app._notifications]  # noqa: SLF001
        view = app.screen.tree_view
        assert view.calltree.nodes[view.node].events[0] == op or op in view.calltree.nodes[view.node].events
        await pilot.press("escape")
        await pilot.pause()
        tree = app.calltree
        await settle(pilot, lambda: tree.calltree is not None)
        assert tree.calltree is not None and op in tree.calltree.node_of, tree.hint
        row = next(k for k in range(len(app.table)) if op in set(int(e) for e in app.table.rows_events[k]))
        app.select_op(row)
        await pilot.pause()
        assert hw in set(int(e) for e in app.timeline.selection)


async def test_ranks_hint_names_a_key_of_the_app(corpus_dir, tmp_path):
    """Runs that form no job: `R` says so and names what the app can do (not `--all`, an option `open` lacks);
    pressing the key it names opens the Ranks screen with every run as a rank."""
    from trntui.tui.screens.ranks import RanksScreen

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "trace.json.gz").write_bytes((corpus_dir / "cuda_simple_add.json.gz").read_bytes())
    (tmp_path / "b" / "trace.json.gz").write_bytes((corpus_dir / "cpu_only.json.gz").read_bytes())
    async with opened(tmp_path, size=(120, 30), run="a") as (app, pilot):
        assert len(app.runs) == 2
        await pilot.press("R")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]  # noqa: SLF001
        hint = next(m for m in said if "no job" in m)
        assert "--all" not in hint and "R again" in hint
        await pilot.press("R")
        await settle(pilot, lambda: isinstance(app.screen, RanksScreen))
        assert isinstance(app.screen, RanksScreen)


async def test_csv_dialog_offers_a_whole_path(corpus_dir, tmp_path, monkeypatch):
    """`w` offers a whole path (the start directory, a name after the run), and Enter writes that file."""
    from textual.widgets import Input

    from trntui.tui.screens.prompt import PromptScreen

    monkeypatch.chdir(tmp_path)
    async with opened(corpus_dir / "cuda_simple_add.json.gz", size=(100, 24)) as (app, pilot):
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        value = app.screen.query_one(Input).value
        assert value == str(tmp_path / "cuda_simple_add.json.gz-ops.csv")
        await pilot.press("enter")
        await pilot.pause()
    assert (tmp_path / "cuda_simple_add.json.gz-ops.csv").read_text().startswith("name,device_type,")


async def test_load_stages_count_up_to_the_last(corpus_dir):
    """The header's stage counter counts every stage once, never goes back (the loader's progress after the
    table started showed `(2/5)` again) and ends at `(5/5)`."""
    from trntui.tui.app import TrntuiApp
    from trntui.tui.messages import LoadProgress

    seen = []
    app = TrntuiApp(corpus_dir / "cuda_ns_resolution_68k.json.gz")
    async with app.run_test(size=(100, 24), message_hook=seen.append) as pilot:
        await app.workers.wait_for_complete()
        await settle(pilot, lambda: app.profile is not None)
    steps = [(m.stage, m.step, m.total) for m in seen if isinstance(m, LoadProgress)]
    numbers = [step for _, step, _ in steps]
    assert numbers == sorted(numbers), steps
    assert numbers[-1] == steps[-1][2] == 5, steps
    table = next(step for stage, step, _ in steps if stage.startswith("key_averages"))
    assert table >= 3


async def test_no_lane_is_labelled_none(corpus_dir):
    """A thread id written as a negative int (wrapped to int32) names its lane by that number, not `TID:None`,
    on the timeline as drawn."""
    async with opened(corpus_dir / "cuda_ns_resolution_68k.json.gz", size=(200, 55)) as (app, pilot):
        labels = [lane.label for lane in app.profile.lanes]
        assert not [x for x in labels if "None" in x]
        assert any(x.endswith("/runtime/TID:-247463936") for x in labels)
        timeline = app.timeline
        lines = [timeline.render_line(y).text for y in range(timeline.size.height)]
        assert not [x for x in lines if "TID:None" in x]
        assert any("runtime/TID:-247463936" in x for x in lines), lines


async def test_cursor_never_garbles_a_ruler_label(corpus_dir):
    """Wherever the cursor stands, the ruler's labels read as times (`|+200µs`, or the tick alone where the
    cursor is inside its text), never `|+▼µs`; the cursor's `▼` is always drawn at its column."""
    time_label = re.compile(r"^▼?[|▼]([+-]?\d+(\.\d+)?(ns|µs|ms|s))?▼?$")  # the cursor may touch a label
    async with opened(corpus_dir / "cuda_simple_add.json.gz", size=(120, 30)) as (app, pilot):
        timeline = app.timeline
        timeline.focus()
        await pilot.pause()
        head = timeline.label_width + 1
        for col in range(0, timeline.cells, 3):
            timeline.cursor_t = timeline.t0 + (col + 0.5) * timeline.ns_per_cell
            timeline.refresh()
            ruler = timeline._ruler(timeline.size.width).text  # noqa: SLF001 - the ruler line as drawn
            assert ruler[head + col] == "▼", (col, ruler)
            for token in ruler[head:].split():
                assert time_label.match(token) or set(token) <= {"|", "▼"}, (col, ruler)


def _footer_keys(app) -> tuple[str, list[str], list[str]]:
    """The footer line as drawn, the keys it shows (`key description`, the palette's left out) and every key of
    the footer (those the fitting left out included)."""
    from textual.widgets._footer import FooterKey

    from trntui.tui.capture import screen_text
    from trntui.tui.widgets.keys_footer import HELP_ACTIONS

    line = screen_text(app).splitlines()[-1]
    footer = app.screen.query_one("KeysFooter")
    shown = [f"{k.key_display} {k.description}" for k in footer.query(FooterKey) if not k.has_class("-command-palette")]
    every = [f"{app.get_key_display(b)} {b.description}"
             for (_, b, _, _) in app.screen.active_bindings.values() if b.show]
    every = list(dict.fromkeys(k for k in every if not k.startswith(("F1 ", "f1 "))))  # f1 is ?'s second key
    return line, shown, every


async def test_footer_shows_what_fits_and_help_the_rest():
    """At 120 columns the footer shows `R Ranks` (keys that do nothing now and the minor ones give way), at 80
    `? Help` says how many keys it lists beside those shown; no key is cut, and a resize refits the line. The
    issue's case is an app opened at 120 columns (not only one grown to it): there every key shown is whole on
    the line, `R` does what it says, and at 80 the keys left out (`R Ranks` among them) are counted by `? Help
    (+N keys)` and listed by `?`."""
    from trntui.tui.capture import screen_text
    from trntui.tui.screens.help import HelpScreen
    from trntui.tui.screens.ranks import RanksScreen

    async with opened(REPO / "sample_profiles" / "cpu", size=(120, 30), run="naive") as (app, pilot):
        line, shown, every = _footer_keys(app)
        assert len(line) <= 120 and line.rstrip().endswith("^p Commands"), line
        assert "R Ranks" in shown and "c Compare runs" in shown, line
        for key in shown:  # each key whole on the line, none cut
            assert f" {key} " in f"{line} ", (key, line)
        left_out = len(every) - len(shown)
        help_key = next(k for k in shown if k.startswith("? Help"))
        assert help_key == ("? Help" if left_out == 0 else f"? Help (+{left_out} key{'s' if left_out > 1 else ''})")
        await pilot.press("R")  # reachable: one job of one rank each here, R says so and R again opens them
        await pilot.pause()
        assert any("no job with several ranks here" in n.message for n in app._notifications)
        await pilot.press("R")
        assert await settle(pilot, lambda: isinstance(app.screen, RanksScreen))

    async with opened(REPO / "sample_profiles" / "cpu", size=(80, 24), run="naive") as (app, pilot):
        footer = screen_text(app).splitlines()[-1]
        assert re.search(r"\? Help \(\+\d+ keys\)", footer), footer
        assert footer.rstrip().endswith("^p Commands")
        line, shown, every = _footer_keys(app)
        assert len(line) <= 80 and "R Ranks" not in line and "R Ranks" in every, line
        left_out = len(every) - len(shown)
        assert f"? Help (+{left_out} keys)" in line, (line, every)
        await pilot.press("question_mark")
        assert await settle(pilot, lambda: isinstance(app.screen, HelpScreen))
        listed = str(app.screen.query_one("#help-text").render())
        missing = [k for k in every if k not in shown
                   and not re.search(rf"^\s*{re.escape(k.split(' ', 1)[0])}\s+.*{re.escape(k.split(' ', 1)[1])}",
                                     listed, re.M)]
        assert len(every) > len(shown) and not missing, missing  # every key left out of the footer is listed by ?
        await pilot.press("escape")
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "R Ranks" in footer and "c Compare runs" in footer and "? Help" in footer, footer
        assert footer.rstrip().endswith("^p Commands")


def test_headless_compare_fits_the_terminal_and_wide_prints_full_names(corpus_dir, capsys, monkeypatch, tmp_path):
    """`compare --no-tui` shortens names to the terminal (the kernel rows read differently); `--wide` prints
    them whole."""
    runs = []
    for name in ("before", "after"):
        (tmp_path / f"{name}.json.gz").write_bytes((corpus_dir / "cuda_alexnet.json.gz").read_bytes())
        runs.append(str(tmp_path / f"{name}.json.gz"))
    monkeypatch.setenv("COLUMNS", "150")
    assert main(["compare", *runs, "--no-tui", "--filter", "elementwise"]) == 0
    narrow = capsys.readouterr().out.splitlines()
    assert main(["compare", *runs, "--no-tui", "--filter", "elementwise", "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    kernels = [line.split("  ")[0] for line in narrow if line.startswith(("vectorized_elem", "elementwise_kernel"))]
    assert len(kernels) >= 2 and len(set(kernels)) == len(kernels), kernels
    assert max(len(x) for x in narrow) <= max(len(x) for x in wide) - 40
    assert any(line.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::") for line in wide)
    width = max(len(x) for x in narrow if x.startswith("---"))
    assert width <= 150, width


def test_headless_tables_fit_80_columns(corpus_dir, capsys, monkeypatch, tmp_path):
    """At COLUMNS=80 every line of `compare --no-tui` and `overview` fits (it was 255 wide): the columns that
    matter least give way and are named under the table, the sorted delta and the status stay, prose folds, the
    kernel rows still read differently; a pipe without COLUMNS gets every column (scripts, CI)."""
    runs = []
    for name in ("before", "after"):
        (tmp_path / f"{name}.json.gz").write_bytes((corpus_dir / "cuda_alexnet.json.gz").read_bytes())
        runs.append(str(tmp_path / f"{name}.json.gz"))
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", *runs, "--no-tui", "--limit", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(x) for x in lines) <= 80, max(lines, key=len)
    head = next(x for x in lines if x.startswith("Name "))
    assert "Δ Self CUDA" in head and head.rstrip().endswith("Status"), head
    assert any(x.startswith("(6 columns left out to fit 80 columns: Calls #1, Calls #2") for x in lines)
    kernels = [x.split("  ")[0] for x in lines if x.startswith(("vectorized_elem", "elementwise_kernel"))]
    assert len(kernels) >= 2 and len(set(kernels)) == len(kernels), kernels
    assert main(["overview", runs[0]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(x) for x in lines) <= 80, max(lines, key=len)
    assert "Step time breakdown (us)" in lines and any(x.startswith("- [amp] 75% of the kernel") for x in lines)
    monkeypatch.delenv("COLUMNS")
    assert main(["compare", *runs, "--no-tui"]) == 0
    wide = capsys.readouterr().out
    assert "left out to fit" not in wide and "Calls #1" in wide and "Host ops" in wide


async def test_app_tables_shorten_names_and_f_shows_them_whole(corpus_dir):
    """At 80 columns the ops table and the overview's kernel table show readable short kernel names (not
    `void at…`), and `f` shows the whole name."""
    from trntui.tui.screens.notes import TextScreen
    from trntui.tui.screens.overview import OverviewScreen

    async with opened(corpus_dir / "cuda_compare_test.json.gz", size=(80, 24)) as (app, pilot):
        ops = app.ops
        rows = [ops.row_text(k) for k in range(len(ops.view))]
        kernels = [r.split("  ")[0] for r in rows if "elementwise_kernel" in r]
        assert kernels and not [r for r in kernels if r.startswith("void ")], kernels
        assert len(set(kernels)) == len(kernels)
        k = next(i for i, r in enumerate(rows) if "elementwise_kernel" in r)
        ops.cursor = k
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, TextScreen)
        body = app.screen.query_one("#text-body")
        text = " ".join(body.render_line(y).text.strip() for y in range(body.size.height))
        assert app.table.name[int(ops.view[k])][:60] in text
        await pilot.press("escape")
        await pilot.press("o")
        await settle(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.screen.query("KernelTableView"))
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        table = app.screen.query_one("KernelTableView")
        first = table.render_line(1).text
        assert first.split("  ")[0].startswith(("vectorized_elementwise_kernel<", "elementwise_kernel<")) or \
            len(first.split("  ")[0].strip()) >= 30, first
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, TextScreen)
