"""The docstring line under each option field, read from the source when asked for.

Options are documented where they are declared (a field, then its docstring line). pydantic's
``use_attribute_docstrings`` would read them too, but at class creation, which costs the CLI
about a tenth of a second of start-up; the web API's schema and the tests read them here instead.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from typing import Any

_DOCS: dict[type, dict[str, str]] = {}


def field_docs(options: type[Any]) -> dict[str, str]:
    """Field name -> the docstring written under it in ``options``' class body."""
    found = _DOCS.get(options)
    if found is None:
        found = _DOCS[options] = _read_docs(options)
    return found


def _read_docs(options: type[Any]) -> dict[str, str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(options)))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def described(options: type[Any]) -> dict[str, str]:
    """Every field's description: its ``Field(description=...)`` or its docstring line (an
    options dataclass: its docstring lines)."""
    docs = field_docs(options)
    if dataclasses.is_dataclass(options):
        return {f.name: docs.get(f.name, "") for f in dataclasses.fields(options)}
    return {
        name: field.description or docs.get(name, "")
        for name, field in options.model_fields.items()
    }
