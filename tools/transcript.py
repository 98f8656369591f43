"""The checked transcript both demos print (tools/demo.py, tools/demo_codex.py).

A demo narrates its flow (``step``, ``say``), records a check for every claim
it proves (``check``: ``[ok]`` or ``[FAILED]``) and ends with its verdict
(``finish``), which is also its exit status.
"""

from __future__ import annotations


class Transcript:
    """Numbered steps, message lines and checks, printed as they happen."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.checks = 0

    def say(self, arrow: str, text: str) -> None:
        """One line of the flow: ``arrow`` shows its direction (``->``, ``<-``)."""
        print(f"  {arrow} {text}", flush=True)

    def step(self, title: str) -> None:
        print(f"\n== {title}", flush=True)

    def check(self, ok: bool, what: str) -> None:
        """Record (and print) whether ``what`` held."""
        self.checks += 1
        print(f"  [{'ok' if ok else 'FAILED'}] {what}", flush=True)
        if not ok:
            self.failures.append(what)

    def finish(self, held: str = "", note: str = "") -> int:
        """Print the verdict, every failed check listed; 0 when all held.

        ``held`` follows "OK: all N checks held"; ``note`` (e.g. the time
        taken) ends the verdict line either way.
        """
        print()
        if self.failures:
            print(f"FAILED: {len(self.failures)} of {self.checks} checks{note}")
            for failure in self.failures:
                print(f"  - {failure}")
            return 1
        print(f"OK: all {self.checks} checks held{held}{note}")
        return 0
