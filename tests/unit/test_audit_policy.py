"""The policy's ``[audit]`` table: requiring a tamper-evident trail and export, the
collector, and where the events go when a policy and the standard variables both speak."""

from __future__ import annotations

import pytest

from skillward.trust._policyfile import parse_policy
from skillward.trust.audit import AuditRules, audit_export
from skillward.trust.policy import EffectivePolicy, NoPolicy, PolicyLayer


def policy(*texts: str) -> EffectivePolicy:
    kinds = ("admin", "user", "host")
    return EffectivePolicy(
        [PolicyLayer(kinds[i], parse_policy(text, f"p{i}.toml")) for i, text in enumerate(texts)]  # type: ignore[arg-type]
    )


def test_the_audit_table_requires_a_tamper_evident_trail_and_export_to_its_collector() -> None:
    rules = policy(
        "version = 1\n[audit]\nrequire_tamper_evident = true\n"
        'export_endpoint = "https://collector.corp.example:4318"\n'
    ).audit_rules()
    assert rules.tamper_evident is not None
    assert "audit.require_tamper_evident = True in p0.toml:3" in rules.tamper_evident
    assert rules.export is not None
    assert "audit.export_endpoint" in rules.export
    assert rules.endpoint == "https://collector.corp.example:4318"
    assert NoPolicy().audit_rules() == AuditRules()
    assert policy("version = 1\n").audit_rules() == AuditRules()


@pytest.mark.threat("T41")
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('require_tamper_evident = "yes"', "read as true"),
        ("require_export = 1", "read as true"),
        ('export_endpoint = "ftp://collector"', "export is still required"),
        ('export_endpoint = "https://user:secret@collector"', "export is still required"),
        ('export_endpoint = "https://collector/?token=x"', "export is still required"),
    ],
)
def test_a_bad_audit_value_resolves_to_its_strictest_and_says_so(text: str, said: str) -> None:
    effective = policy(f"version = 1\n[audit]\n{text}\n")
    (problem,) = effective.problems
    assert problem.line == 3
    assert said in problem.message
    rules = effective.audit_rules()
    key = text.split(" ", maxsplit=1)[0]
    if key == "require_tamper_evident":
        assert rules.tamper_evident is not None
    else:
        assert rules.export is not None
        assert rules.endpoint is None


@pytest.mark.threat("T62", "T63")
def test_a_later_layer_neither_drops_a_requirement_nor_moves_the_collector() -> None:
    effective = policy(
        "version = 1\n[audit]\nrequire_tamper_evident = true\nrequire_export = true\n"
        'export_endpoint = "https://collector.corp.example"\n',
        "version = 1\n[audit]\nrequire_tamper_evident = false\nrequire_export = false\n"
        'export_endpoint = "https://elsewhere.example"\n',
    )
    rules = effective.audit_rules()
    assert rules.tamper_evident is not None
    assert "p0.toml" in rules.tamper_evident
    assert rules.endpoint == "https://collector.corp.example"
    messages = [p.message for p in effective.problems]
    assert any("require_tamper_evident = False is ignored" in m for m in messages)
    assert any("'https://elsewhere.example' is ignored: events go to" in m for m in messages)


@pytest.mark.threat("T63")
def test_where_events_go_the_policy_first_then_the_standard_variables() -> None:
    required = AuditRules(export="rule", endpoint="https://collector.example:4318")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://local:4318"}
    chosen = audit_export(required, env)
    assert chosen is not None
    assert chosen.logs_url(env) == "https://collector.example:4318/v1/logs"
    assert chosen.required_by == "rule"
    # Required without a collector: the variables name it.
    from_env = audit_export(AuditRules(export="rule"), env)
    assert from_env is not None
    assert from_env.logs_url(env) == "http://local:4318/v1/logs"
    # Asked for by the variables alone; a logs endpoint is used as written.
    asked = audit_export(None, {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://c:4318/custom"})
    assert asked is not None
    assert asked.required_by is None
    assert asked.logs_url({"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://c:4318/custom"}) == (
        "http://c:4318/custom"
    )
    assert audit_export(None, {}) is None
    assert audit_export(None, {**env, "OTEL_SDK_DISABLED": "true"}) is None
    assert audit_export(None, {**env, "OTEL_LOGS_EXPORTER": "none"}) is None
    # A policy's requirement is not turned off by a variable.
    assert audit_export(required, {**env, "OTEL_SDK_DISABLED": "true"}) is not None
