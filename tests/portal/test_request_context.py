"""Request ids: accepted or made by the middleware, returned in the response, carried into Celery tasks and
printed on every log line (JSON or plain)."""
from __future__ import annotations

import io
import json
import logging
import uuid

import pytest

from portal import request_context
from portal.logs import JsonFormatter, RequestContextFilter
from portal.selectors import worker_heartbeat
from tests.support.celery_worker import wait_for


class Capture:
    """A log handler formatting with the production JSON formatter and context filter, kept in memory."""

    def __init__(self, logger_name: str):
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(JsonFormatter())
        self.handler.addFilter(RequestContextFilter())
        self.logger = logging.getLogger(logger_name)

    def __enter__(self):
        self.logger.addHandler(self.handler)
        self.old_level = self.logger.level
        self.logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.old_level)

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines() if line.strip()]


@pytest.mark.django_db
def test_a_sane_incoming_request_id_is_kept_and_returned(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.42")
    assert response["X-Request-ID"] == "lb-7f3a.42"


@pytest.mark.django_db
@pytest.mark.parametrize("incoming", ["", "bad id with spaces", "x" * 200, "new\nline", "<script>"])
def test_an_insane_or_missing_request_id_is_replaced_by_a_fresh_one(client, incoming):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=incoming)
    assert response["X-Request-ID"] != incoming and len(response["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_access_log_line_is_json_with_request_id_user_and_status(api, engineer, settings):
    settings.LOG_REQUESTS = True
    with Capture("portal.access") as logs:
        response = api(engineer).get("/api/v1/intake/questionnaire/", HTTP_X_REQUEST_ID="rid-access-1")
    assert response.status_code == 200
    [line] = logs.records()
    assert line["request_id"] == "rid-access-1" and line["user"] == "eve"
    assert line["path"] == "/api/v1/intake/questionnaire/" and line["method"] == "GET" and line["status"] == 200
    assert line["logger"] == "portal.access" and line["level"] == "INFO" and "duration_ms" in line
    assert line["timestamp"].endswith("+00:00")


def test_json_formatter_writes_one_object_per_line_with_exception_and_extras():
    record = logging.LogRecord("portal.x", logging.ERROR, __file__, 1, "failed %s", ("twice",), None)
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    record.cluster = "gpu-east"
    token = request_context.bind(request_id="rid-fmt", task_name="t", task_id="abc")
    try:
        RequestContextFilter().filter(record)
    finally:
        request_context.reset(token)
    text = JsonFormatter().format(record)
    assert "\n" not in text
    data = json.loads(text)
    assert data["message"] == "failed twice" and data["cluster"] == "gpu-east" and "ValueError" in data["exc_info"]
    assert (data["request_id"], data["task_name"], data["task_id"]) == ("rid-fmt", "t", "abc")


def test_plain_format_shows_a_dash_without_a_request():
    record = logging.LogRecord("portal.x", logging.INFO, __file__, 1, "hello", (), None)
    RequestContextFilter().filter(record)
    line = logging.Formatter("%(levelname)s %(name)s [%(request_id)s] %(message)s").format(record)
    assert line == "INFO portal.x [-] hello"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_request_id_of_a_view_reaches_the_task_run_by_a_real_worker(api, platform_user, real_worker):
    rid = f"it-{uuid.uuid4().hex[:12]}"
    with Capture("portal.tasks") as logs:
        response = api(platform_user).post("/api/v1/ops/ping/", HTTP_X_REQUEST_ID=rid)
        assert response.status_code == 202, response.content
        assert response.json() == {"task": "portal.ping", "request_id": rid}
        heartbeat = wait_for(lambda: (hb := worker_heartbeat()) and hb["request_id"] == rid and hb)
        line = wait_for(lambda: next((r for r in logs.records() if r["request_id"] == rid), None))
    assert heartbeat["worker"] and heartbeat["worker"] in real_worker.hostname
    assert line["message"].startswith("pong from") and line["task_name"] == "portal.ping"
    assert line["task_id"] == heartbeat["task_id"] and line["user"] == "pat"

    read = api(platform_user).get("/api/v1/ops/ping/").json()
    assert read["request_id"] == rid and read["age_seconds"] >= 0


@pytest.mark.django_db
def test_only_the_platform_team_pings_workers(api, engineer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        assert api(engineer).post("/api/v1/ops/ping/").status_code == 403
        assert api(engineer).get("/api/v1/ops/ping/").status_code == 403
        assert api().post("/api/v1/ops/ping/").status_code == 401
    assert callbacks == []


@pytest.mark.django_db
def test_a_task_sent_without_a_request_gets_its_own_id(eager_celery):
    # Eager execution runs prerun/postrun like a worker; outside a request the task makes up its own id.
    from portal.tasks import ping

    with Capture("portal.tasks") as logs:
        ping.delay()
    [line] = logs.records()
    assert len(line["request_id"]) == 32 and line["task_name"] == "portal.ping"
    assert request_context.current() == {}
