"""The deterministic extractor for conversations: facts about the user without any model.

Sentence segmentation; questions, greetings, filler and requests are dropped; first- and
second-person statements are rewritten into standalone ones ("I moved to Austin last year" →
"Moved to Austin last year."). Both sides of the conversation count: a fact the assistant
corrected in the same turn is stored corrected, with `author="assistant"`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

from ..policy import DEFAULT_TOPICS
from .facts import MAX_FACT_CHARS, ExtractedFact, topic_allowed
from .messages import Message
from .rewrite import (
    MID_FIRST_PERSON,
    replace_all,
    rewrite_assistant_statement,
    rewrite_user_statement,
)
from .sentences import (
    CODE_LIKE,
    REQUEST_START,
    expand_contractions,
    finish_statement,
    has_substance,
    is_filler,
    is_imperative,
    is_question,
    segment,
)
from .topics import classify_topic
from .words import content_words

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
# "I wonder where the warehouse is.": a question said as a statement.
_INDIRECT_QUESTION = re.compile(
    r"^(?:I|we)\s+(?:wonder|am wondering|are wondering|was wondering|were wondering|do not know|don't know|"
    r"have no idea|am not sure|are not sure|'m not sure)\s+"
    r"(?:where|what|when|who|whom|whose|which|why|how|if|whether)\b",
    re.I,
)
_STANDING_RULE = re.compile(
    r"^(?:please\s+)?(?P<rule>(?:always|never|do not|only)\s+[a-z]+\b.+?)[.!]?$", re.I,
)
_HEDGE = re.compile(
    r"^(?:I think|I guess|I believe|I feel like|I suppose|I would say|I mean|I reckon|I should mention|"
    r"I should say|I forgot to mention|I wanted to (?:say|mention|tell you)|I want to (?:say|mention)|"
    r"I want you to know|I should tell you|let me tell you|you should know)(?:\s+that)?[,:]?\s+(?=\S)",
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


def standing_instruction(sentence: str) -> str | None:
    """An instruction to the assistant, as a fact about what the user wants, or None."""
    text = expand_contractions(sentence.strip().rstrip(".!"))
    call = _CALL_ME.match(text)
    if call:
        return finish_statement(f"Wants to be called {call.group('name')}")
    want = _WANT_YOU.match(text)
    if want and _INSTRUCTION_MARKER.search(text):
        rest = replace_all(want.group("rest"), MID_FIRST_PERSON, ignore_case=True)
        return finish_statement(f"Wants the assistant {'not ' if want.group('neg') else ''}to {rest}")
    match = _IMPERATIVE_INSTRUCTION.match(text)
    if match is None:
        return None
    if match.group("always"):
        marker = match.group("always").rstrip(",").lower()
        rest = match.group("a_rest")
        wanted = f"always {rest}" if marker == "always" else f"{rest} {marker}"
    elif match.group("never"):
        rest = replace_all(match.group("n_rest"), MID_FIRST_PERSON, ignore_case=True)
        if match.group("never").lower() == "never":
            return finish_statement(f"Wants the assistant to never {rest}")
        return finish_statement(f"Wants the assistant not to {rest}")
    else:
        wanted = match.group("plain")
    wanted = replace_all(wanted, MID_FIRST_PERSON, ignore_case=True)
    return finish_statement(f"Wants the assistant to {wanted[0].lower() + wanted[1:]}")


def user_fact(clause: str) -> ExtractedFact | None:
    correction = bool(_CORRECTION.search(clause))
    text = clause.strip()
    explicit = False
    remembered = _REMEMBER.match(text)
    if remembered:
        text = remembered.group("rest").strip()
        explicit = True
    text = _LEAD_IN.sub("", text).strip()
    text = _HEDGE.sub("", text).strip()
    if not text or is_filler(text) or is_question(text):
        return None
    instruction = standing_instruction(text)
    if instruction:
        return ExtractedFact(text=instruction, topic="explicit_instructions", explicit=True)
    if _CALL_ME.match(text):
        return None
    name = _MY_NAME.match(expand_contractions(text))
    if name:
        return ExtractedFact(text=finish_statement(f"Name is {name.group('name').strip()}"), topic="personal_info")
    expanded = expand_contractions(text)
    if REQUEST_START.match(expanded) or _FILLER_PREFIX.match(expanded) or _TRANSIENT.match(expanded):
        return None
    if re.match(r"^(?:if|when|whether|because|since|unless|once)\b", expanded, re.I) and not explicit:
        return None  # a condition, not a statement of fact
    if not _FIRST_PERSON.search(expanded):
        if not explicit:
            return None
        statement = finish_statement(expanded)
    else:
        statement = rewrite_user_statement(expanded)
    if not statement or not has_substance(statement) or len(statement) > MAX_FACT_CHARS:
        return None
    return ExtractedFact(text=statement, topic=classify_topic(statement), correction=correction,
                         explicit=explicit)


def assistant_fact(clause: str) -> ExtractedFact | None:
    correction = bool(_CORRECTION.search(clause))
    text = _ASSISTANT_LEAD.sub("", expand_contractions(clause.strip())).strip()
    text = _ASSISTANT_LEAD.sub("", text).strip()
    if not text or is_question(text) or is_filler(text):
        return None
    if not _SECOND_PERSON_STATE.match(text) or _ASSISTANT_SKIP.search(text):
        return None
    statement = rewrite_assistant_statement(text)
    if not statement or not has_substance(statement) or len(statement) > MAX_FACT_CHARS:
        return None
    return ExtractedFact(text=statement, topic=classify_topic(statement), author="assistant",
                         correction=correction)


def tool_fact(clause: str) -> ExtractedFact | None:
    text = clause.strip()
    if not (10 <= len(text) <= 300) or is_question(text) or CODE_LIKE.search(text):
        return None
    if not _TOOL_ABOUT_USER.search(text):
        return None
    statement = finish_statement(text)
    if not has_substance(statement):
        return None
    return ExtractedFact(text=statement, topic=classify_topic(statement), author="agent", from_tool=True)


def deterministic_extract(messages: Sequence[Message], *, topics: Sequence[str] = DEFAULT_TOPICS
                          ) -> list[ExtractedFact]:
    """Facts from a turn without any model. See the module docstring for the rules."""
    facts = collect(messages, {"user": user_fact, "assistant": assistant_fact, "tool": tool_fact})
    facts = _apply_same_turn_corrections(facts)
    return [f for f in facts if topic_allowed(f, topics)]


FactRule = Callable[[str], "ExtractedFact | None"]


def screen_statement(text: str) -> tuple[str | None, str | None]:
    """What to store when someone (a model calling a remember tool) asks to keep `text`:
    (statement, None), or (None, "question" / "instruction") when it is not a statement.
    A standing wish ("Always reply in French.") is kept as what the user wants, and "Remember
    that …" as what follows it."""
    remembered = _REMEMBER.match(text.strip())
    if remembered:
        text = remembered.group("rest")
        text = text[:1].upper() + text[1:]
    pieces = segment(text, clauses=False) or [text]
    if any(is_question(piece) or _INDIRECT_QUESTION.match(piece) for piece in pieces):
        return None, "question"
    wish = standing_instruction(text.strip()) if len(pieces) == 1 else None
    if wish is not None:
        return wish, None
    rule = _STANDING_RULE.match(expand_contractions(text.strip())) if len(pieces) == 1 else None
    if rule is not None:
        # "Never ship on Sundays." asked to be remembered is a rule of the user's world, not a
        # task for this turn: kept as one, where "Record the details." is refused.
        return finish_statement(f"Standing rule: {rule.group('rule')}"), None
    if any(is_imperative(piece) or REQUEST_START.match(expand_contractions(piece)) for piece in pieces):
        return None, "instruction"
    return text.strip(), None


def collect(messages: Sequence[Message], rules: Mapping[str, FactRule], *,
            whole_sentences: Collection[str] = ()) -> list[ExtractedFact]:
    """The facts `rules[role]` finds in each piece of each message, in order, each text once.
    A piece is a first-person clause, or a whole sentence for the roles in `whole_sentences`.
    A role without a rule (the operator's system prompt) yields nothing."""
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    for message in messages:
        rule = rules.get(message.role)
        if rule is None:
            continue
        for piece in segment(message.content, clauses=message.role not in whole_sentences):
            fact = rule(piece)
            if fact is None:
                continue
            key = fact.text.casefold()
            if key in seen:
                continue
            seen.add(key)
            facts.append(fact)
    return facts


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


__all__ = [
    "assistant_fact",
    "collect",
    "deterministic_extract",
    "screen_statement",
    "standing_instruction",
    "tool_fact",
    "user_fact",
]
