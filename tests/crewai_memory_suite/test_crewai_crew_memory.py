# Two of CrewAI's lib/crewai/tests/test_crew.py tests (notice below), run against mnemic's CrewMemory.
#
# MIT License
#
# Copyright (c) 2025 crewAI, Inc.
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
#
# Copied from crewAI (https://github.com/crewAIInc/crewAI, commit f4731f5025f861c78e3af0487cc80bf5e7c64782),
# lib/crewai/tests/test_crew.py:
# the `researcher` fixture, test_crew_copy_with_memory and test_reset_memory_uses_full_unified_memory_reset,
# with the imports they use: its memory tests that neither replay recorded LLM calls (VCR cassettes) nor
# queue saves through CrewAI Memory's private _submit_save. These changes only (crew_memories.py says
# how the memory under test is built):
# - `memory=True` (the Memory CrewAI builds itself) is `memory=crew_memory()`, a CrewMemory;
# - test_reset_memory_uses_full_unified_memory_reset patches reset_all/reset on `type(crew._memory)`:
#   CrewMemory overrides them, so a patch on CrewAI's Memory class would catch nothing.

from unittest.mock import patch

from crewai.agent import Agent
from crewai.crew import Crew
from crewai.memory.unified_memory import Memory
from crewai.process import Process
from crewai.task import Task
import pydantic_core
import pytest

from crew_memories import crew_memory


@pytest.fixture
def researcher():
    return Agent(
        role="Researcher",
        goal="Make the best research and analysis on content about AI and AI agents",
        backstory="You're an expert researcher, specialized in technology, software engineering, AI and startups. You work as a freelancer and is now working on doing research and analysis for a new customer.",
        allow_delegation=False,
    )


def test_crew_copy_with_memory():
    """Test that copying a crew with memory enabled does not raise and shares the same memory instance."""
    agent = Agent(role="Test Agent", goal="Test Goal", backstory="Test Backstory")
    task = Task(description="Test Task", expected_output="Test Output", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], memory=crew_memory())

    assert crew._memory is not None, "Crew with memory=True should have _memory"

    try:
        crew_copy = crew.copy()

        assert hasattr(crew_copy, "_memory"), "Copied crew should have _memory"
        assert crew_copy._memory is not None, "Copied _memory should not be None"
        assert crew_copy._memory is crew._memory, (
            "Copy passes memory=self._memory so clone shares the same memory"
        )

    except pydantic_core.ValidationError as e:
        if "Input should be an instance of" in str(e) and ("Memory" in str(e)):
            pytest.fail(
                f"Copying with memory raised Pydantic ValidationError, likely due to incorrect memory copy: {e}"
            )
        else:
            raise e
    except Exception as e:
        pytest.fail(f"Copying crew raised an unexpected exception: {e}")


def test_reset_memory_uses_full_unified_memory_reset(researcher):
    crew = Crew(
        agents=[researcher],
        process=Process.sequential,
        tasks=[
            Task(description="Task 1", expected_output="output", agent=researcher),
        ],
        memory=crew_memory(),
    )

    assert isinstance(crew._memory, Memory)
    with patch.object(type(crew._memory), "reset_all") as reset_all, patch.object(
        type(crew._memory), "reset"
    ) as reset:
        crew.reset_memories(command_type="memory")

    reset_all.assert_called_once_with()
    reset.assert_not_called()
