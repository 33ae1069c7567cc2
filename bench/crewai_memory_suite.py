"""CrewAI's own unified-Memory tests (tests/crewai_memory_suite/) against CrewMemory, one run, the counts.

    .venv/bin/python bench/crewai_memory_suite.py             # every test file of the suite
    .venv/bin/python bench/crewai_memory_suite.py -k scope    # extra pytest arguments pass through

Prints, per copied CrewAI test file, the tests CrewMemory passes, its known differences (strict
xfails, each with its reason in the suite's conftest.KNOWN_DIFFERENCES), the tests that do not
apply to a memory the user supplies (deselected at collection, conftest.NOT_APPLICABLE), and
failures; then why the tests that do not apply were left out, and any entry of either table that
names no test of the copies (CrewAI renamed or dropped it when the copies were refreshed). Exits
non-zero when a test failed outright or a table entry is stale.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "crewai_memory_suite"


class Tally:
    """A pytest plugin counting outcomes per test file of the suite."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.reasons: Counter[str] = Counter()
        self.failed: list[str] = []
        self.deselected: list[pytest.Item] = []
        self.kept: list[pytest.Item] = []
        self.conftest: ModuleType | None = None

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.extend(items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.kept = list(session.items)
        for plugin in session.config.pluginmanager.get_plugins():
            if isinstance(plugin, ModuleType) and Path(getattr(plugin, "__file__", "")) == SUITE / "conftest.py":
                self.conftest = plugin

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            module = Path(report.nodeid.split("::")[0]).name
            if hasattr(report, "wasxfail"):
                self.outcomes[module]["known differences"] += 1
            elif report.passed:
                self.outcomes[module]["passed"] += 1
            elif report.failed:
                self.outcomes[module]["failed"] += 1
                self.failed.append(report.nodeid)


def _stale(table: dict[str, str], items: list[pytest.Item]) -> list[str]:
    """Entries (module::test, module::Class::test or module::Class) that match none of `items`."""
    ids = {"::".join([Path(item.nodeid.split("::")[0]).name, *item.nodeid.split("::")[1:]]) for item in items}
    return [key for key in table if not any(i == key or i.startswith(key + "::") for i in ids)]


def main(argv: list[str]) -> int:
    tally = Tally()
    code = pytest.main([str(SUITE), "-q", "-p", "no:cacheprovider", *argv], plugins=[tally])
    conftest = tally.conftest
    if conftest is None:
        print("the suite did not load (is crewai installed?)")
        return int(code) or 1
    not_applicable: dict[str, str] = conftest.NOT_APPLICABLE
    known: dict[str, str] = conftest.KNOWN_DIFFERENCES
    reasons: Counter[str] = Counter()
    for item in tally.deselected:
        reason = conftest._listed(not_applicable, item)
        if reason is not None:
            tally.outcomes[item.path.name]["not applicable"] += 1
            reasons[reason] += 1
    columns = ("passed", "known differences", "not applicable", "failed")
    print(f"\n{'CrewAI test file':<38}" + "".join(f"{c:>19}" for c in columns))
    for module in sorted(tally.outcomes):
        print(f"{module:<38}" + "".join(f"{tally.outcomes[module][c]:>19}" for c in columns))
    print(f"{'total':<38}" + "".join(f"{sum(o[c] for o in tally.outcomes.values()):>19}" for c in columns))
    print("\nnot applicable to a memory the user supplies (deselected):")
    for reason, count in reasons.most_common():
        print(f"  {count:>3} x {reason}")
    if known:
        print("\nknown differences (strict xfails):", *(f"  {k}: {v}" for k, v in known.items()), sep="\n")
    # With extra arguments (-k ...) a listed test may simply not have been collected.
    stale = [] if argv else [*_stale(not_applicable, tally.deselected), *_stale(known, tally.kept)]
    if stale:
        print("\ntable entries that name no test of the copies:", *stale, sep="\n  ")
    if tally.failed:
        print("\nfailed:", *tally.failed, sep="\n  ")
    return int(code) or int(bool(stale))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
