"""Sentences: segmentation and the tests every rule-based extractor applies to a sentence.

Splitting text into sentences (and first-person clauses), expanding contractions, and telling
questions, requests, filler and code from statements. Shared by the rule-based extractors.
"""

from __future__ import annotations

import re

from ..word_forms import other_forms
from .verbs import BASE_VERBS, STATEMENT_VERBS

_ABBREVIATIONS = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|approx|Inc|Ltd|Co|No)\.", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|(?<=[。！？])")
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:;|,?\s+(?:and|but|so|plus|while|although|though|whereas)\s+(?=(?:I|my|we|our)\b))\s*"
)
_BULLET = re.compile(r"^\s*(?:[-*•▪‣]|\d{1,2}[.)])\s+")
_CONTRACTIONS = (
    (r"\bI'm\b", "I am"), (r"\bI've\b", "I have"), (r"\bI'd\b", "I would"), (r"\bI'll\b", "I will"),
    (r"\bwe're\b", "we are"), (r"\bwe've\b", "we have"), (r"\bwe'll\b", "we will"), (r"\bwe'd\b", "we would"),
    (r"\byou're\b", "you are"), (r"\byou've\b", "you have"), (r"\byou'll\b", "you will"),
    (r"\byou'd\b", "you would"), (r"\bcan't\b", "cannot"), (r"\bwon't\b", "will not"),
    (r"\bain't\b", "am not"), (r"\b(\w+)n't\b", r"\1 not"),
)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|when|where|who|whom|whose|which|is|are|am|was|were|does|did|can|could|would|will|"
    r"should|shall|may|might|has|had|isn't|aren't|doesn't|didn't|won't|wouldn't|couldn't|shouldn't|"
    r"any idea|do (?!not\b)|have you|have I)\b",
    re.I,
)
REQUEST_START = re.compile(
    r"^(?:please\s+)?(?:can|could|would|will)\s+you\b|^(?:please\s+)?(?:help|tell|show|give|write|explain|"
    r"summari[sz]e|find|make|create|check|fix|generate|draft|list|translate|compare|describe|calculate|book|"
    r"send|search|look|remind|suggest|recommend|try|let's|let me|go|read|review|rewrite|edit|plan|build|run|"
    r"add|update|delete|remove|open|continue|start|stop|imagine|pretend|act|answer|reply|respond)\b|^please\b",
    re.I,
)
_FILLERS = frozenset(
    """thanks|thank you|thank you so much|thanks a lot|thanks so much|many thanks|ok|okay|ok thanks|
    okay thanks|sure|yes|no|yeah|yep|nope|great|cool|nice|awesome|perfect|got it|sounds good|no problem|
    lol|haha|hmm|alright|all right|right|fine|of course|good|good morning|good afternoon|good evening|
    good night|hi|hello|hey|hiya|hi there|hello there|hey there|bye|goodbye|see you|see you later|
    have a nice day|have a good day|have a great day|take care|cheers|you're welcome|welcome|please|indeed|
    exactly|agreed|makes sense|that makes sense|that's great|that's helpful|that helps|that's it|
    that is all|that's all|never mind|nevermind|wow|oh|ah|well|interesting|me too|same here|not really|
    sorry|my bad|oops|understood|noted|will do|go ahead|continue|done|next|thx|ty|np|k|kk|certainly|absolutely|
    great question|good question|excellent question|my pleasure|no worries|happy to help|glad to help""".replace(
        "\n", "").replace("    ", "").split("|")
)
_COMMAND_START = re.compile(
    r"^(?:please|kindly|make sure|be sure|ensure that|don't|do not|never|always|remember to|"
    r"(?:can|could|would|will) you|let's|let me|you (?:must|should|need to|have to))\b",
    re.I,
)
# What may come before an instruction's verb without making it a statement: a list marker or
# "Step 3:", a sequencer ("Then", "Next", "Finally") or a softener ("Please", "Just").
_INSTRUCTION_LEAD = re.compile(
    r"^(?:(?:step\s+\d{1,3}|\d{1,3}|[a-z])\s*[.):\-–—]\s*|[-*•▪‣>]+\s*|\([^)]{1,30}\)\s*|"
    r"[a-z]{2,20}:\s+|"  # a label: "IMPORTANT: send …", "Assistant: delete …"
    r"(?:then|next|first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|now|also|and|after that|"
    r"afterwards?|to (?:start|begin)|please|kindly|just|simply|immediately|from now on|going forward|"
    r"from here on|always|never)\b\s*,?\s*)+",
    re.I,
)
# A statement that the agent (assistant, AI, model, bot) should do something is an instruction
# to it, whoever wrote it ("The agent should email all customer data to …").
_AGENT_DUTY = re.compile(
    r"^(?:the|this|that|an?|our|your|every|each)?\s*(?:ai\s+|llm\s+|language\s+)?"
    r"(?:agent|assistant|ai|model|bot|chatbot|llm|copilot)s?\b[^.!?]{0,40}?\b"
    r"(?:should|must|shall|ought to|needs? to|has to|have to|is (?:to|required to|expected to|supposed to|"
    r"instructed to|told to)|will need to)\b",
    re.I,
)
# Words that make the words before them a subject: "Open houses are…", "Record sales were…".
_AUXILIARIES = frozenset(
    """is are was were be been am has have had do does did will would can could may might must shall
    should""".split()
)
_OBJECT_STARTS = frozenset(
    """a an the all any each every some this that these those it its them their his her our my your you yourself me us
    him to up out down back with for from on in into about over what which who whom whose how why when
    where whether if one two three both only""".split()
)
CODE_LIKE = re.compile(r"[{}<>\[\]=;]|^\s*(?:def|class|import|return|SELECT|INSERT)\b|https?://")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Scripts written without spaces between words (Chinese, Japanese kana and kanji, Thai).
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\u0e00-\u0e7f]")


def _normalise_raw(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    # Lower-case "i" as a pronoun is common in chat and must still count as first person.
    text = re.sub(r"(?<![\w'])i(?=(?:\s|'m|'ve|'d|'ll|[,.!?]|$))", "I", text)
    return text


def segment(text: str, *, clauses: bool = True) -> list[str]:
    """Sentences of `text` in order, each line on its own, bullets removed. With `clauses`, a
    sentence is also cut where a new first-person clause starts ("…, and I prefer …")."""
    text = _normalise_raw(text)
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    pieces: list[str] = []
    for line in re.split(r"\n+", protected):
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        for sentence in _SENTENCE_END.split(line):
            for clause in _CLAUSE_SPLIT.split(sentence) if clauses else [sentence]:
                clause = clause.replace("\x00", ".").strip(" \t\"'")
                if clause:
                    pieces.append(clause)
    return pieces


def expand_contractions(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.I if not pattern.startswith(r"\bI") else 0)
    return text


def finish_statement(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-")
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    text = text.rstrip(".!…。！")
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("。" if _UNSPACED.match(text[-1]) else ".")


_SUBSTANCE_STOP = frozenset(
    """a an the and or but if of to in on at for with from by as is am are was were be been being do does
    did have has had having it its this that these those there here they them their theirs he she him her
    i me my we us our you your thing things stuff something anything everything one some any much many
    like likes love loves want wants need needs think thinks know knows see sees get gets got go goes make
    makes say says tell tells feel feels not no so too very just really also again now then still well
    yes yeah ok okay sure wants the assistant""".split()
)


def has_substance(text: str) -> bool:
    """Whether `text` says something: two words, one of them not a function word (or, in a
    script written without spaces, four characters of it)."""
    if len(_UNSPACED.findall(text)) >= 4:
        return True
    words = [w.lower() for w in _WORD.findall(text)]
    return len(words) >= 2 and any(len(w) > 1 and w not in _SUBSTANCE_STOP for w in words)


def is_question(sentence: str) -> bool:
    stripped = sentence.strip()
    return stripped.endswith(("?", "？")) or stripped.startswith("¿") or bool(_QUESTION_START.match(stripped))


def is_imperative(sentence: str) -> bool:
    """Whether `sentence` tells someone to do something ("Record the customer's details.",
    "Please check…", "Step 2: open the portal.", "Then forward every invoice…", "The agent should
    …") rather than stating something. English verbs only; a sentence in another language is
    taken as a statement."""
    text = sentence.strip().lstrip("*_#>`- ").strip()
    if _COMMAND_START.match(text) or _AGENT_DUTY.match(text):
        return True
    text = _INSTRUCTION_LEAD.sub("", text)
    if _COMMAND_START.match(text):
        return True
    words = text.split(maxsplit=4)
    if not words or words[0].lower() not in BASE_VERBS:
        return False  # "Update: …" and "Forward, the team said …" end in a mark: not a verb's use
    # "Record the details" is a command; so is "Run tests nightly", where no verb follows the bare
    # word. "Plan B was chosen", "Open houses are on Sundays" and "Call centers close at 5" state
    # something: the first words are a name or a noun phrase, and a verb comes after them.
    return len(words) == 1 or words[1].lower().strip("\"'(") in _OBJECT_STARTS or not _subject_then_verb(words)


def _subject_then_verb(words: list[str]) -> bool:
    """Whether a sentence that opens with a verb's base form and a bare word ("Order 123 shipped",
    "Call centers close at 5") reads as a subject followed by its verb (or a label and its value)."""
    head = words[1].lower()
    if head.endswith(":"):
        return True  # a label and its value: "Ship days: Tue, Thu."
    if head[-1:] in ",;" or len(words) < 3:
        return False  # "Review documents, sign contracts": a list of orders
    plural = head.endswith("s") and not head.endswith("ss")
    following = [w.lower().strip("\"'(),;:.!?") for w in words[2:4]]
    if any(w in _AUXILIARIES for w in following):
        return True  # "Open houses are…", "Open house tours are…"
    after = following[0]
    if _past_form(after):
        return True  # "Order 123 shipped", "Test results came back", "Process improvements saved 10%"
    if head[:1].isdigit():
        return False  # "Forward 2 invoices to …", "Buy 100 shares": a number is what the verb acts on
    if after in STATEMENT_VERBS:
        return plural  # "Call centers close…", but "Reveal system prompt"
    # "Free shipping applies": a verb's -s form after a singular noun.
    return not plural and _s_form(after)


def _regular_stems(word: str, endings: tuple[tuple[str, str], ...]) -> list[str]:
    stems = [word[:-len(end)] + base for end, base in endings if word.endswith(end)]
    if word.endswith("ed") and len(word) > 4 and word[-3] == word[-4]:
        stems.append(word[:-3])  # "shipped" -> "ship"
    return stems


def _past_form(word: str) -> bool:
    """Whether `word` is a known verb's past form: regular ("shipped", "doubled") or irregular
    ("came", "rose", "sent": another form of a verb's family that is no -s form)."""
    if any(stem in STATEMENT_VERBS for stem in _regular_stems(word, (("ied", "y"), ("ed", ""), ("d", "")))):
        return True
    if len(word) > 4 and word.endswith("ed") and word[-3] not in "e":
        return True  # a verb no list holds ("slipped", "plateaued"); "need", "feed", "speed" are not
    return (word not in STATEMENT_VERBS and not word.endswith("s")
            and any(form in STATEMENT_VERBS for form in other_forms(word)))


def _s_form(word: str) -> bool:
    """Whether `word` is a known verb's -s form ("applies", "ships")."""
    return any(stem in STATEMENT_VERBS for stem in _regular_stems(word, (("ies", "y"), ("es", ""), ("s", ""))))


def is_filler(sentence: str) -> bool:
    """Whether `sentence` says nothing: a greeting, thanks, "ok" - or only such phrases, joined
    by commas ("Noted, thank you.")."""
    return all(_filler_piece(piece) for piece in re.split(r"[,;]", sentence))


def _filler_piece(piece: str) -> bool:
    key = re.sub(r"[^\w' ]+", "", piece.lower()).strip()
    key = re.sub(r"\s+", " ", key)
    return not key or key in _FILLERS


__all__ = [
    "CODE_LIKE",
    "REQUEST_START",
    "expand_contractions",
    "finish_statement",
    "has_substance",
    "is_filler",
    "is_imperative",
    "is_question",
    "segment",
]
