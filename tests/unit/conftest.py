import pytest

# Detailed assertion messages inside the shared helpers.
pytest.register_assert_rewrite("unit_helpers")
