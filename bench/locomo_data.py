"""Reading the LoCoMo benchmark file (Maharana et al., ACL 2024; CC BY-NC 4.0) into turns and questions.

Evidence ids in the file are occasionally malformed ("D8:6; D9:17", "D:11:26", "D30:05"); they are repaired where
the intent is clear and reported otherwise, never fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pcmem.errors import InputError

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    date_time: str
    speaker: str
    text: str
    caption: str | None

    def entry_text(self) -> str:
        """What pcmem stores: the session date and speaker travel with the words (temporal questions need them)."""
        photo = f" [shares a photo: {self.caption}]" if self.caption else ""
        return f"[{self.date_time}] {self.speaker}: {self.text}{photo}"


@dataclass(frozen=True)
class Question:
    conversation: str
    index: int
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    repaired: list[str] = field(default_factory=list)  # evidence ids that needed repair
    unresolved: list[str] = field(default_factory=list)  # evidence ids that name no turn (dropped)

    @property
    def scope(self) -> str:
        return f"locomo-{self.sample_id}"


def parse_evidence(raw: str, known: set[str]) -> tuple[list[str], bool]:
    """Canonical ids ("D8:6") in ``raw``; the flag says whether the text was not already one clean id."""
    found = [f"D{int(a)}:{int(b)}" for a, b in _DIA_ID.findall(raw)]
    clean = len(found) == 1 and found[0] == raw.strip()
    return [f for f in found if f in known] + [f for f in found if f not in known and f"~{f}" in known], not clean


def load(path: str | Path) -> list[Conversation]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"cannot read LoCoMo data from {path}: {error}") from None
    if not isinstance(raw, list) or not raw or "conversation" not in raw[0]:
        raise InputError(f"{path} does not look like locomo10.json (a list of conversations)")
    return [_conversation(item) for item in raw]


def _conversation(item: dict) -> Conversation:
    conv = item["conversation"]
    turns: list[Turn] = []
    session = 1
    while f"session_{session}" in conv:
        when = conv.get(f"session_{session}_date_time", "")
        for turn in conv[f"session_{session}"]:
            turns.append(Turn(dia_id=turn["dia_id"], session=session, date_time=when, speaker=turn["speaker"],
                              text=turn.get("text", ""), caption=turn.get("blip_caption")))
        session += 1
    known = {t.dia_id for t in turns}
    result = Conversation(sample_id=str(item["sample_id"]), turns=turns, questions=[])
    for index, qa in enumerate(item.get("qa", [])):
        evidence: list[str] = []
        for raw_id in qa.get("evidence", []):
            ids, repaired = parse_evidence(str(raw_id), known)
            if repaired:
                result.repaired.append(str(raw_id))
            if not ids:
                result.unresolved.append(str(raw_id))
            evidence.extend(i for i in ids if i not in evidence)
        result.questions.append(Question(result.sample_id, index, qa["question"], int(qa["category"]),
                                         tuple(evidence)))
    return result
