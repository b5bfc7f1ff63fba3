"""Schemathesis: requests generated from the OpenAPI schema never get a 5xx.

Its own database of the session's Redis keeps the jobs it manages to queue away from the stack's worker.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error

from zootriage.app.main import create_app
from zootriage.app.settings import Settings

pytestmark = pytest.mark.slow  # every operation fuzzed, 30 examples each


@pytest.fixture(scope="module")
def api_schema(settings: Settings, redis_server: str) -> schemathesis.BaseSchema:
    broker = f"{redis_server}/8"
    app = create_app(settings.model_copy(update={"broker_url": broker}))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_no_request_gets_a_server_error(api_schema: schemathesis.BaseSchema, clean_db: str) -> None:
    """Every operation in turn (schemathesis' pytest plugin does not load on this pytest). On empty
    tables, emptied again afterwards: the keys and jobs it manages to create stay its own."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 7

    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
        def fuzz(case: schemathesis.Case) -> None:
            case.call_and_validate(checks=[not_a_server_error])

        fuzz()
