"""A griffe extension for the API reference (mkdocs.yml loads it).

The docstrings are Google style, written for ``help()`` with two habits of
Sphinx that Markdown does not know, so the rendering adapts to them here
(the source and ``help()`` stay as they are):

* cross-reference roles (``:class:`Replay```, ``:meth:`Client.expire```,
  ``:data:`~samgita_protocol.MAX_DEPTH```) become inline code; a leading
  ``~`` keeps only the last dotted part, as in Sphinx;
* a module or class attribute documented by ``#:`` comment lines right
  above it (``#: Largest message accepted or produced, in bytes.``) gets
  them as its docstring; griffe reads only string docstrings.

And a public constant whose value is computed from private names
(``CAPABILITY_GROUPS``, ``METHODS``: a comprehension over ``_EVENTS``, ...)
is shown with its type but not that expression: it is the implementation,
not the value (``MAX_DEPTH: Final = 32`` keeps its value).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):`(~?)([^`]+)`")
_PRIVATE_NAME = re.compile(r"(?<![\w.])_[A-Za-z]")


def _code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxHabits(griffe.Extension):
    """Roles to inline code, ``#:`` comments to attribute docstrings,
    no values that are expressions over private names."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: dict[str, list[str]] = {}

    def on_instance(self, *, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if isinstance(obj, griffe.Attribute):
            if obj.docstring is None:
                obj.docstring = self._comment(obj, agent)
            if obj.value is not None and _PRIVATE_NAME.search(str(obj.value)):
                obj.value = None
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_code, obj.docstring.value)

    def _comment(self, obj: griffe.Attribute, agent: Any) -> griffe.Docstring | None:
        code = getattr(agent, "code", None)  # the static visitor's source
        if not isinstance(code, str) or not obj.lineno:
            return None
        lines = self._lines.setdefault(str(obj.filepath), code.splitlines())
        found: list[str] = []
        n = obj.lineno - 2  # the line above the assignment, 0-based
        while n >= 0 and lines[n].lstrip().startswith("#:"):
            found.insert(0, lines[n].lstrip()[2:].strip())
            n -= 1
        if not found:
            return None
        return griffe.Docstring(
            "\n".join(found),
            lineno=n + 2,
            endlineno=obj.lineno - 1,
            parent=obj,
            parser=agent.docstring_parser,
            parser_options=agent.docstring_options,
        )
