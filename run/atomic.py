"""Writing a file so that a kill at any moment leaves the old file or the whole new one, never a torn one."""
from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(f)`` on a temporary file beside ``path``, flush it to disk, then rename it over ``path``.

    The file gets the permissions a plain ``open(path, "wb")`` would give a new file (0o666 less
    the umask), not ``tempfile.mkstemp``'s owner-only 0o600, so others may read a run as before."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f"{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the kernel applies the umask
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """``atomic_write`` of a UTF-8 text."""
    atomic_write(path, lambda f: f.write(text.encode()))


def check_writable(path: Path, folder: bool = False) -> None:
    """Raise ``ValueError`` now, before any long work, if ``path`` (a file, or with ``folder`` a
    folder, made if missing) could not be written later."""
    path = Path(path)
    if path.exists() and path.is_dir() != folder:
        raise ValueError(f"{path} is {'a file' if folder else 'a folder'}; expected {'a folder' if folder else 'a file path'}")
    existing = path if folder and path.exists() else path.parent
    while not existing.exists():  # a folder that would be made: the first existing ancestor decides
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"cannot write {path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write {path}: no write permission in {existing}")
