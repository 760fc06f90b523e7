"""The progress bar of a tournament, with what its text agents spent so far.

``with GamesProgress(on, total) as update`` gives ``update(k, note)``, which advances
the bar by ``k`` games and shows ``note`` (:func:`spent`: requests, cached replies,
tokens, fallbacks) beside it. Rich draws the bar on standard error, so standard output
keeps only the results.
"""

from __future__ import annotations

from collections.abc import Sequence


def spent(records: Sequence[tuple]) -> str:
    """What the text agents spent so far (requests, cached replies, tokens), or ``""``."""
    rows = [u for r in records if len(r) > 3 for u in r[3] if u is not None]
    if not rows:
        return ""
    requests = sum(u["requests"] for u in rows)
    cached = sum(u["cached"] for u in rows)
    tokens = sum(u["prompt_tokens"] + u["completion_tokens"] for u in rows)
    fallbacks = sum(u["fallbacks"] for u in rows)
    return f"{requests} calls, {cached} cached, {tokens:,} tokens, {fallbacks} fallbacks"


class GamesProgress:
    """A rich progress bar (or nothing) usable as ``with GamesProgress(on, total) as update``.

    ``update(k, note)`` advances it by ``k`` games and shows ``note`` (the text agents'
    calls and tokens so far) beside it.
    """

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total = enabled, total

    def __enter__(self):
        if not self.enabled:
            return lambda k, note="": None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=Console(stderr=True),
        )
        self.bar.__enter__()
        task = self.bar.add_task("games", total=self.total)

        def update(k: int, note: str = "") -> None:
            description = f"games ({note})" if note else "games"
            self.bar.update(task, advance=k, description=description)

        return update

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.__exit__(*exc)
