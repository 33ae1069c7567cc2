"""Turning a conversation turn into short, standalone facts about the user.

Two extractors with one output shape (`ExtractedFact`):

- `llm_extract`: one structured-output call per turn. The model also sees the user's most similar
  existing facts under small integer aliases (never raw ids) and says, per fact, whether it is new,
  already known, an update, or a contradiction. Malformed output is retried once; after that the
  caller falls back to the deterministic extractor.
- `deterministic_extract`: no model. Sentence segmentation; questions, greetings, filler and
  requests are dropped; first- and second-person statements are rewritten into standalone ones
  ("I moved to Austin last year" → "Moved to Austin last year.").

Both sides of the conversation count (a fact the assistant corrected is stored corrected, with
`author="assistant"`); the model's private reasoning never does. Secret redaction happens before
either extractor sees the text (see `Conversations._distil`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .llm import complete_json
from .policy import DEFAULT_TOPICS, MemoryPolicy
from .validation import scrub

log = logging.getLogger("mnemic.extraction")

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
_ROLE_ALIASES = {
    "human": "user", "user": "user",
    "ai": "assistant", "assistant": "assistant", "aimessagechunk": "assistant", "model": "assistant",
    "system": "system", "developer": "system",
    "tool": "tool", "function": "tool",
}
# Keys that hold a model's private reasoning in the message formats mnemic accepts.
_REASONING_KEYS = frozenset({"reasoning", "reasoning_content", "thinking", "thought", "thoughts"})
_REASONING_PART_TYPES = frozenset({"thinking", "reasoning", "redacted_thinking", "thought"})
_THINK_BLOCK = re.compile(
    r"<(think|thinking|reasoning|reflection|scratchpad)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE
)
MAX_MESSAGE_CHARS = 8000
MAX_FACT_CHARS = 400
DECISIONS: tuple[str, ...] = ("insert", "keep", "update", "invalidate")


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass
class ExtractedFact:
    """One fact an extractor found. `targets` are record ids (aliases already resolved)."""

    text: str
    topic: str
    author: str = "user"
    from_tool: bool = False
    decision: str = "insert"
    targets: list[str] = field(default_factory=list)
    reason: str = ""
    correction: bool = False
    explicit: bool = False


# -- messages ----------------------------------------------------------------------------------


def strip_reasoning(text: str) -> str:
    """`text` without <think>…</think> (and similar) blocks: reasoning is never stored."""
    return _THINK_BLOCK.sub(" ", text).strip()


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if str(content.get("type", "")).lower() in _REASONING_PART_TYPES:
            return ""
        text = content.get("text", content.get("content", ""))
        return text if isinstance(text, str) else ""
    if isinstance(content, (list, tuple)):
        return "\n".join(part for part in (_content_text(item) for item in content) if part)
    return ""


def normalise_messages(messages: Any, *, name: str = "messages") -> list[Message]:
    """Messages as (role, content) with reasoning removed.

    Accepts dicts `{"role", "content"}`, objects with `.type`/`.role` and `.content` (LangChain and
    CrewAI messages), `(role, content)` pairs, or one string (a user message).
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping) or not isinstance(messages, Iterable):
        raise TypeError(
            f"{name} must be a list of messages such as [{{'role': 'user', 'content': '...'}}], "
            f"got {type(messages).__name__}"
        )
    result: list[Message] = []
    for position, item in enumerate(messages):
        if isinstance(item, Mapping):
            role_value = item.get("role", item.get("type"))
            content = item.get("content")
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            role_value, content = item
        elif hasattr(item, "content") and (hasattr(item, "type") or hasattr(item, "role")):
            role_value = getattr(item, "role", None) or getattr(item, "type", None)
            content = item.content
        else:
            raise TypeError(
                f"{name}[{position}] is {type(item).__name__}; each message must be a dict with 'role' "
                "and 'content', an object with .type and .content, or a (role, content) pair"
            )
        role = _ROLE_ALIASES.get(str(role_value).lower()) if role_value is not None else None
        if role is None:
            raise ValueError(
                f"{name}[{position}] has role {role_value!r}; use one of {', '.join(ROLES)} "
                "(LangChain's human/ai/tool are accepted too)"
            )
        # A conversation is taken as it comes: text no store can keep is repaired, not refused.
        text = scrub(strip_reasoning(_content_text(content)))
        if text:
            result.append(Message(role=role, content=text[:MAX_MESSAGE_CHARS]))
    return result


# -- deterministic extractor: vocabulary -------------------------------------------------------

_ABBREVIATIONS = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|approx|Inc|Ltd|Co|No)\.", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")
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
_LEAD_IN = re.compile(
    r"^(?:(?:oh|ah|well|so|also|and|but|anyway|anyways|btw|by the way|fyi|just so you know|for the record|"
    r"honestly|basically|actually|in fact|to be honest|yes|yeah|yep|no|nope|ok|okay|sure|right|hmm|um|uh|"
    r"oh and|one more thing|quick update|update|correction|small correction|to clarify|just to clarify|"
    r"hi|hello|hey|hiya|good (?:morning|afternoon|evening)|thanks|thank you)\b[,:!.\s-]*)+",
    re.I,
)
_CORRECTION = re.compile(
    r"\b(?:actually|correction|to clarify|in fact|no longer|not anymore|anymore|any more|any longer|"
    r"used to|rather than|instead of|not\s+\w+\s+but)\b", re.I,
)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget|make a note|for future reference)"
    r"(?:\s+(?:that|this))?[,:]?\s+(?P<rest>.+)$",
    re.I,
)
_HEDGE = re.compile(
    r"^(?:I think|I guess|I believe|I feel like|I suppose|I would say|I mean|I reckon|I should mention|"
    r"I should say|I forgot to mention|I wanted to (?:say|mention|tell you)|I want to (?:say|mention)|"
    r"I want you to know|I should tell you|let me tell you|you should know)(?:\s+that)?[,:]?\s+(?=\S)",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|when|where|who|whom|whose|which|is|are|am|was|were|does|did|can|could|would|will|"
    r"should|shall|may|might|has|had|isn't|aren't|doesn't|didn't|won't|wouldn't|couldn't|shouldn't|"
    r"any idea|do (?!not\b)|have you|have I)\b",
    re.I,
)
_REQUEST_START = re.compile(
    r"^(?:please\s+)?(?:can|could|would|will)\s+you\b|^(?:please\s+)?(?:help|tell|show|give|write|explain|"
    r"summari[sz]e|find|make|create|check|fix|generate|draft|list|translate|compare|describe|calculate|book|"
    r"send|search|look|remind|suggest|recommend|try|let's|let me|go|read|review|rewrite|edit|plan|build|run|"
    r"add|update|delete|remove|open|continue|start|stop|imagine|pretend|act|answer|reply|respond)\b|^please\b",
    re.I,
)
_FILLER_PREFIX = re.compile(
    r"^(?:I was wondering|I am wondering|I wonder|I have (?:a|another|one more) question|I need (?:you|your help|"
    r"help|some help|a hand|advice|some advice)|I want you to|I would like you to|I am looking for|"
    r"I would like to (?:know|ask)|I want to (?:know|ask)|I am curious|I am just asking|I hope|I am asking|"
    r"I am going to ask|I will ask|I just wanted to|I wanted to ask|I am trying to figure out|"
    r"I cannot figure out|I do not understand|I am confused|I am not sure|I do not know|I think you|"
    r"I am getting an error|I got an error|I get an error|I am having (?:trouble|issues|a problem|problems)|"
    r"I see(?=[,.!]|$|\s+(?:what|now|that|your|why|how)\b)|I agree|I understand|I appreciate|I am sorry|"
    r"I apologi[sz]e|I mean\b|I think so|I guess so|"
    r"I hope so|I did not (?:get|understand)|I meant|I was (?:just )?(?:kidding|joking)|I will try|I tried)",
    re.I,
)
_TRANSIENT = re.compile(
    r"^I am (?:so |really |very |a bit |kind of |just |quite |pretty |now |also )?(?:tired|busy|bored|confused|"
    r"stuck|happy|sad|excited|here|back|ready|done|sure|sorry|fine|good|ok|okay|great|glad|curious|afraid|"
    r"lost|hungry|thirsty|sleepy|frustrated|annoyed|grateful|thankful|impressed|amazed|surprised|serious|"
    r"kidding|joking|listening|waiting|not sure|new here|in a hurry|well|alright|all right)\b"
    r"(?:\s+(?:now|today|right now|again|too|though|then|thanks|with (?:it|that|this)))?[.!]*$",
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
    sorry|my bad|oops|understood|noted|will do|go ahead|continue|done|next|thx|ty|np|k|kk""".replace(
        "\n", "").replace("    ", "").split("|")
)
_INSTRUCTION_MARKER = re.compile(
    r"\b(?:always|never|from now on|going forward|in (?:the )?future|by default|every time|each time|"
    r"whenever|in all (?:your )?(?:answers|replies|responses))\b", re.I,
)
_STYLE_VERB = (
    r"use|include|add|mention|reply|respond|answer|write|format|suggest|recommend|send|call|address|refer|"
    r"give|show|explain|repeat|apologi[sz]e|ask|start|end|put|make|say|speak|talk|be|keep|sign|use|translate|"
    r"summari[sz]e|quote|cite|assume|switch|list|number|bold|capitali[sz]e|shorten|expand|label"
)
_IMPERATIVE_INSTRUCTION = re.compile(
    rf"^(?:please\s+)?(?:(?P<always>always|from now on,?|going forward,?|by default,?|in (?:the )?future,?)\s+"
    rf"(?P<a_rest>(?:{_STYLE_VERB})\b.*)|(?P<never>never|do not|don't)\s+(?P<n_rest>(?:{_STYLE_VERB})\b.*)|"
    rf"(?P<plain>(?:{_STYLE_VERB})\b.*\b(?:always|from now on|going forward|by default|in (?:the )?future|"
    rf"every time|each time|in all (?:your )?(?:answers|replies|responses))\b.*))$",
    re.I,
)
_WANT_YOU = re.compile(
    r"^I (?:want|would like|would prefer|prefer|need|expect) (?:you|the assistant) (?P<neg>not )?to (?P<rest>.+)$",
    re.I,
)
_CALL_ME = re.compile(r"^(?:please\s+)?(?:call me|address me as|refer to me as)\s+(?P<name>.+)$", re.I)
_MY_NAME = re.compile(r"^my name is\s+(?P<name>[^,.!?]+)", re.I)

_ADVERBS = frozenset(
    """really also usually always never often sometimes still just recently currently now actually mostly
    generally definitely truly absolutely rarely typically even only already finally primarily mainly
    personally normally occasionally frequently seldom kind sort totally honestly barely hardly mostly
    probably certainly especially regularly""".split()
)
_MODALS = frozenset(
    "can cannot could will would should must might may shall used had did need ought".split()
)
_IRREGULAR_PAST = frozenset(
    """sold went bought got made took had was were did saw gave met left began became came ran wrote grew
    knew thought told said found felt kept lost paid put sent spent stood taught won broke chose drove ate
    drank flew forgot held hurt led lent quit rode rang sang sat slept spoke stole swam threw understood woke
    wore built caught dealt dug fed fought fled forgave froze hid hung heard laid lay lit meant rose sought
    shot shut sank slid split spread stuck stung struck swore swept swung tore wept wound brought bent bet
    bit bled blew bred burnt cast clung cost crept cut dreamt dwelt fell fit flung ground hit knelt leapt
    learnt let overcame rid set shed shone shook spat spun sprang strode strove thrust trod upset withdrew
    became read""".split()
)
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|we|us|our|ours|ourselves)\b", re.I)
_SECOND_PERSON_STATE = re.compile(r"^(?:you|your)\b", re.I)
_ASSISTANT_SKIP = re.compile(
    r"^you (?:can|could|should|might|may|must|need|want|will|would|have to|had better|are welcome|are right|"
    r"are correct|asked|are asking|mean|meant|said|mentioned|told|wrote|probably|likely|seem|sound|also can|"
    r"may want|might want|just need|only need|do not need|will need|will want|would need|would want|"
    r"could try|can try|should try|guessed|are absolutely right|are totally right)\b"
    r"|\b(?:probably|perhaps|maybe|might|likely|seems|seem to|sounds like|i think|i believe|i assume)\b",
    re.I,
)
_ASSISTANT_LEAD = re.compile(
    r"^(?:actually|just to clarify|to clarify|to be precise|correction|small correction|note that|"
    r"quick correction|to be clear|just so we are clear|for the record|as you (?:mentioned|said)|"
    r"you mentioned(?: that)?|you said(?: that)?|you told me(?: that)?|according to what you said|"
    r"i (?:see|understand|note|noticed) (?:that )?|got it|noted|okay|ok|sure|great|thanks)[,:.!]?\s+",
    re.I,
)
_TOOL_ABOUT_USER = re.compile(
    r"\b(?:user|customer|client|account holder|account|member|subscriber|caller|patron|guest)\b", re.I
)
_CODE_LIKE = re.compile(r"[{}<>\[\]=;]|^\s*(?:def|class|import|return|SELECT|INSERT)\b|https?://")
_WORD = re.compile(r"[A-Za-z0-9']+")

_TOPIC_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("explicit_instructions", re.compile(r"^Wants the assistant\b|^Wants to be called\b", re.I)),
    ("preferences", re.compile(
        r"\b(?:prefers?|preferred|preference|likes?|liked|loves?|loved|enjoys?|enjoyed|hates?|hated|dislikes?|"
        r"favou?rite|rather|fan of|into|can ?not stand|interested in|vegetarian|vegan|pescatarian|wants?|"
        r"would like|wish(?:es)?|avoid|avoids|allerg\w*|style|tone)\b", re.I)),
    ("personal_info", re.compile(
        r"\b(?:name|named|called|lives?|lived|living|moved|relocated|from|born|birthday|age|years old|"
        r"married|wife|husband|partner|spouse|fianc[eé]e?|girlfriend|boyfriend|kids?|children|son|daughter|"
        r"family|mother|father|mom|mum|dad|parents?|brother|sister|siblings?|grand\w+|pets?|dog|cat|"
        r"works?|worked|working|job|employer|profession|occupation|engineer|developer|designer|manager|"
        r"teacher|student|studies|studied|studying|graduated|degree|university|college|school|hometown|"
        r"native|speaks?|languages?|city|country|address|email|phone|retired|nationality)\b", re.I)),
)


def _normalise_raw(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    # Lower-case "i" as a pronoun is common in chat and must still count as first person.
    text = re.sub(r"(?<![\w'])i(?=(?:\s|'m|'ve|'d|'ll|[,.!?]|$))", "I", text)
    return text


def segment(text: str) -> list[str]:
    """Sentences and first-person clauses of `text`, in order."""
    text = _normalise_raw(text)
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    pieces: list[str] = []
    for line in re.split(r"\n+", protected):
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        for sentence in _SENTENCE_END.split(line):
            for clause in _CLAUSE_SPLIT.split(sentence):
                clause = clause.replace("\x00", ".").strip(" \t\"'")
                if clause:
                    pieces.append(clause)
    return pieces


def _expand(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.I if not pattern.startswith(r"\bI") else 0)
    return text


def third_person(verb: str) -> str:
    """The third-person singular present of a base verb: prefer → prefers, go → goes."""
    lower = verb.lower()
    special = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "are": "is"}
    if lower in special:
        out = special[lower]
    elif lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = lower + "es"
    elif len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        out = lower[:-1] + "ies"
    else:
        out = lower + "s"
    return out


def _is_past_or_modal(word: str) -> bool:
    lower = word.lower()
    return (
        lower in _MODALS or lower in _IRREGULAR_PAST or (lower.endswith("ed") and len(lower) > 3)
        or lower in {"was", "were", "is", "has", "does"}
    )


def _conjugate_lead(words: list[str]) -> list[str]:
    """Rewrite `<subject> [adverbs] verb ...` (subject already removed) as a subject-less
    third-person statement: [adverbs] verb(3sg) ..."""
    out: list[str] = []
    index = 0
    while index < len(words):
        lower = words[index].lower()
        if lower in _ADVERBS:
            out.append(words[index])
            index += 1
            continue
        if lower == "no" and index + 1 < len(words) and words[index + 1].lower() == "longer":
            out.extend(words[index:index + 2])
            index += 2
            continue
        break
    if index >= len(words):
        return out
    verb = words[index]
    lower = verb.lower()
    if lower in {"am", "are"}:
        out.append("is")
    elif lower == "were":
        out.append("was")
    elif _is_past_or_modal(verb) or not verb.isalpha():
        out.append(verb)
    else:
        out.append(third_person(verb))
    out.extend(words[index + 1:])
    return out


_MID_FIRST_PERSON = (
    (r"\bI am\b", "they are"), (r"\bI was\b", "they were"), (r"\bI\b", "they"), (r"\bmyself\b", "themselves"),
    (r"\bmine\b", "theirs"), (r"\bmy\b", "their"), (r"\bme\b", "them"), (r"\bwe\b", "they"),
    (r"\bourselves\b", "themselves"), (r"\bours\b", "theirs"), (r"\bour\b", "their"), (r"\bus\b", "them"),
)
_MID_SECOND_PERSON_USER = (  # in a user's message "you" is the assistant
    (r"\byourself\b", "the assistant"), (r"\byours\b", "the assistant's"), (r"\byour\b", "the assistant's"),
    (r"\byou\b", "the assistant"),
)
_MID_SECOND_PERSON_ASSISTANT = (  # in the assistant's message "you" is the user
    (r"\byou are\b", "they are"), (r"\byou were\b", "they were"), (r"\byourself\b", "themselves"),
    (r"\byours\b", "theirs"), (r"\byour\b", "their"), (r"\byou\b", "they"),
)


def _replace_all(text: str, table: Sequence[tuple[str, str]], *, ignore_case: bool) -> str:
    for pattern, replacement in table:
        flags = re.I if ignore_case and not pattern.startswith(r"\bI") else 0
        text = re.sub(pattern, replacement, text, flags=flags)
    return text


def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:-")
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    text = text.rstrip(".!…")
    if not text:
        return ""
    return text[0].upper() + text[1:] + "."


def rewrite_user_statement(sentence: str) -> str:
    """A user's first-person sentence as a standalone statement about them."""
    text = _expand(sentence.strip())
    text = re.sub(r"\bmy (\w+) and I\b", r"they and their \1", text, flags=re.I)
    words = text.split()
    if not words:
        return ""
    head = words[0]
    if head == "I":
        body = " ".join(_conjugate_lead(words[1:]))
    elif head.lower() in {"my", "our"} and len(words) > 1:
        # "My dog is named Rex" → "Dog is named Rex.": the memory is the user's, the owner is implied.
        body = " ".join(words[1:])
    elif head.lower() == "we":
        body = "They " + " ".join(words[1:])
    else:
        body = text
    body = _replace_all(body, _MID_FIRST_PERSON, ignore_case=True)
    body = _replace_all(body, _MID_SECOND_PERSON_USER, ignore_case=True)
    return _finish(body)


def rewrite_assistant_statement(sentence: str) -> str:
    """An assistant's second-person statement about the user as a standalone statement."""
    text = _expand(sentence.strip())
    words = text.split()
    if not words:
        return ""
    head = words[0].lower()
    if head == "you":
        body = " ".join(_conjugate_lead(words[1:]))
    elif head == "your" and len(words) > 1:
        body = " ".join(words[1:])
    else:
        body = text
    body = _replace_all(body, _MID_SECOND_PERSON_ASSISTANT, ignore_case=True)
    # What the assistant says about itself is not a fact about the user.
    body = re.sub(r"\bI\b", "the assistant", body)
    body = re.sub(r"\bmy\b", "the assistant's", body, flags=re.I)
    return _finish(body)


_SUBSTANCE_STOP = frozenset(
    """a an the and or but if of to in on at for with from by as is am are was were be been being do does
    did have has had having it its this that these those there here they them their theirs he she him her
    i me my we us our you your thing things stuff something anything everything one some any much many
    like likes love loves want wants need needs think thinks know knows see sees get gets got go goes make
    makes say says tell tells feel feels not no so too very just really also again now then still well
    yes yeah ok okay sure wants the assistant""".split()
)


def _has_substance(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text)]
    return len(words) >= 2 and any(len(w) > 1 and w not in _SUBSTANCE_STOP for w in words)


def classify_topic(text: str) -> str:
    for topic, pattern in _TOPIC_RULES:
        if pattern.search(text):
            return topic
    return "key_details"


def _is_question(sentence: str) -> bool:
    stripped = sentence.strip()
    return stripped.endswith("?") or bool(_QUESTION_START.match(stripped))


def _is_filler(sentence: str) -> bool:
    key = re.sub(r"[^\w' ]+", "", sentence.lower()).strip()
    key = re.sub(r"\s+", " ", key)
    return not key or key in _FILLERS


def _instruction(sentence: str) -> str | None:
    """An instruction to the assistant, as a fact about what the user wants, or None."""
    text = _expand(sentence.strip().rstrip(".!"))
    call = _CALL_ME.match(text)
    if call:
        return _finish(f"Wants to be called {call.group('name')}")
    want = _WANT_YOU.match(text)
    if want and _INSTRUCTION_MARKER.search(text):
        rest = _replace_all(want.group("rest"), _MID_FIRST_PERSON, ignore_case=True)
        return _finish(f"Wants the assistant {'not ' if want.group('neg') else ''}to {rest}")
    match = _IMPERATIVE_INSTRUCTION.match(text)
    if match is None:
        return None
    if match.group("always"):
        marker = match.group("always").rstrip(",").lower()
        rest = match.group("a_rest")
        wanted = f"always {rest}" if marker == "always" else f"{rest} {marker}"
    elif match.group("never"):
        rest = _replace_all(match.group("n_rest"), _MID_FIRST_PERSON, ignore_case=True)
        if match.group("never").lower() == "never":
            return _finish(f"Wants the assistant to never {rest}")
        return _finish(f"Wants the assistant not to {rest}")
    else:
        wanted = match.group("plain")
    wanted = _replace_all(wanted, _MID_FIRST_PERSON, ignore_case=True)
    return _finish(f"Wants the assistant to {wanted[0].lower() + wanted[1:]}")


def _user_fact(clause: str) -> ExtractedFact | None:
    correction = bool(_CORRECTION.search(clause))
    text = clause.strip()
    explicit = False
    remembered = _REMEMBER.match(text)
    if remembered:
        text = remembered.group("rest").strip()
        explicit = True
    text = _LEAD_IN.sub("", text).strip()
    text = _HEDGE.sub("", text).strip()
    if not text or _is_filler(text) or _is_question(text):
        return None
    instruction = _instruction(text)
    if instruction:
        return ExtractedFact(text=instruction, topic="explicit_instructions", explicit=True)
    if _CALL_ME.match(text):
        return None
    name = _MY_NAME.match(_expand(text))
    if name:
        return ExtractedFact(text=_finish(f"Name is {name.group('name').strip()}"), topic="personal_info")
    expanded = _expand(text)
    if _REQUEST_START.match(expanded) or _FILLER_PREFIX.match(expanded) or _TRANSIENT.match(expanded):
        return None
    if re.match(r"^(?:if|when|whether|because|since|unless|once)\b", expanded, re.I) and not explicit:
        return None  # a condition, not a statement of fact
    if not _FIRST_PERSON.search(expanded):
        if not explicit:
            return None
        statement = _finish(expanded)
    else:
        statement = rewrite_user_statement(expanded)
    if not statement or not _has_substance(statement) or len(statement) > MAX_FACT_CHARS:
        return None
    return ExtractedFact(text=statement, topic=classify_topic(statement), correction=correction,
                         explicit=explicit)


def _assistant_fact(clause: str) -> ExtractedFact | None:
    correction = bool(_CORRECTION.search(clause))
    text = _ASSISTANT_LEAD.sub("", _expand(clause.strip())).strip()
    text = _ASSISTANT_LEAD.sub("", text).strip()
    if not text or _is_question(text) or _is_filler(text):
        return None
    if not _SECOND_PERSON_STATE.match(text) or _ASSISTANT_SKIP.search(text):
        return None
    statement = rewrite_assistant_statement(text)
    if not statement or not _has_substance(statement) or len(statement) > MAX_FACT_CHARS:
        return None
    return ExtractedFact(text=statement, topic=classify_topic(statement), author="assistant",
                         correction=correction)


def _tool_fact(clause: str) -> ExtractedFact | None:
    text = clause.strip()
    if not (10 <= len(text) <= 300) or _is_question(text) or _CODE_LIKE.search(text):
        return None
    if not _TOOL_ABOUT_USER.search(text):
        return None
    statement = _finish(text)
    if not _has_substance(statement):
        return None
    return ExtractedFact(text=statement, topic=classify_topic(statement), author="agent", from_tool=True)


def deterministic_extract(messages: Sequence[Message], *, topics: Sequence[str] = DEFAULT_TOPICS
                          ) -> list[ExtractedFact]:
    """Facts from a turn without any model. See the module docstring for the rules."""
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    for message in messages:
        if message.role == "system":
            continue  # the operator's prompt is configuration, not something the user said
        for clause in segment(message.content):
            if message.role == "user":
                fact = _user_fact(clause)
            elif message.role == "assistant":
                fact = _assistant_fact(clause)
            else:
                fact = _tool_fact(clause)
            if fact is None:
                continue
            key = fact.text.casefold()
            if key in seen:
                continue
            seen.add(key)
            facts.append(fact)
    facts = _apply_same_turn_corrections(facts)
    return [f for f in facts if topic_allowed(f, topics)]


def _apply_same_turn_corrections(facts: list[ExtractedFact]) -> list[ExtractedFact]:
    """Drop what the user said when the assistant corrected it in the same turn: the corrected
    version is the one stored (an agent that only records the user learns to agree with everything)."""
    corrections = [f for f in facts if f.author == "assistant" and f.correction]
    if not corrections:
        return facts
    kept = []
    for fact in facts:
        if fact.author == "user":
            words = content_words(fact.text)
            if words and any(len(words & content_words(c.text)) / len(words) >= 0.5 for c in corrections):
                continue
        kept.append(fact)
    return kept


# Words that carry no subject matter for comparing two facts: function words, possession and the
# change markers themselves ("sold", "no longer"), so "Has a boat" and "Sold the boat" share "boat".
CONTENT_STOPWORDS = frozenset(
    """a an the and or but if of to in on at for with from by as into onto about over under than then
    is am are was were be been being do does did doing have has had having own owns owned owning
    it its this that these those there here they them their theirs he she him her his hers i me my mine
    we us our you your yours user user's users who whom which what when where why how
    not no never none nothing nobody without longer anymore any more ever again
    actually really just also still now currently today recently anyway well so very too quite
    will would can could should shall may might must used get got gets getting
    sold sell sells selling stopped stop stops quit quits left leave leaves gave give gives away rid
    former formerly ex changed switched instead rather moved some one thing things
    last week weeks month months year years day days ago yesterday tonight earlier lately recent""".split()
)
_CONTENT_WORD = re.compile(r"[a-z0-9]+", re.I)


def stem(word: str) -> str:
    """A crude English stem so that works/worked/working and likes/like compare equal."""
    lower = word.lower()
    if len(lower) > 4 and lower.endswith("ies"):
        return lower[:-3] + "y"
    if len(lower) > 5 and lower.endswith("ing"):
        return lower[:-3]
    if len(lower) > 4 and lower.endswith("ed"):
        return lower[:-2] if not lower.endswith("eed") else lower[:-1]
    if len(lower) > 4 and lower.endswith("es") and lower[-3] in "aeiou":
        return lower[:-2]
    if len(lower) > 4 and lower.endswith(("ches", "shes", "sses", "xes")):
        return lower[:-2]
    if len(lower) > 3 and lower.endswith("s") and not lower.endswith("ss"):
        lower = lower[:-1]
    # live/lives/lived/living all end up as "liv".
    if len(lower) > 3 and lower.endswith("e"):
        lower = lower[:-1]
    return lower


def content_words(text: str) -> set[str]:
    text = text.replace("\u2019", "'")
    text = re.sub(r"\bcan't\b|\bcannot\b", "can not", text, flags=re.I)
    text = re.sub(r"\bwon't\b", "will not", text, flags=re.I)
    text = re.sub(r"n't\b", " not", text, flags=re.I)
    text = re.sub(r"'(?:s|m|re|ve|d|ll)\b", "", text, flags=re.I)
    return {stem(w) for w in _CONTENT_WORD.findall(text) if w.lower() not in CONTENT_STOPWORDS}


def topic_allowed(fact: ExtractedFact, topics: Sequence[str]) -> bool:
    # "Remember that …" is an explicit instruction whatever its subject.
    return fact.topic in topics or (fact.explicit and "explicit_instructions" in topics)


# -- LLM extractor -----------------------------------------------------------------------------

_SENSITIVE_RULE = (
    "- Never record health, religion, politics, sexuality, ethnicity, trade-union membership, criminal "
    "record, genetic or biometric data, or immigration status, even if the user mentions them."
)

EXTRACTION_SYSTEM_PROMPT = """You maintain long-term memory about one user of an AI assistant.
Read the conversation turn and write down what is worth remembering about the user across future
conversations, as short standalone statements in the third person without a subject, e.g.
"Lives in Austin.", "Prefers replies in bullet points.", "Owns a Mastercraft Maristar 245.".

Rules:
- Both sides of the conversation count. If the assistant corrected something the user said, record the
  corrected fact and set author to "assistant"; otherwise author is "user".
- Record only what was actually said. Never guess, and never record the assistant's own reasoning.
- Only record facts in these topics: {topics}. Use the topic name exactly.
- Never record passwords, API keys, tokens, card numbers, bank account numbers or identity numbers.
{sensitive}- Facts that come only from a tool result (not from the user or the assistant) get from_tool true.
- Compare every fact with the existing facts, which are numbered:
  "keep" when an existing fact already says it (targets: its number),
  "update" when it refines or changes an existing fact (targets: the numbers it replaces),
  "invalidate" when it makes existing facts no longer true (targets: their numbers),
  "insert" when it is new (targets: []). Give a short reason for every decision.
- If nothing is worth remembering, answer {{"facts": []}}.
{instructions}Answer with one JSON object only."""


def extraction_schema(topics: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "topic": {"type": "string", "enum": list(topics)},
                        "author": {"type": "string", "enum": ["user", "assistant"]},
                        "from_tool": {"type": "boolean"},
                        "decision": {"type": "string", "enum": list(DECISIONS)},
                        "targets": {"type": "array", "items": {"type": "integer"}},
                        "reason": {"type": "string"},
                    },
                    "required": ["text", "topic", "author", "from_tool", "decision", "targets", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["facts"],
        "additionalProperties": False,
    }


def format_existing(existing: Sequence[tuple[int, str]]) -> str:
    if not existing:
        return "(none)"
    return "\n".join(f"[{alias}] {' '.join(text.split())}" for alias, text in existing)


def format_turn(messages: Sequence[Message]) -> str:
    labels = {"user": "user", "assistant": "assistant", "tool": "tool result", "system": "system"}
    return "\n".join(f"{labels[m.role]}: {m.content}" for m in messages if m.role != "system")


def build_extraction_messages(messages: Sequence[Message], *, policy: MemoryPolicy,
                              existing: Sequence[tuple[int, str]]) -> list[dict[str, str]]:
    instructions = f"- Operator guidance: {policy.instructions}\n" if policy.instructions else ""
    system = EXTRACTION_SYSTEM_PROMPT.format(
        topics=", ".join(policy.topics),
        sensitive=_SENSITIVE_RULE + "\n" if policy.exclude_sensitive else "",
        instructions=instructions,
    )
    user = (
        f"Existing facts about this user:\n{format_existing(existing)}\n\n"
        f"Conversation turn:\n{format_turn(messages)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def resolve_targets(raw: Any, aliases: Mapping[int, str]) -> list[str]:
    """Record ids for the aliases a model named; aliases it was never shown are dropped."""
    if raw is None:
        return []
    if isinstance(raw, (int, str)):
        raw = [raw]
    if not isinstance(raw, list):
        raise ValueError("'targets' must be a list of existing-fact numbers")
    found: list[str] = []
    for item in raw:
        try:
            alias = int(item)
        except (TypeError, ValueError):
            raise ValueError(f"target {item!r} is not an existing-fact number") from None
        record_id = aliases.get(alias)
        if record_id is None:
            log.info("the extractor named existing fact [%s], which was not shown; ignored", alias)
            continue
        if record_id not in found:
            found.append(record_id)
    return found


def parse_extraction(payload: Mapping[str, Any], *, aliases: Mapping[int, str],
                     has_assistant: bool, has_tool: bool) -> list[ExtractedFact]:
    """Facts from the model's JSON. Raises ValueError when the structure is wrong (then the call
    is retried); tolerates missing optional fields."""
    items = payload.get("facts")
    if not isinstance(items, list):
        raise ValueError("the answer must be an object with a 'facts' list")
    facts: list[ExtractedFact] = []
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"facts[{position}] must be an object")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"facts[{position}].text must be a non-empty string")
        decision = str(item.get("decision") or "insert").lower()
        if decision not in DECISIONS:
            raise ValueError(f"facts[{position}].decision must be one of {', '.join(DECISIONS)}")
        targets = resolve_targets(item.get("targets"), aliases)
        if decision != "insert" and not targets:
            decision = "insert"  # nothing (known) to keep, update or invalidate
        author = str(item.get("author") or "user").lower()
        if author != "assistant" or not has_assistant:
            author = "user"
        from_tool = bool(item.get("from_tool")) and has_tool
        reason = item.get("reason")
        facts.append(ExtractedFact(
            text=" ".join(strip_reasoning(text).split())[:MAX_FACT_CHARS],
            topic=str(item.get("topic") or "key_details").strip().lower(),
            author="agent" if from_tool else author,
            from_tool=from_tool,
            decision=decision,
            targets=targets,
            reason=reason.strip()[:500] if isinstance(reason, str) else "",
        ))
    return facts


T = TypeVar("T")


def ask_structured(
    llm: Any,
    messages: list[dict[str, str]],
    schema: dict[str, Any],
    parse: Callable[[dict[str, Any]], T],
    *,
    on_call: Callable[[], None],
    on_failure: Callable[[BaseException], None],
    purpose: str,
) -> T | None:
    """One structured call, retried once when the answer is malformed or the call fails.
    None means both attempts failed: the caller falls back to its rules, and it was logged."""
    attempt_messages = list(messages)
    for attempt in (1, 2):
        on_call()
        try:
            return parse(complete_json(llm, attempt_messages, schema))
        except Exception as exc:  # any provider or parsing failure degrades, it never loses the turn
            on_failure(exc)
            log.warning("LLM %s call failed (attempt %d of 2): %s", purpose, attempt, exc)
            if isinstance(exc, ValueError):
                attempt_messages = [*messages, {
                    "role": "user",
                    "content": f"Your previous answer could not be used: {exc}. Answer again with one JSON "
                               "object that follows the schema exactly, and nothing else.",
                }]
    return None


def llm_extract(
    llm: Any,
    messages: Sequence[Message],
    *,
    policy: MemoryPolicy,
    existing: Sequence[tuple[int, str]],
    aliases: Mapping[int, str],
    on_call: Callable[[], None],
    on_failure: Callable[[BaseException], None],
) -> list[ExtractedFact] | None:
    """Facts (with reconciliation decisions) from one LLM call, or None after two failed tries."""
    has_assistant = any(m.role == "assistant" for m in messages)
    has_tool = any(m.role == "tool" for m in messages)
    return ask_structured(
        llm,
        build_extraction_messages(messages, policy=policy, existing=existing),
        extraction_schema(policy.topics),
        lambda payload: parse_extraction(payload, aliases=aliases, has_assistant=has_assistant,
                                         has_tool=has_tool),
        on_call=on_call,
        on_failure=on_failure,
        purpose="extract",
    )


__all__ = [
    "ExtractedFact",
    "Message",
    "ask_structured",
    "build_extraction_messages",
    "classify_topic",
    "content_words",
    "deterministic_extract",
    "extraction_schema",
    "llm_extract",
    "normalise_messages",
    "parse_extraction",
    "resolve_targets",
    "rewrite_user_statement",
    "segment",
    "strip_reasoning",
    "third_person",
    "topic_allowed",
]
