"""LLM providers against a real local endpoint speaking each protocol (tests/fake_llm.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from memoryd.errors import DependencyMissingError, InvalidInputError, UpstreamError
from memoryd.llm import available_llms, create_llm
from memoryd.settings import LLMSettings
from tests.fake_llm import FakeLLM, Reply

MESSAGES = [
    {"role": "system", "content": "You answer in JSON."},
    {"role": "user", "content": "Say hello."},
]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def openai(fake: FakeLLM, **extra: object) -> LLMSettings:
    cfg = {"base_url": fake.url, "model": "qwen2.5", "api_key": "sk-test-secret", "timeout_s": 2}
    cfg.update(extra)
    return LLMSettings(provider="openai", openai=cfg)  # type: ignore[arg-type]


def test_registry_knows_every_provider_and_none_means_offline() -> None:
    assert {"openai", "anthropic", "bedrock", "none"} <= set(available_llms())
    assert create_llm(LLMSettings(provider="none")) is None
    with pytest.raises(InvalidInputError, match="unknown LLM provider") as info:
        create_llm(LLMSettings(provider="gpt-magic"))
    assert "MEMORYD_LLM__PROVIDER" in (info.value.hint or "")


def test_openai_compatible_chat(fake: FakeLLM) -> None:
    fake.script('{"ok": true}')
    llm = create_llm(openai(fake))
    assert llm is not None and llm.name == "openai:qwen2.5"
    assert llm.complete(MESSAGES, json_output=True) == '{"ok": true}'
    body, headers = fake.requests[0], fake.headers[0]
    assert fake.paths == ["/v1/chat/completions"]
    assert body["model"] == "qwen2.5" and body["messages"] == MESSAGES
    assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.0
    assert headers["Authorization"] == "Bearer sk-test-secret"


def test_json_mode_can_be_switched_off_for_servers_without_it(fake: FakeLLM) -> None:
    fake.script("{}")
    create_llm(openai(fake, json_mode=False)).complete(MESSAGES, json_output=True)  # type: ignore[union-attr]
    assert "response_format" not in fake.requests[0]


def test_a_500_is_retried_once_then_succeeds(fake: FakeLLM) -> None:
    fake.script(Reply(status=500), "fine")
    assert create_llm(openai(fake)).complete(MESSAGES) == "fine"  # type: ignore[union-attr]
    assert len(fake.requests) == 2


def test_500s_until_the_retries_run_out_are_a_clear_error_without_the_key(fake: FakeLLM) -> None:
    fake.script(Reply(status=500), Reply(status=503))
    with pytest.raises(UpstreamError) as info:
        create_llm(openai(fake)).complete(MESSAGES)  # type: ignore[union-attr]
    text = str(info.value)
    assert "HTTP 503" in text and "2 attempts" in text and "nothing was stored" in text
    assert "sk-test-secret" not in text


def test_a_400_is_not_retried(fake: FakeLLM) -> None:
    fake.script(Reply(status=400))
    with pytest.raises(UpstreamError, match="HTTP 400") as info:
        create_llm(openai(fake)).complete(MESSAGES)  # type: ignore[union-attr]
    assert len(fake.requests) == 1 and "MEMORYD_LLM__OPENAI__" in (info.value.hint or "")


def test_a_timeout_is_retried_then_reported(fake: FakeLLM) -> None:
    fake.script(Reply(content="late", delay=1.5), Reply(content="late", delay=1.5))
    with pytest.raises(UpstreamError, match=r"timed out after 0\.5s"):
        create_llm(openai(fake, timeout_s=0.5)).complete(MESSAGES)  # type: ignore[union-attr]
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    "reply",
    [Reply(raw="<html>proxy error</html>"), Reply(raw='{"choices": []}'), Reply(raw="[1, 2]")],
)
def test_a_body_that_is_not_a_chat_completion_is_a_clear_error(fake: FakeLLM, reply: Reply) -> None:
    fake.script(reply)
    with pytest.raises(UpstreamError) as info:
        create_llm(openai(fake, retries=0)).complete(MESSAGES)  # type: ignore[union-attr]
    assert info.value.hint


def test_nothing_listening_is_a_clear_error() -> None:
    from tests.conftest import free_port

    settings = LLMSettings(
        provider="openai",
        openai={"base_url": f"http://127.0.0.1:{free_port()}/v1", "retries": 0},  # type: ignore[arg-type]
    )
    with pytest.raises(UpstreamError, match="could not be reached"):
        create_llm(settings).complete(MESSAGES)  # type: ignore[union-attr]


def test_anthropic_messages_api(fake: FakeLLM) -> None:
    fake.script('{"facts": []}')
    settings = LLMSettings(
        provider="anthropic",
        anthropic={"base_url": fake.base, "api_key": "ak-secret", "model": "claude-x"},  # type: ignore[arg-type]
    )
    llm = create_llm(settings)
    assert llm is not None and llm.complete(MESSAGES, json_output=True) == '{"facts": []}'
    body, headers = fake.requests[0], fake.headers[0]
    assert fake.paths == ["/v1/messages"]
    assert body["system"] == "You answer in JSON."  # the system prompt travels apart
    assert body["messages"] == [{"role": "user", "content": "Say hello."}]
    assert headers["x-api-key"] == "ak-secret" and headers["anthropic-version"]


def test_bedrock_converse_through_boto3(fake: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    fake.script('{"facts": ["a"]}')
    settings = LLMSettings(
        provider="bedrock",
        bedrock={
            "endpoint_url": fake.base,
            "model_id": "anthropic.claude-3-haiku",
            "region": "us-east-1",
        },  # type: ignore[arg-type]
    )
    llm = create_llm(settings)
    assert llm is not None and llm.complete(MESSAGES) == '{"facts": ["a"]}'
    body = fake.requests[0]
    assert fake.paths[0] == "/model/anthropic.claude-3-haiku/converse"
    assert body["system"] == [{"text": "You answer in JSON."}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "Say hello."}]}]
    assert "AWS4-HMAC-SHA256" in fake.headers[0]["Authorization"]  # a real signed request


def test_bedrock_without_boto3_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['boto3'] = None\n"
        "from memoryd.llm import create_llm\n"
        "from memoryd.settings import LLMSettings\n"
        "from memoryd.errors import DependencyMissingError\n"
        "try:\n"
        "    create_llm(LLMSettings(provider='bedrock'))\n"
        "except DependencyMissingError as e:\n"
        "    print(e.hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'memoryd[bedrock]'" in out.stdout, out.stderr
    assert DependencyMissingError.status_code == 500


def test_settings_come_from_the_environment_and_the_key_stays_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memoryd.settings import Settings

    monkeypatch.setenv("MEMORYD_LLM__PROVIDER", "openai")
    monkeypatch.setenv("MEMORYD_LLM__OPENAI__API_KEY", "sk-live-123")
    monkeypatch.setenv("MEMORYD_LLM__OPENAI__MODEL", "gpt-4o-mini")
    s = Settings()
    assert s.llm.provider == "openai" and s.llm.openai.model == "gpt-4o-mini"
    assert "sk-live-123" not in repr(s) and "sk-live-123" not in json.dumps(
        s.model_dump(mode="json")
    )
