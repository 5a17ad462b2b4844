"""Atomic writing, the one discipline every writer of a file or folder follows: nothing is
written through a symbolic link or over what is not a regular file (:func:`existing_mode`), a new
file is created exclusively under a random name beside its target (:func:`temporary_name`,
:func:`create_exclusive`) and renamed over it (:func:`write_atomic`): a reader never sees half a
file. A file that cannot be written is a :class:`~annotation.model.FormatError` naming its path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from annotation.model import FormatError

__all__ = ["existing_mode", "temporary_name", "create_exclusive", "write_atomic"]


def existing_mode(target: Path, path: str | os.PathLike[str], *, folder: bool = False) -> int | None:
    """The permission bits of what ``target`` names now (None: nothing there), refusing, before
    anything is written, what a writer must not replace: a symbolic link (refused, not resolved:
    the writers never write through a link, so a link planted at an output path cannot send a
    write elsewhere; give the path of the file itself), and anything but a regular file (a
    directory, a device such as /dev/full, a FIFO, a socket), or with ``folder`` anything but
    a directory. Only the last part of the path is looked at, without following it."""
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FormatError(
            path, None, None, f"cannot be written ({exc.strerror}); nothing was written"
        ) from None
    kind = found.st_mode
    expected = "expected a folder (created if missing)" if folder else "expected a writable file path"
    if stat.S_ISLNK(kind):
        raise FormatError(
            path,
            None,
            None,
            "is a symbolic link; refused, nothing was written (a link is never written through: "
            f"give the path of what it points to); {expected}",
        )
    if folder and not stat.S_ISDIR(kind):
        what = "a file" if stat.S_ISREG(kind) else "not a regular file (a device, a FIFO or a socket)"
        raise FormatError(path, None, None, f"is {what}; {expected}")
    if not folder and stat.S_ISDIR(kind):
        raise FormatError(path, None, None, f"is a directory; {expected}")
    if not folder and not stat.S_ISREG(kind):
        raise FormatError(
            path,
            None,
            None,
            "is not a regular file (a device, a FIFO or a socket); refused, nothing was written; "
            "expected a path to a regular file",
        )
    return stat.S_IMODE(kind) & 0o777  # read, write, run: never a set-id bit onto new contents


_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def temporary_name(target: Path, kind: str = "tmp") -> Path:
    """A name beside ``target`` for a file or folder made on the way to it: hidden, with a random
    part (never a name another user can guess and plant a link at)."""
    stem = target.name if len(os.fsencode(target.name)) <= 200 else "denominator"
    return target.with_name(f".{stem}.{random_part()}.{kind}")


def random_part() -> str:
    """16 hex digits from the system's random source (``secrets.token_hex(8)``'s, without importing
    ``secrets``: its ``hmac`` loads OpenSSL, 3 ms of every command's start-up)."""
    return os.urandom(8).hex()


def create_exclusive(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to a new file at ``path``: created exclusively (O_EXCL), never through a link
    (O_NOFOLLOW); FileExistsError if anything is there. ``mode``: its permission bits (else
    0o666 less the umask, as any new file)."""
    fd = os.open(path, _EXCLUSIVE, 0o666)
    with os.fdopen(fd, "wb") as handle:
        if mode is not None:
            os.fchmod(handle.fileno(), mode)
        handle.write(data)


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write to a new file beside ``path`` and rename it over ``path``: a reader never sees half a file.

    Refused before anything is written (:func:`existing_mode`): a symbolic link at ``path`` and
    anything there but a regular file. The new file has a random name in the target's folder and
    is created exclusively, never through a link (:func:`create_exclusive`); a file replaced keeps
    its permission bits. :class:`FormatError` naming the path when it cannot be written."""
    target = Path(path)
    mode = existing_mode(target, path)
    data = text.encode("utf-8")
    for _ in range(100):
        tmp = temporary_name(target)
        try:
            create_exclusive(tmp, data, mode)
        except FileExistsError:
            continue  # a name taken (by chance, or planted): another random one
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise FormatError(
                path, None, None, f"cannot be written ({exc.strerror}); expected a writable file path"
            ) from None
        break
    else:
        raise FormatError(path, None, None, "no free temporary name beside it; nothing was written")
    try:
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise FormatError(
            path, None, None, f"cannot be written ({exc.strerror}); expected a writable file path"
        ) from None
