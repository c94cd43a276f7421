"""No function in ``src/`` over `MAX_FUNCTION_LINES` lines without a comment saying why.

A function's length runs from its ``def`` (decorators excluded) to its last line, docstring
included. One that is longer says why in a comment (or its docstring) holding the words of
`WHY_MARK`, e.g. ``# over 80 lines: one generator, its draws in the paper's order``.

Run as a script (``python tests/test_function_length.py``) to list the offenders.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "dlsched"
MAX_FUNCTION_LINES = 80
WHY_MARK = "80 lines"


def _comment_lines(text: str) -> dict[int, str]:
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string
    return comments


def long_in(text: str) -> dict[str, int]:
    """Function name → lines, for each function of ``text`` over the limit that does not say
    why (in a comment from the line above its ``def`` to its end, or in its docstring)."""
    comments = _comment_lines(text)
    found = {}
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        end = node.end_lineno or node.lineno
        lines = end - node.lineno + 1
        if lines <= MAX_FUNCTION_LINES:
            continue
        said = [comments.get(n, "") for n in range(node.lineno - 1, end + 1)]
        said.append(ast.get_docstring(node) or "")
        if not any(WHY_MARK in s for s in said):
            found[node.name] = lines
    return found


def long_functions() -> dict[str, int]:
    """``path:function`` → lines, for every function in ``src/`` over the limit that does not
    say why."""
    return {
        f"{path.relative_to(SRC.parent)}:{name}": lines
        for path in sorted(SRC.rglob("*.py"))
        for name, lines in long_in(path.read_text()).items()
    }


def test_no_long_function_without_a_reason() -> None:
    assert long_functions() == {}


def test_the_check_sees_a_long_function_and_its_reason() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert long_in(f"def f() -> None:\n{body}") == {"f": MAX_FUNCTION_LINES + 1}
    said = f"def f() -> None:\n    # over {WHY_MARK}: one table, row by row\n{body}"
    assert long_in(said) == {}
    assert long_in(f"def f() -> None:\n{body[: -len(body.splitlines()[-1]) - 1]}") == {}


if __name__ == "__main__":
    for name, lines in sorted(long_functions().items(), key=lambda kv: -kv[1]):
        print(f"{lines:4d}  {name}")
