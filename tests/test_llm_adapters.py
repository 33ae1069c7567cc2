"""Every `llm=` mnemic takes accepts a CrewAI LLM and a LangChain chat model as well as a litellm
model string and a callable; a failed or malformed answer falls back to the rules, counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import fact, facts_json

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.llm import answer_text, check_llm, complete_json, llm_kind, with_schema

TURN = [{"role": "user", "content": "I moved to Austin last year."}]
SCHEMA = {"type": "object", "properties": {"facts": {"type": "array"}}, "required": ["facts"]}


def crewai_llm(*answers: str) -> Any:
    pytest.importorskip("crewai")
    from crewai_helpers import ScriptedLLM as CrewScriptedLLM

    replies = list(answers)
    return CrewScriptedLLM(extraction=lambda prompt: replies.pop(0) if len(replies) > 1 else replies[0])


def langchain_model(*answers: str) -> Any:
    pytest.importorskip("langchain_core")
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=list(answers))


def test_each_kind_is_recognised_by_its_shape() -> None:
    assert llm_kind("gpt-4o-mini") == "litellm"
    assert llm_kind(lambda messages, schema: "{}") == "callable"
    assert llm_kind(langchain_model("{}")) == "chat_model"
    assert llm_kind(crewai_llm("{}")) == "crewai"
    with pytest.raises(TypeError, match="LangChain chat model, a CrewAI LLM"):
        check_llm(object())
    with pytest.raises(TypeError, match="llm must be"):
        check_llm(42)


@pytest.mark.parametrize("make", [crewai_llm, langchain_model], ids=["crewai", "langchain"])
def test_a_framework_model_extracts_facts_for_memory(tmp_path: Path, make: Any) -> None:
    llm = make(facts_json(fact("Moved to Austin last year.", topic="personal_info")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        assert mem.llm is llm
        mem.observe(TURN, user_id="alice")
        mem.drain_writes()
        (record,) = mem.list(user_id="alice")
        assert record.text == "Moved to Austin last year."
        assert mem.history(record.id)[0].actor == "extractor (llm)"
        assert mem.stats.llm_calls["extract"] == 1 and mem.stats.llm_failures == 0


def test_a_crewai_llm_is_sent_the_schema_in_the_system_message() -> None:
    llm = crewai_llm('{"facts": []}')
    assert complete_json(llm, [{"role": "system", "content": "Extract."}, *TURN], SCHEMA) == {"facts": []}
    (call,) = llm.extraction_calls
    assert call[0]["role"] == "system" and call[0]["content"].startswith("Extract.")
    assert json.dumps(SCHEMA, separators=(",", ":")) in call[0]["content"]
    assert call[1] == TURN[0]


def test_a_chat_models_reasoning_parts_are_never_read() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage

    reply = AIMessage(content=[{"type": "thinking", "thinking": '{"facts": ["secret"]}'},
                               {"type": "text", "text": '{"facts": []}'}])
    assert answer_text(reply) == '{"facts": []}'
    assert answer_text("plain") == "plain"
    assert with_schema(TURN, SCHEMA)[0]["role"] == "system"


@pytest.mark.parametrize("make", [crewai_llm, langchain_model], ids=["crewai", "langchain"])
def test_a_framework_model_answering_prose_falls_back_to_the_rules_counted(tmp_path: Path, make: Any) -> None:
    llm = make("Sure! The user moved to Austin.")
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe(TURN, user_id="alice")
        mem.drain_writes()
        assert [r.text for r in mem.list(user_id="alice")] == ["Moved to Austin last year."]
        stats = mem.stats
        assert (stats.llm_calls["extract"], stats.llm_failures, stats.llm_fallbacks) == (2, 2, 1)
