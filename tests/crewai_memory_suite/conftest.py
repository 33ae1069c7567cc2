"""CrewAI's own unified-Memory tests, run against mnemic's CrewMemory.

The test modules here are copies of CrewAI's memory tests (MIT, notice and commit at the top of
each) with only the construction changed: where a test built CrewAI's
`Memory(storage=..., llm=..., embedder=...)` it builds a CrewMemory over a mnemic Memory
(crew_memories.py says how), and `memory=True` in the two crew tests is such a CrewMemory. The
assertions are CrewAI's.

Tests that do not test a memory a user hands to CrewAI (CrewAI's own types and helpers, its
LanceDB storage, its LLM analysis driven through a mocked `llm.call`, the Memory CrewAI builds
itself for `memory=True`, a MagicMock standing in for the memory) stay in the copies as CrewAI
wrote them and are deselected at collection, each with its reason in NOT_APPLICABLE, so a run
reports them as deselected rather than as skips. A test CrewMemory fails on purpose would be listed
in KNOWN_DIFFERENCES with the reason and marked a strict xfail, so every run shows the difference
and a change (a fix, or a new failure) shows up at once; there is none today.
`bench/crewai_memory_suite.py` runs the suite and prints the counts.

The suite needs no network and no OpenAI key: CrewAI's default LLM (built for an Agent without
one) wants OPENAI_API_KEY set, so every test gets a fake one, and a temporary CREWAI_STORAGE_DIR.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

import crew_memories

SUITE = Path(__file__).resolve().parent
UNIFIED = "test_crewai_unified_memory.py"
ROOT_SCOPE = "test_crewai_memory_root_scope.py"

_TYPES = "tests CrewAI's own types or helpers and builds no memory"
_LANCEDB = "drives CrewAI's LanceDBStorage directly; a CrewMemory keeps its records in mnemic's store"
_MOCK_MEMORY = ("the memory is a MagicMock: tests how CrewAI's agent executor, MemoryScope, MemorySlice "
                "or Flow call a memory, not a memory")
_NO_MEMORY = "the Flow's memory is None: tests CrewAI's Flow without any memory"
_DEFAULT_MEMORY = ("tests the Memory CrewAI builds itself (memory=True, or a Flow's default) and how it scopes "
                   "it; a memory the user supplies is left as given (test_crew_memory_instance_preserves_no_root_scope "
                   "and test_flow_user_provided_memory_not_overwritten run)")
_ANALYSIS_LLM = ("asserts CrewAI's LLM analysis: a mocked llm.call answers CrewAI's MemoryAnalysis/ExtractedMemories. "
                 "CrewMemory takes no llm=: the LLM belongs to the mnemic Memory, which prompts it with mnemic's own "
                 "schema")
_PRIVATE_STORAGE = "reaches into CrewAI Memory's private storage or save queue (_storage, _submit_save)"

# "module::test" or "module::Class" (every test of the class) -> why the test does not apply to CrewMemory
NOT_APPLICABLE: dict[str, str] = {
    f"{UNIFIED}::test_memory_analysis_llm_is_isolated_from_streaming_agent_llm":
        "inspects the private copy of the analysis LLM CrewAI's Memory keeps (_llm); CrewMemory takes no llm=",
    f"{UNIFIED}::test_memory_record_defaults": _TYPES,
    f"{UNIFIED}::test_memory_match": _TYPES,
    f"{UNIFIED}::test_memory_record_embedding_excluded_from_serialization": _TYPES,
    f"{UNIFIED}::test_memory_match_embedding_excluded_from_serialization": _TYPES,
    f"{UNIFIED}::test_scope_info": _TYPES,
    f"{UNIFIED}::test_memory_config": _TYPES,
    f"{UNIFIED}::test_lancedb_save_search": _LANCEDB,
    f"{UNIFIED}::test_lancedb_delete_count": _LANCEDB,
    f"{UNIFIED}::test_lancedb_list_scopes_get_scope_info": _LANCEDB,
    f"{UNIFIED}::test_flow_has_default_memory": _DEFAULT_MEMORY,
    f"{UNIFIED}::test_flow_recall_remember_raise_when_memory_explicitly_none": _NO_MEMORY,
    f"{UNIFIED}::test_memory_extract_memories_returns_list_from_llm":
        _ANALYSIS_LLM + " (and asserts llm.call got response_model=ExtractedMemories). A direct extract_memories() "
        "returning the statements is tests/test_crewai_compat.py's "
        "test_extract_memories_called_directly_returns_the_statements_and_stores_nothing",
    f"{UNIFIED}::test_executor_save_to_memory_calls_extract_then_remember_per_item": _MOCK_MEMORY,
    f"{UNIFIED}::test_executor_save_to_memory_skips_delegation_output": _MOCK_MEMORY,
    f"{UNIFIED}::test_memory_scope_extract_memories_delegates": _MOCK_MEMORY,
    f"{UNIFIED}::test_memory_slice_extract_memories_delegates": _MOCK_MEMORY,
    f"{UNIFIED}::test_flow_extract_memories_raises_when_memory_explicitly_none": _NO_MEMORY,
    f"{UNIFIED}::test_flow_extract_memories_delegates_when_memory_present": _MOCK_MEMORY,
    f"{UNIFIED}::test_composite_score_brand_new_memory": _TYPES + " (compute_composite_score)",
    f"{UNIFIED}::test_composite_score_old_memory_decayed": _TYPES + " (compute_composite_score)",
    f"{UNIFIED}::test_composite_score_reranks_results":
        "writes back-dated records straight into CrewAI Memory's private storage (_storage.save) to test CrewAI's "
        "composite score; mnemic ranks with its own hybrid score",
    f"{UNIFIED}::test_composite_score_match_reasons_populated": _TYPES + " (compute_composite_score)",
    f"{UNIFIED}::test_composite_score_custom_config": _TYPES + " (compute_composite_score)",
    f"{UNIFIED}::test_analyze_for_save_llm_failure_returns_defaults": _TYPES + " (crewai.memory.analyze)",
    f"{UNIFIED}::test_extract_memories_llm_failure_returns_raw": _TYPES + " (crewai.memory.analyze)",
    f"{UNIFIED}::test_analyze_query_llm_failure_returns_defaults": _TYPES + " (crewai.memory.analyze)",
    f"{UNIFIED}::test_batch_embed_single_call":
        "counts calls on the embedder given to CrewAI's Memory; CrewMemory takes no embedder= (the embedder "
        "belongs to the mnemic Memory)",
    f"{UNIFIED}::test_batch_consolidation_deduplicates_against_storage":
        _PRIVATE_STORAGE + " to pre-insert a record, and scripts CrewAI's LLM ConsolidationPlan",
    f"{UNIFIED}::test_parallel_find_similar_runs_all_searches": _PRIVATE_STORAGE + " to count its searches",
    f"{UNIFIED}::test_parallel_analyze_runs_concurrent_calls": _ANALYSIS_LLM,
    f"{UNIFIED}::test_reset_all_blocks_new_save_submission_until_reset_completes":
        _PRIVATE_STORAGE + " to order a reset against a save",
    f"{UNIFIED}::test_drain_writes_reports_background_save_failure_without_raising":
        _PRIVATE_STORAGE + " to queue a failing save; CrewMemory's own report of a failed background save is "
        "tests/test_crewai_memory.py's",
    f"{ROOT_SCOPE}::TestSanitizeScopeName": _TYPES + " (crewai.memory.utils.sanitize_scope_name)",
    f"{ROOT_SCOPE}::TestNormalizeScopePath": _TYPES + " (crewai.memory.utils.normalize_scope_path)",
    f"{ROOT_SCOPE}::TestJoinScopePaths": _TYPES + " (crewai.memory.utils.join_scope_paths)",
    f"{ROOT_SCOPE}::TestMemoryRootScope::test_memory_root_scope_with_llm_inferred_scope": _ANALYSIS_LLM,
    f"{ROOT_SCOPE}::TestCrewAutoScoping::test_crew_memory_true_sets_root_scope": _DEFAULT_MEMORY,
    f"{ROOT_SCOPE}::TestCrewAutoScoping::test_crew_memory_true_prefers_chat_llm": _DEFAULT_MEMORY,
    f"{ROOT_SCOPE}::TestCrewAutoScoping::test_crew_sanitizes_name_for_root_scope": _DEFAULT_MEMORY,
    f"{ROOT_SCOPE}::TestAgentScopeExtension": _MOCK_MEMORY,
    f"{ROOT_SCOPE}::TestFlowAutoScoping::test_flow_auto_memory_sets_root_scope": _DEFAULT_MEMORY,
    f"{ROOT_SCOPE}::TestFlowAutoScoping::test_flow_with_name_uses_name_for_root_scope": _DEFAULT_MEMORY,
    f"{ROOT_SCOPE}::TestBackwardCompatibility::test_crew_without_name_uses_default": _DEFAULT_MEMORY,
    f"{ROOT_SCOPE}::TestEncodingFlowRootScope::test_encoding_flow_fast_path_with_root_scope":
        _TYPES + " (CrewAI's EncodingFlow ItemState and join_scope_paths)",
    f"{ROOT_SCOPE}::TestEncodingFlowRootScope::test_encoding_flow_llm_path_with_root_scope": _ANALYSIS_LLM,
    f"{ROOT_SCOPE}::TestAgentExecutorBackwardCompat": _MOCK_MEMORY,
    f"{ROOT_SCOPE}::TestConsolidationIsolation": "drives CrewAI's EncodingFlow over a MagicMock storage",
}

# "module::test" or "module::Class::test" -> why CrewMemory fails it on purpose (a strict xfail)
KNOWN_DIFFERENCES: dict[str, str] = {}


def _listed(table: dict[str, str], item: pytest.Item) -> str | None:
    """The entry for `item` in a table keyed by "module::test", "module::Class::test" or "module::Class"."""
    names = item.nodeid.split("::")
    ids = [Path(names[0]).name, *names[1:]]
    for depth in range(len(ids), 1, -1):
        reason = table.get("::".join(ids[:depth]))
        if reason is not None:
            return reason
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Called with every item of the session: only this suite's are ours.
    kept: list[pytest.Item] = []
    not_applicable: list[pytest.Item] = []
    for item in items:
        if item.path.parent != SUITE:
            kept.append(item)
        elif _listed(NOT_APPLICABLE, item) is not None:
            not_applicable.append(item)
        else:
            reason = _listed(KNOWN_DIFFERENCES, item)
            if reason is not None:
                item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
            kept.append(item)
    if not_applicable:
        config.hook.pytest_deselected(items=not_applicable)
        items[:] = kept


@pytest.fixture(autouse=True)
def crewai_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What CrewAI's own test conftest sets for these tests, minus its recorded HTTP cassettes."""
    monkeypatch.setenv("OPENAI_API_KEY", "fake-api-key")  # never a real one: nothing here may call out
    storage = tmp_path / "crewai_storage"
    storage.mkdir()
    monkeypatch.setenv("CREWAI_STORAGE_DIR", str(storage))
    monkeypatch.setenv("CREWAI_TESTING", "true")
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")


@pytest.fixture(autouse=True)
def close_memories() -> Iterator[None]:
    """Close every mnemic Memory a test opened through crew_memories, and detach what CrewAI's
    runtime state registered (CrewAI's own conftest resets it too): an agent on a Mock LLM left
    registered made every later checkpoint of the session fail to serialise."""
    from crewai.events.event_bus import crewai_event_bus

    yield
    crew_memories.close_all()
    crewai_event_bus.reset_runtime_state()
