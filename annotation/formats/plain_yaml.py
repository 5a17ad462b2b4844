"""Plain YAML, read safely: the one reader of YAML trees (golden.yaml and the policy file).

A file is refused before anything is built from it when it holds an anchor or alias (a 300-byte
alias bomb expands to gigabytes), a tag (``!!python/object``), nesting deeper than 64 (PyYAML's
scanner slows down quadratically with depth and its composer recurses) or, for
:func:`read_plain_yaml`, a key given twice in one mapping (YAML keeps the last silently). Every
refusal is one :class:`~annotation.model.FormatError` of the caller's kind naming the line.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from annotation.formats.textio import field_label, read_text_file, refuse_yaml_line_breaks, require_file
from annotation.model import FormatError

__all__ = ["read_plain_yaml", "read_yaml_tree", "construct", "yaml_problem"]


def _line_of(node: yaml.Node) -> int:
    line: int = node.start_mark.line + 1
    return line


_YAML_MAX_DEPTH = 64
_YAML_OPEN = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_YAML_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


# libyaml, where PyYAML was built with it: the same tokens and nodes, about 5x faster
_FAST_LOADER = getattr(yaml, "CSafeLoader", None)


def _compose(
    path: str | os.PathLike[str], text: str, error: type[FormatError], expected: str
) -> yaml.Node | None:
    """The file's node tree, after refusing anchors, aliases, tags and deep nesting.

    libyaml first; on any YAML error the pure-Python loader reads the file again, so that
    the message and line are PyYAML's own whichever was installed."""
    if _FAST_LOADER is not None:
        try:
            _refuse_aliases_and_tags(path, text, _FAST_LOADER, error, expected)
            return yaml.compose(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            pass
    _refuse_aliases_and_tags(path, text, yaml.SafeLoader, error, expected)
    return yaml.compose(text, Loader=yaml.SafeLoader)


def read_plain_yaml(path: str | os.PathLike[str], error: type[FormatError], expected: str) -> Any:
    """A small YAML file read as golden.yaml is (a policy file): a regular file, plain YAML only (no
    anchor, alias or tag: a 300-byte alias bomb is refused before it expands), nested at most 64
    deep, each key once; every refusal one :class:`FormatError` of ``error``'s kind naming the line,
    ``expected`` said after it. Returns the plain Python value (None for an empty document)."""
    root = read_yaml_tree(path, error, expected)
    if root is None:
        return None
    _refuse_repeated_keys(path, root, error)
    return construct(root)


def read_yaml_tree(path: str | os.PathLike[str], error: type[FormatError], expected: str) -> yaml.Node | None:
    """A regular file's YAML node tree (plain YAML only), every refusal one ``error`` naming the line."""
    require_file(path, error)
    text = read_text_file(path, error)
    refuse_yaml_line_breaks(path, text, error)
    try:
        return _compose(path, text, error, expected)
    except yaml.YAMLError as exc:
        raise error(
            path, _yaml_error_line(exc, text), None, f"not valid YAML ({yaml_problem(exc)}); {expected}"
        ) from None
    except RecursionError:
        raise error(path, None, None, f"nested too deeply; {expected}") from None


def _refuse_repeated_keys(path: str | os.PathLike[str], root: yaml.Node, error: type[FormatError]) -> None:
    """A key given twice in one mapping (YAML keeps the last silently): refused, naming both lines."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for knode, vnode in node.value:
                if isinstance(knode, yaml.ScalarNode):
                    if knode.value in seen:
                        raise error(
                            path,
                            _line_of(knode),
                            field_label(knode.value),
                            f"key already given on line {seen[knode.value]}; expected each key once",
                        )
                    seen[knode.value] = _line_of(knode)
                stack.append(vnode)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def construct(node: yaml.Node) -> Any:
    """Plain Python values from a node of the composed tree (safe constructors only)."""
    loader = (_FAST_LOADER or yaml.SafeLoader)("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _refuse_aliases_and_tags(
    path: str | os.PathLike[str],
    text: str,
    loader: Any,
    error: type[FormatError],
    expected: str,
) -> None:
    """Plain YAML only: an anchor, alias or tag (``!!python/object``)
    is refused before anything is built from the file, and so is deep nesting
    (PyYAML's scanner slows down quadratically with depth, its composer recurses)."""
    depth = 0
    for token in yaml.scan(text, Loader=loader):
        line = token.start_mark.line + 1
        if isinstance(token, _YAML_OPEN):
            depth += 1
            if depth > _YAML_MAX_DEPTH:
                raise error(
                    path,
                    line,
                    None,
                    f"nested more than {_YAML_MAX_DEPTH} levels deep; {expected}",
                )
        elif isinstance(token, _YAML_CLOSE):
            depth -= 1
        if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
            sigil = "&" if isinstance(token, yaml.AnchorToken) else "*"
            raise error(
                path,
                line,
                None,
                f"YAML anchor or alias {sigil}{token.value} is not allowed; expected plain YAML, each value written out",
            )
        if isinstance(token, yaml.TagToken):
            handle, suffix = token.value
            raise error(
                path,
                line,
                None,
                f"YAML tag {(handle or '') + suffix} is not allowed; expected plain YAML (no tags)",
            )


def yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    if problem:
        return str(problem)
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def _yaml_error_line(exc: yaml.YAMLError, text: str) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        line: int = mark.line + 1
        return line
    position = getattr(exc, "position", None)  # ReaderError: a character YAML refuses
    if isinstance(position, int):
        return text.count("\n", 0, position) + 1
    return None
