"""The trained model's search tests: one torch thread per module (:func:`one_thread` of the root conftest)."""

import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    yield
