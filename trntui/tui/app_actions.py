"""The explorer's own key actions (trntui/tui/app.py `TrntuiApp.BINDINGS`): help, maximize, Esc, Ctrl-C, the run
picker, and the palette's pane and sort entries. A mixin of `TrntuiApp`, which holds the state they act on."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input


class AppActions:
    """The actions of the explorer's keys that are not one of its feature screens (`open_screen`)."""

    # provided by TrntuiApp (textual.app.App and its own attributes)
    screen: Any
    workers: Any
    path: Any
    runs: Any
    run_name: Any
    ops: Any
    push_screen: Any
    query_one: Any
    call_later: Any
    run_action: Any
    exit: Any
    notify: Any
    start_load: Any
    _info: Any
    action_help_quit: Any

    def action_help(self) -> None:
        from trntui.tui.keys import key_reference, sections
        from trntui.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(key_reference(sections(type(self)))))

    def action_toggle_maximize(self) -> None:
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is not None:
            target = screen.focused
            if isinstance(target, Input):
                target = self.ops
            screen.maximize(target)

    def action_escape(self) -> None:
        # (Esc in the filter box clears it: RegexFilterInput's own binding)
        if self.loading_now():
            self.workers.cancel_group(self, "load")  # the worker stops at the loader's next chunk
            self._info(f"{self.path.name} · cancelling the load…")
            return
        if self.screen.maximized is not None:
            self.screen.minimize()

    def action_interrupt(self) -> None:
        """Ctrl-C: while a run loads, cancel the load (the worker stops at the loader's next chunk, `trntui open`
        stops its loader process) and quit, as Esc then q would; otherwise Textual's hint (ctrl+q quits; in a
        text box Ctrl-C copies)."""
        if self.loading_now():
            self.workers.cancel_group(self, "load")
            self._info(f"{self.path.name} · cancelling the load…")
            self.exit()
            return
        self.action_help_quit()

    def loading_now(self) -> bool:
        """Whether a load worker is running."""
        return any(w.group == "load" and w.is_running for w in self.workers)

    def action_pick_run(self) -> None:
        from trntui.tui.screens.runs import RunPicker

        if len(self.runs) <= 1:
            self.notify("This path holds one run", severity="information")
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start_load(name)

        self.push_screen(RunPicker([r.name for r in self.runs], self.run_name), chosen)

    def action_focus_pane(self, pane: str) -> None:
        self.query_one(f"#{pane}").focus()

    def action_pane(self, pane: str, action: str) -> None:
        """Focus `pane` and run one of its actions (palette entries)."""
        widget = self.query_one(f"#{pane}")
        widget.focus()
        self.call_later(self.run_action, action, widget)

    def action_sort(self, key: str) -> None:
        self.ops.sort_by(key)
