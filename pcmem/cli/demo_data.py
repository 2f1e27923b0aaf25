"""A small sample memory written for pcmem: an agent's notes while helping a team ship a desktop app.

Used by ``pcmem demo`` so a new user sees real entries, revisions and (once search lands) hits within a minute.
"""

from __future__ import annotations

DEMO_SCOPE = "pcmem-demo"

# (entry_id, kind, text, metadata)
DEMO_ENTRIES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("release-day", "decision", "Releases of the Lumen desktop app go out on Thursdays after the 14:00 smoke test.",
     {"source": "standup 2026-10-02"}),
    ("release-owner", "fact", "Priya Natarajan owns the release checklist and signs off every build.",
     {"source": "standup 2026-10-02"}),
    ("db-choice", "decision", "Lumen stores its local data in one DuckDB file per user profile; no server process.",
     {"source": "architecture review"}),
    ("sync-later", "decision", "Cloud sync is postponed until after version 2.0; the team wants offline to be solid first.",
     {"source": "planning 2026-10-09"}),
    ("marco-tea", "preference", "Marco drinks oolong tea, never coffee, and prefers meetings before lunch.",
     {"source": "chat"}),
    ("priya-focus", "preference", "Priya blocks Wednesday afternoons for focused work; do not book meetings then.",
     {"source": "chat"}),
    ("crash-bug", "event", "Build 1.8.2 crashed on startup on Windows when the profile path contained an emoji.",
     {"source": "issue tracker", "issue": "LUM-412"}),
    ("crash-fix", "event", "The emoji profile-path crash was fixed in 1.8.3 by normalising paths to NFC before opening.",
     {"source": "issue tracker", "issue": "LUM-412"}),
    ("ci-runner", "fact", "Continuous integration runs on two self-hosted Linux runners in the Lisbon office.",
     {"source": "infra wiki"}),
    ("font-choice", "decision", "The UI font is Inter at 14 px; code blocks use JetBrains Mono.",
     {"source": "design review"}),
    ("onboarding", "fact", "New contributors start with the 'good first issue' label and pair with Marco for a day.",
     {"source": "handbook"}),
    ("support-hours", "fact", "User support answers e-mail within one business day, Monday to Friday, 9:00-17:00 CET.",
     {"source": "handbook"}),
    ("telemetry", "decision", "Lumen collects no telemetry by default; crash reports are opt-in and anonymised.",
     {"source": "privacy review"}),
    ("beta-testers", "fact", "Forty-two beta testers receive nightly builds through the 'canary' channel.",
     {"source": "release notes"}),
    ("budget", "fact", "The 2027 budget allows one more hire: a designer, starting in March.",
     {"source": "planning 2026-11-06"}),
    ("offsite", "event", "The team offsite is in Porto from 12 to 14 May 2027; Marco books the venue.",
     {"source": "planning 2026-11-06"}),
    ("zh-meeting", "fact", "与上海合作伙伴的周会改到每周二上午十点。", {"source": "chat", "lang": "zh"}),
    ("ja-docs", "fact", "日本語のドキュメントは田中さんが翻訳し、毎月更新します。", {"source": "chat", "lang": "ja"}),
)

# Applied after the import so the demo has revisions to browse: (operation, entry_id, new text or None).
DEMO_EDITS: tuple[tuple[str, str, str | None], ...] = (
    ("revise", "release-day",
     "Releases of the Lumen desktop app go out on Tuesdays after the 14:00 smoke test (moved from Thursdays)."),
    ("retire", "sync-later", None),
)
