"""The committed schema, field reference and fixtures are what the code generates now."""

from __future__ import annotations

import json

from reportgen.contract import schema_doc
from reportgen.contract.events import EVENT_MODELS
from tests.conftest import FIXTURES, REPO
from tests.logbuilder import render_fixtures


def test_json_schema_is_current() -> None:
    committed = schema_doc.SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == schema_doc.render_schema(), "run: python -m reportgen.contract.schema_doc"


def test_field_reference_is_current() -> None:
    committed = schema_doc.DOC_PATH.read_text(encoding="utf-8")
    assert committed == schema_doc.render_doc(REPO), "run: python -m reportgen.contract.schema_doc"


def test_reference_documents_every_kind_with_an_example() -> None:
    doc = schema_doc.DOC_PATH.read_text(encoding="utf-8")
    for kind in EVENT_MODELS:
        section = doc.split(f"### `{kind}`", 1)[1].split("### ", 1)[0]
        assert "| field | type | required | meaning |" in section
        assert "Example:" in section, f"{kind} has no example in the fixture log"


def test_schema_names_every_kind() -> None:
    schema = json.loads(schema_doc.SCHEMA_PATH.read_text(encoding="utf-8"))
    kinds = set(schema["discriminator"]["mapping"])
    assert kinds == set(EVENT_MODELS)


def test_fixtures_are_current() -> None:
    for name, text in render_fixtures().items():
        assert (FIXTURES / name).read_text(encoding="utf-8") == text, f"run: python tests/logbuilder.py ({name})"
