"""LangGraph's own store tests (tests/langgraph_store_suite/), one run, pass counts per store.

    .venv/bin/python bench/langgraph_store_suite.py            # every test file of the suite
    .venv/bin/python bench/langgraph_store_suite.py -k "not ttl"   # extra pytest arguments pass through

Each copied LangGraph test runs once per store (MnemicStore, InMemoryStore, SqliteStore), some
several times (LangGraph's own parameters). A store's count is the test cases it passes, and the
test functions all of whose cases it passes; its known differences (strict xfails, each with its
reason in tests/langgraph_store_suite/lg_stores.py) are the rest. SqliteStore's vector tests need a
Python whose sqlite3 can load extensions (sqlite-vec): Debian's python3 can, a default pyenv build
cannot, and there they are known differences of the environment rather than of the store. Prints
one row per store and, per store, the reasons its xfails were given; exits non-zero when any test
failed outright.
"""

from __future__ import annotations

import os
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
        self.functions: dict[str, dict[str, bool]] = defaultdict(dict)  # store -> test function -> all passed

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        kind = _store_of(report.nodeid)
        if kind is None:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            function = report.nodeid.rsplit("[", 1)[0]
            known = self.functions[kind]
            known[function] = known.get(function, True) and report.passed and not hasattr(report, "wasxfail")
            if hasattr(report, "wasxfail"):
                self.outcomes[kind]["xfailed"] += 1
                self.reasons[kind][str(report.wasxfail).split(": ", 1)[-1][:90]] += 1
            elif report.passed:
                self.outcomes[kind]["passed"] += 1
            elif report.failed:
                self.outcomes[kind]["failed"] += 1
                self.failed.append(report.nodeid)


def _store_of(nodeid: str) -> str | None:
    params = nodeid.rsplit("[", 1)[-1].rstrip("]").split("-") if nodeid.endswith("]") else []
    return next((p for p in params if p in STORE_NAMES), None)


def main(argv: list[str]) -> int:
    os.environ["MNEMIC_STORE_SUITE_EVERY_STORE"] = "1"  # the reference stores' slow TTL tests too
    tally = Tally()
    code = pytest.main([str(SUITE), "-q", "-p", "no:cacheprovider", *argv], plugins=[tally])
    print()
    print(f"{'store':<15}{'passed':>8}{'known differences':>20}{'failed':>8}{'cases':>8}"
          f"{'test functions passed':>24}")
    for kind, name in STORE_NAMES.items():
        counts = tally.outcomes[kind]
        total = sum(counts.values())
        functions = tally.functions[kind]
        whole = f"{sum(functions.values())}/{len(functions)}"
        print(f"{name:<15}{counts['passed']:>8}{counts['xfailed']:>20}{counts['failed']:>8}{total:>8}{whole:>24}")
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

