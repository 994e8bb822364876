"""The check every error-corpus test makes: the message and hint, the user's file and the
line marked ``# <-``, a caret, and no internal file name."""


def marked_line(src: str) -> int:
    for i, line in enumerate(src.splitlines(), 1):
        if "# <-" in line:
            return i
    raise ValueError("case without a # <- marker")


def check_error(err, message: str, hint, src: str, file: str) -> None:
    text = str(err)
    assert message in text
    if hint is not None:
        assert hint in (err.hint or "")
    assert err.span is not None and err.span.file == file
    assert err.span.line == marked_line(src), text
    assert f"{file}:{err.span.line}:" in text
    assert "^" in text  # the caret under the source line
    for internal in ("tilewise/", "parser.py", "builtins.py", "Traceback"):
        assert internal not in text
