"""YAML files with Jinja in their string values: ``env_var('X', 'default')`` and ``var('k')``.

Only values are rendered, one string at a time, as dbt does; a value that renders to a number or
a boolean keeps that type (``threads: "{{ env_var('THREADS', 4) }}"`` is the int 4).

Example:
    >>> render_values({"warehouse": "{{ env_var('WH', '/tmp/wh') }}"}, {})
    {'warehouse': '/tmp/wh'}
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2
import yaml

from hudiql.project.errors import ProjectError

_MISSING = object()


def env_var(name: str, default: Any = _MISSING) -> str:
    """The environment variable ``name``; without it, ``default``, else an error."""
    if name in os.environ:
        return os.environ[name]
    if default is _MISSING:
        raise ProjectError(f"environment variable '{name}' is not set and env_var('{name}') has no default")
    return str(default)


def read_yaml(path: Path) -> Any:
    """A YAML file's content; a syntax error names the file and line."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ProjectError(f"{path} is not valid YAML: {e}") from None
    except OSError as e:
        raise ProjectError(f"cannot read {path}: {e.strerror}") from None


#: Configs rendered when their node runs (a hook names ``this``), not when the project loads, as in dbt.
RUNTIME_KEYS = ("pre-hook", "post-hook", "pre_hook", "post_hook")


def render_values(value: Any, functions: Mapping[str, Callable[..., Any]], where: str = "") -> Any:
    """``value`` with every string that holds Jinja rendered; dicts and lists recursively (hooks
    stay as written: ``RUNTIME_KEYS``)."""
    if isinstance(value, dict):
        return {k: v if str(k).lstrip("+") in RUNTIME_KEYS else render_values(v, functions, f"{where}.{k}" if where else str(k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [render_values(v, functions, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
        return value
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    try:
        text = env.from_string(value).render(env_var=env_var, **functions)
    except jinja2.TemplateError as e:
        raise ProjectError(f"cannot render '{value}' at {where}: {e}") from None
    # A rendered number or boolean keeps its YAML type, as dbt does for e.g. threads.
    parsed = yaml.safe_load(text) if text.strip() else text
    return parsed if isinstance(parsed, (int, float, bool)) else text
