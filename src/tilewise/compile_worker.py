"""A compile worker of :mod:`tilewise.compile_pool`: reads length-prefixed pickled jobs on
stdin, compiles each (``compile_pool.run_job``) and writes the pickled result on what was
stdout; anything the compiled code prints goes to stderr. Exits at the end of its input."""

import os
import sys


def main() -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints from user code must not corrupt the replies
    sys.stdout = sys.stderr
    from tilewise import compile_pool

    inp = sys.stdin.buffer
    while True:
        try:
            job = compile_pool._receive(inp)
        except EOFError:
            return
        compile_pool._send(out, compile_pool.run_job(job))


if __name__ == "__main__":
    main()
