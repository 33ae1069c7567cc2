"""Turning a conversation turn into short, standalone facts about the user.

Two extractors with one output shape (`ExtractedFact`, `facts.py`):

- `llm_extract` (`llm_prompt.py`): one structured-output call per turn. The model also sees the
  user's most similar existing facts under small integer aliases (never raw ids) and says, per
  fact, whether it is new, already known, an update, or a contradiction. Malformed output is
  retried once; after that the caller falls back to the deterministic extractor.
- `task_extract` (`task_rules.py`): no model, for a finished agent task: the task's instructions
  are never stored; the agent's result yields its declarative sentences (author "agent").
- `deterministic_extract` (`rules.py`): no model. Sentence segmentation (`sentences.py`);
  questions, greetings, filler and requests are dropped; first- and second-person statements are
  rewritten into standalone ones (`rewrite.py`: "I moved to Austin last year" → "Moved to Austin
  last year.").

Both sides of the conversation count (a fact the assistant corrected is stored corrected, with
`author="assistant"`); the model's private reasoning never does (`messages.py` drops it). Secret
redaction happens before either extractor sees the text (see `Conversations._distil`).
"""

from .facts import DECISIONS, MAX_FACT_CHARS, ExtractedFact, model_reason, topic_allowed
from .llm_prompt import (
    EXTRACTION_SYSTEM_PROMPT,
    TASK_EXTRACTION_SYSTEM_PROMPT,
    ask_structured,
    build_extraction_messages,
    extraction_schema,
    format_existing,
    format_turn,
    llm_extract,
    parse_extraction,
    resolve_targets,
)
from .messages import MAX_MESSAGE_CHARS, ROLES, Message, normalise_messages, strip_reasoning
from .rewrite import rewrite_assistant_statement, rewrite_user_statement, third_person
from .rules import deterministic_extract, screen_statement
from .sentences import is_imperative, is_question, segment
from .task_rules import task_extract
from .topics import classify_topic
from .words import CONTENT_STOPWORDS, content_words, stem

__all__ = [
    "CONTENT_STOPWORDS",
    "DECISIONS",
    "EXTRACTION_SYSTEM_PROMPT",
    "MAX_FACT_CHARS",
    "MAX_MESSAGE_CHARS",
    "ROLES",
    "TASK_EXTRACTION_SYSTEM_PROMPT",
    "ExtractedFact",
    "Message",
    "ask_structured",
    "build_extraction_messages",
    "classify_topic",
    "content_words",
    "deterministic_extract",
    "extraction_schema",
    "format_existing",
    "format_turn",
    "is_imperative",
    "is_question",
    "llm_extract",
    "model_reason",
    "normalise_messages",
    "parse_extraction",
    "resolve_targets",
    "rewrite_assistant_statement",
    "rewrite_user_statement",
    "screen_statement",
    "segment",
    "stem",
    "strip_reasoning",
    "task_extract",
    "third_person",
    "topic_allowed",
]
