"""fairseq's logged records as typed events (prelnx/child_report.py `Stats`), so that the parent stores values and
never reads fairseq's log text for a number (../shared/DESIGN.md: the plugin emits, launch only stores).

Why a patch: fairseq has no hook for its records. `JsonProgressBar` (the --log-format prelnx plans) holds each one as a
value in `log` (every --log-interval updates: `train_inner`) and `print` (an epoch's `train` summary, a validation
subset's record); wrapped at the class, the event is the very dict its `_format_stats` made (fairseq's `format_stat`:
`{:g}`, meters' `{:.3f}`, the `update` rounded to 3 places, `print`'s `<tag>_` keys), so a row holds what fairseq's
JSON line says. The plugin is imported by fairseq_cli.train's `import_user_module`, before any progress bar is
built. Emitted only where fairseq's progress-bar logger writes: every worker builds a progress bar, but fairseq sets
the other workers' loggers to WARNING (fairseq/distributed/utils.py, `distributed_init`), so rank 0 alone reports.
"""

from __future__ import annotations

import logging

from fairseq.logging import progress_bar

from prelnx.child_report import Stats, emit


def report_stats() -> None:
    """Wrap `JsonProgressBar.log` and `.print` to emit each record they format (once per process)."""
    bar = progress_bar.JsonProgressBar
    if getattr(bar, "prelnx_reports", False):
        return
    format_stats, methods = bar._format_stats, {name: getattr(bar, name) for name in ("log", "print")}

    def formatting(self, stats, epoch=None, update=None):  # type: ignore[no-untyped-def]
        self.prelnx_formatted = format_stats(self, stats, epoch=epoch, update=update)
        return self.prelnx_formatted

    def reporting(method):  # type: ignore[no-untyped-def]
        def logged(self, stats, tag=None, step=None):  # type: ignore[no-untyped-def]
            self.prelnx_formatted = None  # `log` formats (and logs) only every --log-interval updates
            method(self, stats, tag=tag, step=step)
            if self.prelnx_formatted is not None and progress_bar.logger.isEnabledFor(logging.INFO):
                emit(Stats(tag, self.prelnx_formatted, step))

        return logged

    bar._format_stats = formatting
    for name, method in methods.items():
        setattr(bar, name, reporting(method))
    bar.prelnx_reports = True
