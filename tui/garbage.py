"""Python's full garbage collections, kept away from keystrokes while a big scope is on screen.

A full collection walks every object the collector tracks: with a 10,000-entry scope loaded that is ~160,000 objects
(about nine per entry), 300 ms at load 10 on two cores, and it runs when enough new objects have survived,
which an agent's steady writes bring about every few seconds: the event loop stopped for it, and ``j`` with it.
After a scope is read whole this moves what is alive into the collector's permanent generation (:func:`gc.freeze`),
so the next collections walk only what is newer. Before that, what an earlier freeze kept is released and collected,
so a screen closed since (and the manifest it held) is not kept for good; the first freeze collects nothing (it was
most of a big scope's "every row", for a page's garbage). The app releases it all when it exits.
"""

from __future__ import annotations

import gc

#: Below this many entries a full collection is short enough (~100 ms on two loaded cores for the app alone).
FREEZE_FROM = 2000


def settle_after_whole_read(entries: int) -> bool:
    """After ``entries`` were read whole and put on screen; whether the live objects were frozen. The first freeze
    collects nothing first (a full collection then is most of a 10,000-entry scope's walk, on the event loop, for
    the garbage of one page); a later one hands the last freeze back and collects it, so a scope left is not kept."""
    if entries < FREEZE_FROM:
        return False
    if gc.get_freeze_count():
        gc.unfreeze()
        gc.collect()
    gc.freeze()
    return True


def release() -> None:
    """Hand everything frozen back to the collector (the app exits; a program that ran it goes on)."""
    gc.unfreeze()
