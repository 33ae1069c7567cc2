"""The deterministic extractor for a finished agent task: what the task established, without a model.

A task turn has three parts. The task is the instructions the application gave the agent: it is
never stored. What the user or organisation provided for the run (its inputs) is the user's side
and is read with the conversation rules. The agent's result is a work product, not a chat reply:
its facts are mostly in the third person ("The customer's warehouse is in Rotterdam."), so each
declarative sentence is kept as a fact with `author="agent"`, and what is not a fact is dropped:

- questions, commands and advice to the reader ("Record the details…", "Make sure…");
- the agent narrating its own work ("I have recorded the details.", "Here is the summary:");
- statements that something is unknown or was not given ("The ship date is not specified.");
- headings, labels without a value, a drafted letter's frame ("Hi Tom,", "Best regards,"), code,
  and sentences that only restate the task.

A task that asks one plain question ("Who is the account manager?") answered in a few words
("Jane Smith") keeps the statement the pair makes: "The account manager is Jane Smith."

Markdown (bullets, emphasis, headings) is read as text; a result that is one JSON object gives one
"key: value" fact per scalar field, except an object shaped like a tool call or a ReAct step
(`{"name": ..., "arguments": ...}`, `{"tool": ...}`, `{"action": ..., "action_input": ...}`): that is
what the agent meant to do, not something it found, and gives nothing. A second-person sentence
("You prefer PostgreSQL.") is about the user and is rewritten as in a conversation. At most
`MAX_RESULT_FACTS` facts come from one result, in the order the agent wrote them: a long report is
not a list of memories.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..policy import DEFAULT_TOPICS
from .facts import MAX_FACT_CHARS, ExtractedFact, topic_allowed
from .messages import Message
from .rules import assistant_fact, collect, tool_fact, user_fact
from .sentences import expand_contractions, finish_statement, has_substance, is_filler, is_imperative, is_question
from .topics import classify_topic
from .words import content_words

MAX_RESULT_FACTS = 20

_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_MARKUP = re.compile(r"(\*\*|__|`|~~)")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]+\|[\s:|-]*$")
_REASONING_LINE = re.compile(r"^\s*(?:thought|thinking|reasoning|action|action input|observation)\s*:", re.I)
# Keys that make a JSON object a call the agent meant to make (OpenAI, Anthropic, LangChain and
# ReAct shapes), whatever other fields it carries: its fields are a tool's arguments, not findings.
_TOOL_CALL_KEYS = frozenset({"tool", "tool_name", "tool_input", "tool_calls", "tool_use", "function_call",
                             "action_input", "arguments"})
_TOOL_ARGUMENT_KEYS = frozenset({"arguments", "input", "parameters", "args"})
_CODE_SHAPE = re.compile(r"[{}]|</?\w+>|^\s*(?:def|class|import|from|return|SELECT|INSERT|UPDATE|DELETE)\s")
_LABEL_LEAD = re.compile(
    r"^(?:in summary|to summari[sz]e|summary|overall|in short|in conclusion|conclusion|final answer|answer|"
    r"result|results|outcome|note|notes|key (?:facts|points|details|findings)|findings|details)\s*[:,–—-]\s*",
    re.I,
)
_COURTESY_LEAD = re.compile(
    r"^(?:thanks?(?: you)?(?: for [^,.!]*)?|ok(?:ay)?|sure|certainly|great|got it|noted|understood|of course|"
    r"absolutely|done)\s*[,:!.–—-]+\s*",
    re.I,
)
_SOURCE_LEAD = re.compile(
    r"^(?:based on|according to|as (?:stated|mentioned|described|noted|given) in|from|per)\s+"
    r"(?:the|this|that|your|my|our|their)\b[^,]{0,80},\s*",
    re.I,
)
_FINDING_LEAD = re.compile(
    r"^(?:(?:I|we)\s+(?:have\s+)?(?:found|noted|noticed|confirmed|determined|verified|established|learned|"
    r"observed|can confirm)|it (?:is|was) (?:worth noting|important to note|clear|confirmed|noted))\s+that\s+",
    re.I,
)
_RECOMMENDATION = re.compile(
    r"^(?:I|we)\s+(?:would\s+|strongly\s+|therefore\s+)*(?:recommend|suggest|propose|advise)\s+(?:that\s+)?(?P<rest>.+)$",
    re.I,
)
_NARRATION = re.compile(
    r"^(?:I|I am|I have|I will|I would|I can|I could|I did|I was|me|my|let me|let's|we will|we are going to|"
    r"we have (?:now )?(?:recorded|noted|saved|completed|finished|reviewed|analy[sz]ed)|here is|here are|"
    r"here's|below is|below are|the following|as an ai|this (?:report|summary|document|answer|response|"
    r"analysis|list|table) (?:is|contains|provides|lists|outlines|covers|summari[sz]es|includes)|"
    r"let me know|feel free|hope (?:this|that) helps|happy to help|glad to help|thanks? (?:you )?for|"
    r"if you (?:have|need|want|would like))\b",
    re.I,
)
_UNKNOWN = re.compile(
    r"\b(?:unknown|unclear|not (?:provided|specified|mentioned|available|stated|given|known|found|clear|"
    r"included|indicated)|no (?:information|data|details|mention|record)|(?:could|can)\s*not (?:be )?"
    r"(?:determine|determined|find|found|confirm|confirmed|identify|identified|verify|verified)|"
    r"unable to|insufficient (?:information|data)|n/a|tbd|to be determined)\b",
    re.I,
)
_SECOND_PERSON = re.compile(r"^(?:you|your)\b", re.I)
# A drafted letter's frame: "Hi Tom,", "Best regards,", "Subject: Follow-up".
_SALUTATION = re.compile(
    r"^\s*(?:(?:hi|hello|hey|dear|greetings|good (?:morning|afternoon|evening))(?:\s+[\w.'-]+){0,3}\s*[,!:]?|"
    r"(?:best|kind|warm)?\s*(?:regards|wishes|best|cheers|sincerely|thanks|thank you)(?:\s+\w+)?\s*,?)\s*$",
    re.I,
)
_EMAIL_HEADER = re.compile(r"^\s*(?:subject|re|to|cc|bcc|from)\s*:", re.I)
# A task that asks one plain question: "What is the customer's preferred database?"
_COPULAR_QUESTION = re.compile(
    r"(?:^|(?<=[.:!?]\s))(?P<wh>what|who|which|where)\s+(?P<verb>is|are|was|were)\s+(?P<subject>[^?.!]{3,120}?)\s*\?",
    re.I,
)
_SHORT_ANSWER = re.compile(r"^[^\n.!?;:]{1,80}[.!]?$")
_PREPOSITION_LEAD = re.compile(r"^(?:in|at|on|near|inside|outside|by|from|to)\b", re.I)


def result_sentences(text: str) -> list[str]:
    """The result as candidate sentences: code blocks, table rules and heading marks removed,
    emphasis dropped, one JSON object as "key: value" lines."""
    structured = _json_lines(text)
    if structured is not None:
        return structured
    raw = _CODE_FENCE.sub("\n", text).splitlines()
    lines = []
    for index, line in enumerate(raw):
        if _TABLE_RULE.match(line) or _REASONING_LINE.match(line) or _HEADING.match(line):
            continue  # a heading names a section ("## Account summary"); it states nothing
        if _SALUTATION.match(line) or _EMAIL_HEADER.match(line):
            continue
        if index + 1 < len(raw) and _TABLE_RULE.match(raw[index + 1]):
            continue  # a table's header row names columns; it states nothing
        line = _MARKUP.sub("", line)
        if line.strip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|") if c.strip()]
            line = ": ".join(cells) if len(cells) == 2 else ""
        lines.append(line)
    return ["\n".join(lines)]


def _json_lines(text: str) -> list[str] | None:
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if _is_tool_call(value):
        return []
    lines = []
    for key, item in value.items():
        if isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip():
            lines.append(f"{str(key).replace('_', ' ').strip().capitalize()}: {item}")
        elif isinstance(item, list) and item and all(isinstance(x, (str, int, float)) for x in item):
            lines.append(f"{str(key).replace('_', ' ').strip().capitalize()}: {', '.join(map(str, item))}")
    # A "thought" or "action" field is the agent's reasoning, as the same line in plain text is.
    return ["\n".join(line for line in lines if not _REASONING_LINE.match(line))]


def _is_tool_call(value: dict[object, object]) -> bool:
    """Whether a JSON object is a call the agent meant to make rather than data it found."""
    fields = {re.sub(r"[\s-]+", "_", str(key).strip().lower()): item for key, item in value.items()}
    if fields.keys() & _TOOL_CALL_KEYS:
        return True
    if "name" in fields and fields.keys() & _TOOL_ARGUMENT_KEYS:
        return True  # {"name": "send_email", "arguments": {...}}, {"type": "tool_use", "name", "input"}
    return isinstance(fields.get("function"), dict)  # {"type": "function", "function": {"name": ...}}


def result_fact(sentence: str) -> ExtractedFact | None:
    """A sentence of an agent's result as a standalone fact, or None when it is not one."""
    text = " ".join(sentence.split()).strip(" -*•>")
    for lead in (_COURTESY_LEAD, _LABEL_LEAD, _SOURCE_LEAD, _FINDING_LEAD):
        text = lead.sub("", text).strip()
    if not text or text.endswith(":") or is_filler(text) or is_question(text) or _CODE_SHAPE.search(text):
        return None
    if _SECOND_PERSON.match(text):
        about_user = assistant_fact(text)
        return None if about_user is None else _agent(about_user.text, about_user.correction)
    recommended = _RECOMMENDATION.match(expand_contractions(text))
    if recommended:
        text = "Recommendation: " + recommended.group("rest")
    elif _NARRATION.match(expand_contractions(text)) or is_imperative(text):
        return None
    if _UNKNOWN.search(text):
        return None
    statement = finish_statement(text)
    if not has_substance(statement) or len(statement) > MAX_FACT_CHARS:
        return None
    return _agent(statement)


def _agent(text: str, correction: bool = False) -> ExtractedFact:
    return ExtractedFact(text=text, topic=classify_topic(text), author="agent", correction=correction)


def restates(text: str, task: str) -> bool:
    """Whether `text` only gives the task back: no word the task does not use, and either a word
    saying the work was done ("The logistics details of the customer were recorded.") or most of
    the task's own words. A choice between what the task named ("The warehouse is in Rotterdam."
    for "Is the warehouse in Rotterdam or Antwerp?") is an answer, not a restatement."""
    words = content_words(text)
    task_words = content_words(task)
    if not words or not words <= task_words | _DONE_WORDS:
        return False
    return bool(words & _DONE_WORDS) or len(words & task_words) >= 0.8 * len(task_words)


_DONE_WORDS = content_words("done completed recorded noted saved captured documented extracted summarised "
                            "summarized listed reviewed provided detail details information below above")


def _brief_answer(task: str, result: str) -> tuple[re.Match[str], str] | None:
    """The task's one plain question and the few words that answer it, or None when the task
    asks no such question or the result is a sentence of its own (it names its subject again)."""
    questions = list(_COPULAR_QUESTION.finditer(task))
    answer = _MARKUP.sub("", result).strip()
    if len(questions) != 1 or not _SHORT_ANSWER.match(answer) or is_filler(answer) or _UNKNOWN.search(answer):
        return None
    answer = answer.rstrip(".!").strip()
    subject = questions[0].group("subject")
    if not answer or len(answer.split()) > 10 or is_question(answer) or content_words(answer) & content_words(subject):
        return None
    return questions[0], answer


def answered_question(task: str, result: str) -> ExtractedFact | None:
    """A short answer to a task that asked one plain question, as the statement it makes:
    "Who is the account manager?" answered "Jane Smith" is "The account manager is Jane Smith."
    Alone, "Jane Smith" is no memory; a sentence the agent wrote is read by `result_fact` instead."""
    brief = _brief_answer(task, result)
    if brief is None:
        return None
    question, answer = brief
    subject = question.group("subject").strip()
    if "{" in subject or "}" in subject:
        return None  # a template's "{customer}": the statement would not say whose
    if question.group("wh").lower() == "where" and not _PREPOSITION_LEAD.match(answer):
        answer = "in " + answer
    statement = finish_statement(f"{subject[0].upper()}{subject[1:]} {question.group('verb').lower()} {answer}")
    return _agent(statement) if has_substance(statement) else None


def task_extract(messages: Sequence[Message], *, task: str, topics: Sequence[str] = DEFAULT_TOPICS
                 ) -> list[ExtractedFact]:
    """Facts from a finished task without any model: the user's side by the conversation rules,
    the agent's result by `result_fact`; nothing from the task itself (see the module docstring)."""
    others = [m for m in messages if m.role != "assistant"]
    from_user = collect(others, {"user": user_fact, "tool": tool_fact})
    final = next((m.content for m in reversed(messages) if m.role == "assistant"), "")
    from_result: list[ExtractedFact]
    if _brief_answer(task, final) is not None:
        # A few words answering the task's question say something only with the question: kept as
        # the statement the pair makes, or not at all (never "Jane Smith." alone).
        answered = answered_question(task, final)
        from_result = [answered] if answered is not None else []
    else:
        results = [Message(role=m.role, content=piece) for m in messages if m.role == "assistant"
                   for piece in result_sentences(m.content)]
        from_result = collect(results, {"assistant": result_fact}, whole_sentences={"assistant"})[:MAX_RESULT_FACTS]
    seen = {f.text.casefold() for f in from_user}
    facts = [*from_user, *(f for f in from_result if f.text.casefold() not in seen)]
    return [f for f in facts if not restates(f.text, task) and topic_allowed(f, topics)]


__all__ = ["MAX_RESULT_FACTS", "answered_question", "restates", "result_fact", "result_sentences", "task_extract"]
