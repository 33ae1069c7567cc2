"""Extraction from a finished agent task: what the task established is kept, its instructions,
questions, reasoning and "unknown" never are; the LLM prompt keeps the task apart."""

from __future__ import annotations

import pytest
from scripted_llm import ScriptedLLM, fact, facts_json

from mnemic.core.extraction import Message, task_extract
from mnemic.core.extraction.llm_prompt import llm_extract
from mnemic.core.policy import MemoryPolicy

RECORD = "Record the customer's logistics details from this message: {message}"


def texts(result: str, *, task: str = "Summarise the account.", inputs: str | None = None) -> list[str]:
    messages = [Message("user", inputs)] if inputs else []
    return [f.text for f in task_extract([*messages, Message("assistant", result)], task=task)]


def test_a_third_person_answer_is_kept_whole_and_the_instruction_never() -> None:
    found = task_extract([Message("user", "Our warehouse is in Rotterdam; we ship Tuesdays."),
                          Message("assistant", "The customer's warehouse is in Rotterdam and they ship on Tuesdays.")],
                         task=RECORD)
    by_author = {(f.author, f.text) for f in found}
    assert ("agent", "The customer's warehouse is in Rotterdam and they ship on Tuesdays.") in by_author
    assert ("user", "Warehouse is in Rotterdam.") in by_author
    assert not any("Record" in f.text or "logistics details" in f.text for f in found)


@pytest.mark.parametrize("result", [
    "UNKNOWN", "Where is the warehouse?", "I have recorded the details.", "Here is the summary:",
    "Make sure to confirm the address with the customer.", "The ship date is not specified.",
    "Thought: I should check the CRM first.", "```python\nprint('x')\n```",
    "The customer's logistics details have been recorded.",
])
def test_what_is_not_a_fact_is_dropped(result: str) -> None:
    assert texts(result, task="Record the customer's logistics details.") == []


def test_markdown_lists_tables_and_json_give_one_fact_each() -> None:
    report = ("## Account\n- **Plan:** Enterprise, renewed in March.\n- Renewal owner is Dana Kim.\n\n"
              "| Field | Value |\n|---|---|\n| Budget | $5,000 |\n")
    assert texts(report) == ["Plan: Enterprise, renewed in March.", "Renewal owner is Dana Kim.", "Budget: $5,000."]
    assert texts('{"warehouse_city": "Rotterdam", "ship_days": ["Tue", "Thu"], "notes": null}') == [
        "Warehouse city: Rotterdam.", "Ship days: Tue, Thu."]


def test_leads_are_removed_and_a_recommendation_is_kept_as_a_decision() -> None:
    assert texts("Based on the message, the patient prefers morning appointments.") == [
        "The patient prefers morning appointments."]
    assert texts("I recommend PostgreSQL for the new project.") == ["Recommendation: PostgreSQL for the new project."]
    assert texts("You live in Austin.") == ["Lives in Austin."]


def test_other_languages_keep_their_sentences() -> None:
    assert texts("Die Kundin wohnt in Berlin. 顧客は東京に住んでいます。") == [
        "Die Kundin wohnt in Berlin.", "顧客は東京に住んでいます。"]


def test_a_long_report_is_capped() -> None:
    report = " ".join(f"Site {n} opened in {1990 + n}." for n in range(60))
    assert len(texts(report)) == 20


def test_the_llm_sees_the_task_apart_and_cannot_store_it_or_a_question() -> None:
    llm = ScriptedLLM(facts_json(fact("The customer's warehouse is in Rotterdam.", author="agent"),
                                 fact("Record the customer's logistics details.", author="agent"),
                                 fact("Where does the customer ship from?", author="agent")))
    found = llm_extract(llm, [Message("user", "Our warehouse is in Rotterdam."),
                              Message("assistant", "The customer's warehouse is in Rotterdam.")],
                        policy=MemoryPolicy(mode="auto"), existing=[], aliases={}, on_call=lambda: None,
                        on_failure=lambda exc: None, task=RECORD, attempts=1)
    assert [(f.author, f.text) for f in found or []] == [("agent", "The customer's warehouse is in Rotterdam.")]
    (messages, schema), = llm.calls
    assert "Task given to the agent (an instruction, not a fact):\n" + RECORD in messages[1]["content"]
    assert "agent's result: The customer's warehouse" in messages[1]["content"]
    assert schema["properties"]["facts"]["items"]["properties"]["author"]["enum"] == ["user", "agent"]


def test_one_attempt_means_one_call() -> None:
    llm = ScriptedLLM("Sure, here are the facts: the warehouse is in Rotterdam.")
    failures: list[BaseException] = []
    found = llm_extract(llm, [Message("assistant", "The warehouse is in Rotterdam.")],
                        policy=MemoryPolicy(mode="auto"), existing=[], aliases={}, on_call=lambda: None,
                        on_failure=failures.append, task="Summarise.", attempts=1)
    assert found is None and len(llm.calls) == 1 and len(failures) == 1
