"""LangGraph's own store tests (tests/langgraph_store_suite/), one run, pass counts per store.

    .venv/bin/python bench/langgraph_store_suite.py            # every test file of the suite
    .venv/bin/python bench/langgraph_store_suite.py -k "not ttl"   # extra pytest arguments pass through

Each copied LangGraph test runs once per store (MnemicStore, InMemoryStore, SqliteStore). A store's
count is the tests it passes; its known differences (strict xfails, each with its reason in
tests/langgraph_store_suite/lg_stores.py) are the rest. Prints one row per store and, per store,
the reasons its xfails were given; exits non-zero when any test failed outright.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "langgraph_store_suite"
STORE_NAMES = {"mnemic": "MnemicStore", "inmemory": "InMemoryStore", "sqlite": "SqliteStore"}


class Tally:
    """A pytest plugin counting outcomes per store parameter."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.reasons: dict[str, Counter[str]] = defaultdict(Counter)
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        kind = _store_of(report.nodeid)
        if kind is None:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if hasattr(report, "wasxfail"):
                self.outcomes[kind]["xfailed"] += 1
                self.reasons[kind][str(report.wasxfail).split(": ", 1)[-1][:90]] += 1
            elif report.passed:
                self.outcomes[kind]["passed"] += 1
            elif report.failed:
                self.outcomes[kind]["failed"] += 1
                self.failed.append(report.nodeid)


def _store_of(nodeid: str) -> str | None:
    params = nodeid.rsplit("[", 1)[-1].rstrip("]") if nodeid.endswith("]") else ""
    first = params.split("-", 1)[0]
    return first if first in STORE_NAMES else None


def main(argv: list[str]) -> int:
    tally = Tally()
    code = pytest.main([str(SUITE), "-q", "-p", "no:cacheprovider", *argv], plugins=[tally])
    print()
    print(f"{'store':<15}{'passed':>8}{'known differences':>20}{'failed':>8}{'total':>8}")
    for kind, name in STORE_NAMES.items():
        counts = tally.outcomes[kind]
        total = sum(counts.values())
        print(f"{name:<15}{counts['passed']:>8}{counts['xfailed']:>20}{counts['failed']:>8}{total:>8}")
    for kind, name in STORE_NAMES.items():
        if tally.reasons[kind]:
            print(f"\n{name}'s known differences:")
            for reason, count in tally.reasons[kind].most_common():
                print(f"  {count:>3} x {reason}")
    if tally.failed:
        print("\nfailed:", *tally.failed, sep="\n  ")
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

