"""The stdio link to a real `codex app-server`: an asyncio subprocess speaking JSON lines.

Started explicitly by the caller with the binary path, ``CODEX_HOME`` and
arguments; nothing is discovered or started at import.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from ._checks import check_line, check_positive_int, wrong_type

__all__ = ["CodexStdio"]

#: Longest accepted line from Codex (a thread with many turns is large; this
#: bounds memory, a longer line fails the link).
DEFAULT_MAX_LINE_BYTES: Final = 16 * 1024 * 1024

#: Seconds to wait for app-server to exit after its stdin closes.
_EXIT_GRACE: Final = 5.0


class CodexStdio:
    """``codex app-server`` over stdio. Use :meth:`start`, then :meth:`send` / :meth:`readline`."""

    def __init__(self, *, process: asyncio.subprocess.Process) -> None:
        self._process = process

    @classmethod
    async def start(
        cls,
        *,
        binary: Path | str,
        codex_home: Path | str,
        args: Sequence[str] = (),
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> CodexStdio:
        """Start ``binary app-server *args`` with ``CODEX_HOME=codex_home``.

        ``env`` (default: only ``PATH`` and ``HOME`` of this process) is the
        child's whole environment besides ``CODEX_HOME``. The child runs in
        its own process group so :meth:`close` also ends the native binary
        behind the npm wrapper.

        Raises:
            OSError: the binary cannot be started.
            TypeError, ValueError: a bad argument (the message names it):
                ``binary``, ``codex_home`` or ``cwd`` not a path or string,
                ``args`` not a sequence of strings, ``env`` not a mapping
                of strings, ``max_line_bytes`` not a positive ``int``.
        """
        _check_path("binary", binary)
        _check_path("codex_home", codex_home)
        if cwd is not None:
            _check_path("cwd", cwd)
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
            raise wrong_type("args", args, "a sequence of strings")
        if not all(isinstance(arg, str) for arg in args):
            raise wrong_type("args", args, "a sequence of strings")
        if env is not None and (
            not isinstance(env, Mapping)
            or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items()
            )
        ):
            raise wrong_type("env", env, "a mapping of strings to strings")
        check_positive_int("max_line_bytes", max_line_bytes)
        base = (
            dict(env)
            if env is not None
            else {key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ}
        )
        base["CODEX_HOME"] = str(codex_home)
        process = await asyncio.create_subprocess_exec(
            str(binary),
            "app-server",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=base,
            cwd=None if cwd is None else str(cwd),
            limit=max_line_bytes,
            start_new_session=True,
        )
        return cls(process=process)

    @property
    def pid(self) -> int:
        """The wrapper process id (its process group holds the app-server)."""
        return self._process.pid

    async def send(self, line: bytes) -> None:
        """Write one newline-terminated JSON line.

        Raises:
            ConnectionError: the process closed its stdin.
            TypeError: ``line`` is not bytes.
        """
        line = bytes(check_line("line", line))
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(line if line.endswith(b"\n") else line + b"\n")
        await stdin.drain()

    async def readline(self) -> bytes | None:
        """The next line from Codex (without the newline), or None at end of output.

        Raises:
            ValueError: a line longer than ``max_line_bytes``.
        """
        stdout = self._process.stdout
        assert stdout is not None
        line = await stdout.readline()
        return line.rstrip(b"\n") if line else None

    async def kill(self) -> None:
        """End the process group at once (a cut link, as a crash would)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        await self._process.wait()

    async def close(self) -> None:
        """Close stdin, wait briefly for app-server to exit, then kill its group."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), _EXIT_GRACE)
        except TimeoutError:
            await self.kill()


def _check_path(name: str, value: object) -> None:
    if not isinstance(value, (str, Path)):
        raise wrong_type(name, value, "a path (str or pathlib.Path)")
