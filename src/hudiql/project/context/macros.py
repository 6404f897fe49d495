"""The Jinja side: one environment, the macro library, and macro calls with dbt's ``return()``.

Macros come from the built-in folder ``hudiql/macros`` (materializations, generic tests, helpers)
and then from the project's macro folders, so a project macro of the same name overrides a
built-in one. Every macro is bound to the context it is called from, so a macro sees ``ref``,
``this``, ``adapter`` and every other macro by name, as in dbt. Each macro is compiled as a
template of its own: Jinja binds calls between macros of one template when the file is loaded,
so an override would not reach a built-in macro calling another of its own file.

Example:
    >>> library = MacroLibrary.load([], "shop")  # the built-in macros only
    >>> library.has("materialization_incremental"), library.origin["materialization_table"].package
    (True, 'hudiql')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes as jnodes

from hudiql.project.errors import CompilationError

BUILTIN_MACROS = Path(__file__).resolve().parents[2] / "macros"  # hudiql/macros
BUILTIN_PACKAGE = "hudiql"
#: The package name dbt gives its own macros: ``dbt.date_trunc``, ``adapter.dispatch(name, 'dbt')``;
#: hudiql's built-in macros stand in for it.
DBT_NAMESPACE = "dbt"
#: The adapter types a macro is dispatched for, most specific first, as dbt tries them: hudiql's,
#: its parent Spark's, then dbt's default.
DISPATCH_PREFIXES = ("hudiql", "spark", "default")


class MacroReturn(Exception):
    """Raised by ``return(value)``; the macro call it leaves returns ``value``."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def do_return(value: Any = None) -> None:
    raise MacroReturn(value)


class MacroFunction:
    """A Jinja macro as a callable: returns its ``return()`` value, else its rendered text."""

    def __init__(self, name: str, macro: Any) -> None:
        self.name = name
        self._macro = macro

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._macro(*args, **kwargs)
        except MacroReturn as r:
            return r.value


def make_environment() -> jinja2.Environment:
    # StrictUndefined: a misspelt name is an error, not an empty string in the SQL.
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"],
        keep_trailing_newline=True,
    )


# One ``{% macro %} ... {% endmacro %}`` block (macros in macro files do not nest).
_MACRO_BLOCK = re.compile(r"{%-?\s*macro\s.*?{%-?\s*endmacro\s*-?%}", re.DOTALL)
# dbt's generic test block, ``{% test name(model, column_name) %} ... {% endtest %}``: the macro
# ``test_<name>``, as dbt names it.
_TEST_OPEN = re.compile(r"({%-?\s*)test(\s+)(\w+\s*\()")
_TEST_CLOSE = re.compile(r"({%-?\s*)endtest(\s*-?%})")


def as_macros(source: str) -> str:
    """``source`` with dbt's generic test blocks written as the macros they define (same lines).

    >>> as_macros("{% test even(model, column_name) %}SELECT 1{% endtest %}")
    '{% macro test_even(model, column_name) %}SELECT 1{% endmacro %}'
    """
    return _TEST_CLOSE.sub(r"\1endmacro\2", _TEST_OPEN.sub(r"\1macro\2test_\3", source))


@dataclass
class MacroFile:
    path: Path
    package: str
    templates: dict[str, jinja2.Template]  # macro name -> a template defining only that macro
    blocks: dict[str, str]  # macro name -> its ``{% macro %}`` block as written (the manifest's macro_sql)

    @property
    def names(self) -> list[str]:
        return list(self.templates)


def _sql_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.sql")) if folder.is_dir() else []


class MacroNamespace:
    """One package's macros as attributes, as dbt's namespaces (``dbt.date_trunc(...)``)."""

    def __init__(self, package: str, macros: dict[str, MacroFunction]) -> None:
        self._package = package
        self._macros = macros

    def overridden(self, macros: dict[str, Any]) -> MacroNamespace:
        """This namespace with ``macros`` (name -> callable) in place of its own (a unit test's overrides)."""
        return MacroNamespace(self._package, {**self._macros, **macros})

    def __getattr__(self, name: str) -> MacroFunction | jinja2.StrictUndefined:
        macros = self.__dict__["_macros"]
        if name not in macros:
            if name.startswith("__"):
                raise AttributeError(name)  # Python's and Jinja's own probes
            # ``dbt.x is defined`` is false; a call names what is missing
            return jinja2.StrictUndefined(hint=f"{self.__dict__['_package']} has no macro '{name}'")
        return macros[name]


class Dispatcher:
    """``adapter.dispatch(macro_name, macro_namespace)``, as dbt-core resolves it: the first of
    ``<type>__<macro_name>`` (``DISPATCH_PREFIXES``) in each package searched. Packages: those the
    project's ``dispatch:`` config lists for the namespace, else the project then the namespace
    (``dbt``: hudiql's built-in macros), else (no namespace) every macro, the project's first."""

    def __init__(self, packages: dict[str, dict[str, MacroFunction]], context: Mapping[str, Any], project: str,
                 search_orders: Mapping[str, list[str]]) -> None:
        self._packages = packages
        self._context = context  # every macro by name, the project's winning
        self._project = project
        self._search_orders = search_orders

    def dispatch(self, macro_name: str, macro_namespace: str | None = None, packages: Any = None) -> MacroFunction:
        if packages is not None:
            raise CompilationError("The \"packages\" argument of adapter.dispatch() has been deprecated; "
                                   "use the \"macro_namespace\" argument instead")
        if "." in macro_name:
            namespace, name = macro_name.rsplit(".", 1)
            raise CompilationError(f'In adapter.dispatch, got a macro name of "{macro_name}", but "." is not a valid '
                                   f'macro name component. Did you mean adapter.dispatch("{name}", '
                                   f'macro_namespace="{namespace}")?')
        tried = []
        for package in self._search_order(macro_namespace):
            for prefix in DISPATCH_PREFIXES:
                name = f"{prefix}__{macro_name}"
                tried.append(f"'{package}.{name}'" if package else f"'{name}'")
                found = self._lookup(package, name)
                if found is not None:
                    return found
        raise CompilationError(f"In dispatch: No macro named '{macro_name}' found within namespace: "
                               f"'{macro_namespace}'; searched for: {', '.join(tried)}")

    def _search_order(self, namespace: str | None) -> list[str | None]:
        if namespace is None:
            return [None]
        if namespace in self._search_orders:
            return list(self._search_orders[namespace])
        if namespace in (DBT_NAMESPACE, self._project) or namespace in self._packages:
            return list(dict.fromkeys([self._project, namespace]))
        return [None]

    def _lookup(self, package: str | None, name: str) -> MacroFunction | None:
        if package is None:
            found = self._context.get(name)
            return found if isinstance(found, MacroFunction) else None
        return self._packages.get(BUILTIN_PACKAGE if package == DBT_NAMESPACE else package, {}).get(name)


class JinjaAdapter:
    """``adapter`` in Jinja: ``dispatch`` whenever, and while a node runs, everything the warehouse's
    adapter offers; while the project is parsed, anything else is refused by name."""

    def __init__(self, dispatcher: Dispatcher, adapter: Any = None) -> None:
        self._dispatcher = dispatcher
        self._adapter = adapter

    def dispatch(self, macro_name: str, macro_namespace: str | None = None, packages: Any = None) -> MacroFunction:
        return self._dispatcher.dispatch(macro_name, macro_namespace, packages)

    def __getattr__(self, name: str) -> Any:
        adapter = self.__dict__["_adapter"]
        if adapter is None:
            raise CompilationError(f"adapter.{name} is not available while the project is parsed; "
                                   "guard it with {% if execute %}")
        return getattr(adapter, name)


class MacroLibrary:
    def __init__(self, env: jinja2.Environment, files: list[MacroFile], project: str = "",
                 search_orders: Mapping[str, list[str]] | None = None) -> None:
        self.env = env
        self.files = files
        # name -> the file that defines it; project files come last, so they win.
        self.origin: dict[str, MacroFile] = {name: f for f in files for name in f.names}
        self.project = project
        #: ``dispatch:`` of dbt_project.yml: macro namespace -> the packages ``adapter.dispatch`` searches.
        self.search_orders = dict(search_orders or {})

    @classmethod
    def load(cls, project_macro_dirs: list[Path], project_name: str, root: Path | None = None,
             search_orders: Mapping[str, list[str]] | None = None) -> MacroLibrary:
        env = make_environment()
        files = [cls._read(env, p, BUILTIN_PACKAGE, p.relative_to(BUILTIN_MACROS.parent)) for p in _sql_files(BUILTIN_MACROS)]
        for folder in project_macro_dirs:
            files += [cls._read(env, p, project_name, p.relative_to(root) if root else p) for p in _sql_files(folder)]
        return cls(env, files, project_name, search_orders)

    @staticmethod
    def _read(env: jinja2.Environment, path: Path, package: str, shown: Path) -> MacroFile:
        source = as_macros(path.read_text(encoding="utf-8"))
        templates: dict[str, jinja2.Template] = {}
        blocks: dict[str, str] = {}
        try:
            env.parse(source, name=str(shown))  # syntax errors, with the file's line numbers
            for block in _MACRO_BLOCK.finditer(source):
                text = "\n" * source.count("\n", 0, block.start()) + block.group(0)  # keeps line numbers
                name = next(env.parse(text).find_all(jnodes.Macro)).name
                templates[name] = env.from_string(text)
                blocks[name] = block.group(0)
        except jinja2.TemplateSyntaxError as e:
            raise CompilationError(f"macro file {shown}, line {e.lineno}: {e.message}") from None
        return MacroFile(shown, package, templates, blocks)

    def has(self, name: str) -> bool:
        return name in self.origin

    def bind(self, context: dict[str, Any]) -> None:
        """Add every macro to ``context``, each resolving names in ``context`` when called; and
        ``dbt`` (the built-in macros as dbt's namespace) and ``adapter`` with ``dispatch`` (around
        the warehouse's adapter, when the context has one)."""
        packages: dict[str, dict[str, MacroFunction]] = {}
        for file in self.files:
            for name, template in file.templates.items():
                # shared=True: the module's globals *are* ``context``, so macros see names added later.
                module = template.make_module(vars=context, shared=True)
                context[name] = packages.setdefault(file.package, {})[name] = MacroFunction(name, getattr(module, name))
        context[DBT_NAMESPACE] = MacroNamespace(DBT_NAMESPACE, packages.get(BUILTIN_PACKAGE, {}))
        dispatcher = Dispatcher(packages, context, self.project, self.search_orders)
        context["adapter"] = JinjaAdapter(dispatcher, context.get("adapter"))

    def render(self, text: str, context: Mapping[str, Any], label: str) -> str:
        """Render a model or test body with ``context``; Jinja errors name ``label``."""
        try:
            return self.env.from_string(text).render(context)
        except jinja2.TemplateSyntaxError as e:
            raise CompilationError(f"Compilation Error in {label}, line {e.lineno}: {e.message}") from None
        except jinja2.UndefinedError as e:
            raise CompilationError(f"Compilation Error in {label}: {e.message}") from None
        except MacroReturn:
            raise CompilationError(f"Compilation Error in {label}: return() is for macros, not models") from None
        except jinja2.TemplateError as e:
            raise CompilationError(f"Compilation Error in {label}: {e}") from None

    def call(self, name: str, context: Mapping[str, Any], label: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call macro ``name`` as bound in ``context``; Jinja errors name ``label``."""
        try:
            return context[name](*args, **kwargs)
        except jinja2.UndefinedError as e:
            raise CompilationError(f"Compilation Error in {label} (macro {name}): {e.message}") from None
        except jinja2.TemplateError as e:
            raise CompilationError(f"Compilation Error in {label} (macro {name}): {e}") from None
