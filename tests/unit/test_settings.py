"""The service settings, each declared once (services/common/settings.py): its variable, type, default, check, help
and ``mfscore serve`` flag. What is derived from the declarations is held to them: ``Settings.from_env`` reads every
variable, every check refuses the values it declares as bad with a sentence naming the variable, the ``serve`` flags
are the declared ones and override their variables, and docs/settings-reference.md is what
``python -m mfscore.services.common.settings_doc`` writes."""

from __future__ import annotations

import dataclasses
import re
import typing

import pytest

from mfscore.errors import OptionError
from mfscore.services.common import settings_doc
from mfscore.services.common.settings import ENV_VARS, SECRET_FIELDS, Settings, fields, flags, value_type

SETTINGS = fields()
CHECKED = [(f, bad) for f in SETTINGS if f.metadata["check"] for bad in f.metadata["check"].bad]


def test_each_setting_declares_one_variable_and_at_most_one_flag():
    variables = [f.metadata["env"] for f in SETTINGS]
    assert len(set(variables)) == len(variables) and all(re.fullmatch(r"MFSCORE_[A-Z0-9_]+", v) for v in variables)
    assert ENV_VARS == {f.name: f.metadata["env"] for f in SETTINGS}
    assert all(f.metadata["help"] for f in SETTINGS), "every setting says what it does (the settings reference)"
    given = [f.metadata["flag"] for f in flags()]
    assert len(set(given)) == len(given) and all(re.fullmatch(r"--[a-z0-9-]+", flag) for flag in given)
    for f in flags():
        assert f.metadata["env"] in f.metadata["flag_help"], f"{f.metadata['flag']}'s help names its variable"


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda f: f.name)
def test_from_env_reads_the_variable(setting):
    value = "7" if value_type(setting) is int else "http://example.org:9000"
    if setting.metadata["check"] and setting.metadata["check"].problem(7):
        value = {"stream_storage": "memory", "log_format": "json"}[setting.name]
    read = getattr(Settings.from_env({setting.metadata["env"]: f" {value} " if value == "7" else value}), setting.name)
    assert read == (7 if value == "7" else value)
    assert getattr(Settings.from_env({setting.metadata["env"]: ""}), setting.name) == getattr(Settings(), setting.name)


@pytest.mark.parametrize(("setting", "bad"), CHECKED, ids=[f"{f.name}={bad}" for f, bad in CHECKED])
def test_a_value_its_check_declares_bad_is_refused_naming_the_variable(setting, bad):
    var = setting.metadata["env"]
    with pytest.raises(OptionError) as refused:
        Settings.from_env({var: str(bad)})
    shown = repr(bad) if isinstance(bad, str) else str(bad)
    assert str(refused.value) == f"{var} must be {setting.metadata['check'].text}, not {shown}"
    with pytest.raises(OptionError, match=re.escape(var)):
        Settings(**{setting.name: bad})


def test_the_refusals_are_worded_as_before():
    cases = {"MFSCORE_GRPC_PORT": ("70000", "MFSCORE_GRPC_PORT must be a port number from 0 to 65535, not 70000"),
             "MFSCORE_MAX_DELIVER": ("0", "MFSCORE_MAX_DELIVER must be at least 1, not 0"),
             "MFSCORE_MAX_FINDINGS": ("0", "MFSCORE_MAX_FINDINGS must be from 1 to 1000000, not 0"),
             "MFSCORE_LOG_FORMAT": ("xml", "MFSCORE_LOG_FORMAT must be one of text, json, not 'xml'"),
             "MFSCORE_STREAM_MAX_AGE": ("-1", "MFSCORE_STREAM_MAX_AGE must be at least 0, not -1"),
             "MFSCORE_STREAM_MAX_BYTES": ("0", "MFSCORE_STREAM_MAX_BYTES must be -1 (no limit) or a positive number "
                                               "of bytes, not 0"),
             "MFSCORE_JOB_SECONDS": ("-1", "MFSCORE_JOB_SECONDS must be at least 0 (0: no limit), not -1"),
             "MFSCORE_POOL_MIN_TRIALS": ("-1", "MFSCORE_POOL_MIN_TRIALS must be at least 0, not -1"),
             "MFSCORE_ACK_WAIT": ("ten", "MFSCORE_ACK_WAIT must be an integer, not 'ten'"),
             "MFSCORE_S3_ENDPOINT": ("ftp://minio:9000", "the S3 endpoint 'ftp://minio:9000' (MFSCORE_S3_ENDPOINT) "
                                                         "must be host:port or http(s)://host:port")}
    for var, (value, message) in cases.items():
        with pytest.raises(OptionError) as refused:
            Settings.from_env({var: value})
        assert str(refused.value) == message


def test_the_defaults_pass_their_checks_and_overrides_win():
    Settings()
    assert Settings.from_env({"MFSCORE_MAX_DELIVER": "7"}, max_deliver=2).max_deliver == 2
    with pytest.raises(TypeError, match="unknown settings: no_such"):
        Settings.from_env({}, no_such=1)


def test_secrets_are_declared_and_redacted():
    assert set(SECRET_FIELDS) == {"s3_secret_key", "token", "nats_password"}
    shown = repr(Settings(**dict.fromkeys(SECRET_FIELDS, "hunter2")).redacted())
    assert "hunter2" not in shown and shown.count("'***'") == len(SECRET_FIELDS)


def test_the_server_maxima_are_the_run_limits():
    from mfscore import tasks
    from mfscore.options import fields_of

    def limits(kind) -> set[str]:
        names = set()
        for f, hint in fields_of(kind):
            names |= {f.metadata["limit"]} if f.metadata.get("limit") else set()
            for nested in (*typing.get_args(hint), hint):
                names |= limits(nested) if dataclasses.is_dataclass(nested) else set()
        return names

    declared = set().union(*(limits(tasks.get(name).options_type) for name in tasks.names()))
    assert set(Settings().option_limits) == declared, "a resource option's `limit` is a setting declared run_limit"


def test_the_serve_flags_are_the_declared_ones_and_override_their_variables(monkeypatch):
    from mfscore.cli.main import build_parser
    from mfscore.services.commands.serve import _settings

    parser = build_parser()
    serve = next(action for action in parser._actions if action.dest == "command").choices["serve"]
    declared = {f.metadata["flag"]: f.metadata["flag_help"] for f in flags()}
    offered = {a.option_strings[-1]: a.help for a in serve._actions if a.option_strings and a.dest in ENV_VARS}
    assert offered == declared
    monkeypatch.setenv("MFSCORE_GRPC_PORT", "1234")
    monkeypatch.setenv("MFSCORE_BUCKET", "from-env")
    settings = _settings(parser.parse_args(["serve", "validator", "--grpc-port", "5678", "--work-dir", "/w"]))
    assert (settings.grpc_port, settings.work_dir, settings.bucket) == (5678, "/w", "from-env")


def test_the_settings_reference_is_current():
    assert settings_doc.DEFAULT_PATH.read_text() == settings_doc.render(), \
        "docs/settings-reference.md is stale: run python -m mfscore.services.common.settings_doc"
    page = settings_doc.render()
    for f in SETTINGS:
        assert f"| `{f.metadata['env']}` |" in page
