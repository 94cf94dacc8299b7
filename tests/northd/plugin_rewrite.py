"""The `--rewrite` option of the datadriven scenario tests: regenerate each scenario
file's expected outputs from what the code does now, to be reviewed as a diff.
`PYOVSDB_REWRITE=1` does the same.

An option must be known before the command line is parsed, so `pytest_addoption` is
registered by the directory's conftest (`from plugin_rewrite import pytest_addoption`)
or with `-p plugin_rewrite`; without it only the environment variable works."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="rewrite the expected outputs of tests/northd/testdata/*.txt")


def rewrite_requested(config: pytest.Config) -> bool:
    return (bool(config.getoption("--rewrite", default=False))
            or os.environ.get("PYOVSDB_REWRITE") == "1")
