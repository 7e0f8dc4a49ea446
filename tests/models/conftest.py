"""Fixtures of the real-model tests: `record` keeps each measured tolerance for docs/models.md (see report.py)."""
import json
import os

import pytest

from models.fetch import CACHE

RESULTS = os.path.join(CACHE, "results.json")


@pytest.fixture(scope="session")
def _results():
    found = {}
    yield found
    if not found:
        return
    old = {}
    if os.path.isfile(RESULTS):
        try:
            with open(RESULTS) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
    old.update(found)
    os.makedirs(CACHE, exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(old, f, indent=1, sort_keys=True)


@pytest.fixture
def record(_results):
    """record(key, **fields): remember what a test measured (max errors, results) under `key`."""
    def put(key, **fields):
        _results.setdefault(key, {}).update(fields)
    return put
