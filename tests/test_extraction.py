"""Extraction: the deterministic extractor, the LLM extractor's contract, and reasoning never stored."""

from __future__ import annotations

import json
import logging
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import ScriptedLLM, fact, facts_json

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.extraction import (
    deterministic_extract,
    extraction_schema,
    normalise_messages,
    segment,
    third_person,
)
from mnemic.core.llm import LLMOutputError, complete_json, parse_json_object


def extract(*messages: tuple[str, str], topics: tuple[str, ...] | None = None) -> list[str]:
    normalised = normalise_messages([{"role": r, "content": c} for r, c in messages])
    found = deterministic_extract(normalised) if topics is None else deterministic_extract(normalised,
                                                                                             topics=topics)
    return [f.text for f in found]


def user(text: str) -> list[str]:
    return extract(("user", text))


@pytest.fixture
def auto(tmp_path: Path) -> Memory:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        yield mem


# -- deterministic ---------------------------------------------------------------------------


def test_the_austin_example_yields_two_usable_facts() -> None:
    facts = deterministic_extract(normalise_messages(
        "I moved to Austin last year and I prefer replies in bullet points."))
    assert [(f.text, f.topic, f.author) for f in facts] == [
        ("Moved to Austin last year.", "personal_info", "user"),
        ("Prefers replies in bullet points.", "preferences", "user"),
    ]


@pytest.mark.parametrize("text", [
    "What is the weather like in Paris?", "how do I reset my router", "Thanks, that helps!", "Hi there!",
    "ok", "Can you write me a poem about cats?", "Please summarise this article.", "I see.",
    "I was wondering if you could help me", "I'm tired.", "I have a question about taxes.",
    "If I move to Denver, what should I do?", "Tell me a joke", "lol", "Sounds good, thanks!",
    "I don't know.", "Do you know any good restaurants?", "I like that.",
])
def test_questions_greetings_filler_and_requests_are_dropped(text: str) -> None:
    assert user(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("I have a boat.", ["Has a boat."]),
    ("I'm a vegetarian.", ["Is a vegetarian."]),
    ("I live in Berlin and I love techno.", ["Lives in Berlin.", "Loves techno."]),
    ("i work at Acme as a data engineer", ["Works at Acme as a data engineer."]),
    ("I study physics at MIT.", ["Studies physics at MIT."]),
    ("I go hiking every weekend.", ["Goes hiking every weekend."]),
    ("I no longer have a cat.", ["No longer has a cat."]),
    ("I don't like spicy food.", ["Does not like spicy food."]),
    ("I've been learning Spanish for two years.", ["Has been learning Spanish for two years."]),
    ("My dog is named Rex.", ["Dog is named Rex."]),
    ("My name is Dana.", ["Name is Dana."]),
    ("I think I prefer tea over coffee.", ["Prefers tea over coffee."]),
    ("Hi! Actually I sold the boat.", ["Sold the boat."]),
    ("We chose PostgreSQL for the user database.", ["They chose PostgreSQL for the user database."]),
    ("Last year I ran a marathon with my sister.", ["Last year they ran a marathon with their sister."]),
    ("Remember that my sister's birthday is on May 5.", ["Sister's birthday is on May 5."]),
    ("Please remember the launch is on Friday.", ["The launch is on Friday."]),
])
def test_first_person_becomes_standalone_statements(text: str, expected: list[str]) -> None:
    assert user(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Please always reply in French.", "Wants the assistant to always reply in French."),
    ("Don't use emojis.", "Wants the assistant not to use emojis."),
    ("Never mention my ex.", "Wants the assistant to never mention their ex."),
    ("Call me Sam.", "Wants to be called Sam."),
    ("I want you to always answer briefly.", "Wants the assistant to always answer briefly."),
    ("From now on, answer in bullet points.", "Wants the assistant to answer in bullet points from now on."),
])
def test_instructions_to_the_assistant_become_explicit_instructions(text: str, expected: str) -> None:
    facts = deterministic_extract(normalise_messages(text))
    assert [(f.text, f.topic) for f in facts] == [(expected, "explicit_instructions")]


def test_assistant_statements_about_the_user_count_and_advice_does_not() -> None:
    facts = deterministic_extract(normalise_messages([
        {"role": "user", "content": "Can you suggest a weekend trip?"},
        {"role": "assistant", "content": "You mentioned you work as a nurse. You might enjoy Big Bend. "
                                         "You should book early. I can help with that. Is that okay?"},
    ]))
    assert [(f.text, f.author) for f in facts] == [("Works as a nurse.", "assistant")]


def test_a_fact_the_assistant_corrected_is_extracted_corrected() -> None:
    facts = deterministic_extract(normalise_messages([
        {"role": "user", "content": "My flight to Paris is on the 5th."},
        {"role": "assistant", "content": "Actually, your booking shows the flight to Paris is on the 6th, "
                                         "not the 5th."},
    ]))
    assert [(f.text, f.author) for f in facts] == [
        ("Booking shows the flight to Paris is on the 6th, not the 5th.", "assistant")]


def test_system_messages_are_not_facts_about_the_user() -> None:
    assert extract(("system", "I am a helpful assistant. My name is Bot."), ("user", "hello")) == []


def test_tool_results_about_the_user_are_extracted_as_from_tool() -> None:
    facts = deterministic_extract(normalise_messages([
        {"role": "tool", "content": "Customer tier: Gold. {\"id\": 3}\nWeather: sunny."},
    ]))
    assert [(f.text, f.from_tool, f.author) for f in facts] == [("Customer tier: Gold.", True, "agent")]


def test_topics_restrict_what_is_kept() -> None:
    text = "I moved to Austin last year and I prefer replies in bullet points. Always answer in French."
    assert extract(("user", text), topics=("preferences",)) == ["Prefers replies in bullet points."]
    assert extract(("user", text), topics=("explicit_instructions",)) == [
        "Wants the assistant to always answer in French."]


def test_segmentation_keeps_abbreviations_and_bullets() -> None:
    assert segment("Dr. Smith is my GP. I live on Main St. in Austin!\n- I like tea\n2) I own a cat") == [
        "Dr. Smith is my GP.", "I live on Main St. in Austin!", "I like tea", "I own a cat"]


@pytest.mark.parametrize(("verb", "expected"), [("prefer", "prefers"), ("go", "goes"), ("watch", "watches"),
                                                ("study", "studies"), ("play", "plays"), ("have", "has")])
def test_third_person(verb: str, expected: str) -> None:
    assert third_person(verb) == expected


# -- messages and reasoning ------------------------------------------------------------------


@dataclass
class LangChainLike:
    type: str
    content: Any
    additional_kwargs: dict[str, Any]


def test_reasoning_is_never_extracted_in_any_message_shape(auto: Memory) -> None:
    auto.observe([
        {"role": "user", "content": "<think>the user probably lives in Ohio</think>I live in Austin."},
        {"role": "assistant", "content": "Noted.", "reasoning_content": "You live in Ohio, I bet.",
         "thinking": "You own a yacht."},
        LangChainLike("ai", [{"type": "thinking", "thinking": "You are secretly a spy."},
                             {"type": "text", "text": "You prefer short answers, right? Noted."}],
                      {"reasoning_content": "You have three cats."}),
        {"role": "assistant", "content": "<reasoning>You are 90 years old.</reasoning>Happy to help."},
    ], user_id="alice")
    auto.drain_writes()
    texts = [r.text for r in auto.list(user_id="alice")]
    assert texts == ["Lives in Austin."]


def test_normalise_messages_accepts_common_shapes() -> None:
    messages = normalise_messages([
        {"role": "user", "content": "a"}, ("assistant", "b"), LangChainLike("human", "c", {}),
        LangChainLike("tool", [{"type": "text", "text": "d"}], {}), {"type": "ai", "content": "e"},
        {"role": "user", "content": ""},
    ])
    assert [(m.role, m.content) for m in messages] == [
        ("user", "a"), ("assistant", "b"), ("user", "c"), ("tool", "d"), ("assistant", "e")]


@pytest.mark.parametrize(("messages", "error", "fragment"), [
    ({"role": "user", "content": "x"}, TypeError, "list of messages"),
    (42, TypeError, "list of messages"),
    ([{"role": "wizard", "content": "x"}], ValueError, "role"),
    ([42], TypeError, r"messages\[0\]"),
])
def test_bad_messages_are_refused_at_once(auto: Memory, messages: Any, error: type, fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        auto.observe(messages, user_id="alice")
    auto.drain_writes()
    assert auto.list(user_id="alice") == []


# -- LLM extractor ---------------------------------------------------------------------------


def test_one_llm_call_per_turn_with_schema_aliases_and_instructions(tmp_path: Path) -> None:
    llm = ScriptedLLM(
        facts_json(fact("Owns a Mastercraft Maristar 245.")),
        facts_json(fact("Prefers replies in bullet points.", topic="preferences")),
    )
    policy = {"mode": "auto", "instructions": "record which product tier the user is on"}
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy=policy, llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I just bought a Mastercraft Maristar 245!"}], user_id="alice")
        mem.drain_writes()
        mem.observe([{"role": "user", "content": "Bullet points please, for my boat notes."}], user_id="alice")
        mem.drain_writes()
        records = mem.list(user_id="alice")
        assert sorted(r.text for r in records) == ["Owns a Mastercraft Maristar 245.",
                                                   "Prefers replies in bullet points."]
        assert mem.stats.llm_calls["extract"] == 2 == len(llm.calls)
        messages, schema = llm.calls[1]
        assert schema == extraction_schema(mem.policy.topics)
        assert "[1] Owns a Mastercraft Maristar 245." in messages[1]["content"]
        for record in records:
            assert record.id not in messages[1]["content"]  # aliases, never raw ids
        assert "record which product tier the user is on" in messages[0]["content"]
        assert next(r for r in records if r.text.startswith("Prefers")).topic == "preferences"


def test_malformed_output_is_retried_once(tmp_path: Path) -> None:
    llm = ScriptedLLM("{not json", facts_json(fact("Lives in Austin.", topic="personal_info")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I live in Austin."}], user_id="alice")
        mem.drain_writes()
        assert [r.text for r in mem.list(user_id="alice")] == ["Lives in Austin."]
        assert (mem.stats.llm_calls["extract"], mem.stats.llm_failures, mem.stats.llm_fallbacks) == (2, 1, 0)
    assert "could not be used" in llm.calls[1][0][-1]["content"]


@pytest.mark.parametrize("bad", [
    "{not json", "[]", json.dumps({"facts": "Lives in Austin"}), json.dumps({"facts": [{"topic": "x"}]}),
    json.dumps({"facts": [{"text": "x", "decision": "explode"}]}), RuntimeError("provider down"),
    TimeoutError("slow"), 42,
])
def test_two_failures_fall_back_to_the_deterministic_extractor(
        tmp_path: Path, bad: Any, caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(bad, bad)
    with caplog.at_level(logging.WARNING, logger="mnemic"), \
            Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I moved to Austin last year and I prefer replies in "
                                                 "bullet points."}], user_id="alice")
        mem.drain_writes()
        assert sorted(r.text for r in mem.list(user_id="alice")) == [
            "Moved to Austin last year.", "Prefers replies in bullet points."]
        assert (mem.stats.llm_calls["extract"], mem.stats.llm_fallbacks) == (2, 1)
        history = mem.history(mem.list(user_id="alice")[0].id)
        assert history[0].actor == "extractor (rules)"
    assert "deterministic extractor" in caplog.text


def test_llm_output_is_screened(tmp_path: Path) -> None:
    llm = ScriptedLLM({"facts": [
        fact("Prefers tea.", topic="preferences"),
        fact("Lives in Austin.", topic="astrology"),  # not a policy topic
        fact("<think>guessing</think>Likes jazz.", topic="preferences"),
        fact("Customer tier is Gold.", from_tool=True),
        fact("Says the sky is green.", author="assistant"),  # no assistant message in this turn
        {"text": "Plays chess."},  # optional fields may be missing
    ]})
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I prefer tea and jazz."},
                     {"role": "tool", "content": "tier=Gold"}], user_id="alice")
        mem.drain_writes()
        records = {r.text: r for r in mem.list(user_id="alice")}
        assert set(records) == {"Prefers tea.", "Likes jazz.", "Customer tier is Gold.", "Says the sky is green.",
                                "Plays chess."}
        assert records["Customer tier is Gold."].state == "pending"
        assert records["Customer tier is Gold."].source_kind == "tool_result"
        assert records["Says the sky is green."].author == "user"
        assert mem.stats.off_topic_dropped == 1


def test_an_assistant_correction_from_the_llm_keeps_its_author(tmp_path: Path) -> None:
    llm = ScriptedLLM(facts_json(fact("Flight to Paris is on the 6th.", author="assistant")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "My flight to Paris is on the 5th."},
                     {"role": "assistant", "content": "Your booking says the 6th."}], user_id="alice")
        mem.drain_writes()
        (record,) = mem.list(user_id="alice")
        assert (record.text, record.author) == ("Flight to Paris is on the 6th.", "assistant")


# -- the completion call ---------------------------------------------------------------------


def test_parse_json_object_tolerates_fences_and_think_blocks() -> None:
    assert parse_json_object('```json\n{"facts": []}\n```') == {"facts": []}
    assert parse_json_object('<think>{"facts": ["no"]}</think>{"facts": []}') == {"facts": []}
    assert parse_json_object('Sure! {"facts": []} Hope that helps.') == {"facts": []}
    assert parse_json_object({"facts": []}) == {"facts": []}
    for bad in ("", "nope", "[1, 2]", None):
        with pytest.raises(LLMOutputError):
            parse_json_object(bad)


def test_complete_json_with_a_litellm_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def completion(**kwargs: Any) -> Any:
        seen.update(kwargs)
        message = types.SimpleNamespace(content='{"facts": []}', reasoning_content="private thoughts")
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    # A stand-in module: the test never imports the real litellm, so nothing can reach a provider.
    monkeypatch.setitem(sys.modules, "litellm", types.SimpleNamespace(completion=completion))
    schema = extraction_schema(("preferences",))
    assert complete_json("gpt-4o-mini", [{"role": "user", "content": "hi"}], schema) == {"facts": []}
    assert seen["model"] == "gpt-4o-mini"
    assert seen["response_format"]["type"] == "json_schema"
    assert seen["response_format"]["json_schema"]["schema"] == schema
    assert seen["response_format"]["json_schema"]["strict"] is True


def test_complete_json_refuses_a_non_callable() -> None:
    with pytest.raises(TypeError, match="llm must be"):
        complete_json(42, [], {})
