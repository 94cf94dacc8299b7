"""Robustness and crash-safety tests (their counts are kept in tests/robust_counts.py and
printed by tests/conftest.py)."""

from __future__ import annotations

import pytest

pytest.register_assert_rewrite("robust_helpers")
