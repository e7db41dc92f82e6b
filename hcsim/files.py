"""Input and output files: refuse what must not be written, write atomically, read YAML strictly.

:func:`check_input_file`, :func:`check_output_path` and :func:`check_output_dir` refuse a
path before any work starts, in one line naming it: missing, unreadable or unwritable;
an output that is a directory, device, FIFO or socket (a rename over it would replace
the device itself); an empty path. :func:`check_distinct` refuses two outputs of one
command on the same file, or an output on one of its inputs (through symbolic and hard
links too). :func:`atomic_path`, :func:`atomic_write_text` and :func:`temporary_beside`
write to a temporary file beside the target, created only when the writing starts, and
rename it at the end; :func:`anonymous_file` is a scratch file with no name on disk.
:func:`load_yaml` reads YAML refusing duplicate keys and documents too large
(in characters, or in values once aliases are expanded).

Invariants: a crash or Ctrl-C leaves either the old file or the whole new one, never half
a file, and no temporary file; hcsim only ever replaces regular files. One rule for
every output: missing parent directories are created when the output is written (at the
end of the work, removed again if the write fails). :mod:`hcsim.outputs` writes every
format through this module.
"""

from __future__ import annotations

import os
import signal
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, BinaryIO

from hcsim.errors import HcsimError

__all__ = [
    "check_input_file",
    "check_output_path",
    "check_output_dir",
    "check_distinct",
    "check_outputs",
    "atomic_path",
    "atomic_write_text",
    "temporary_beside",
    "anonymous_file",
    "load_yaml",
    "expanded_size",
    "MAX_YAML_CHARS",
    "MAX_YAML_VALUES",
]

PathLike = str | os.PathLike[str]


def check_input_file(path: PathLike, what: str, valid: str) -> str:
    """Refuse an input that is missing, a directory or unreadable, naming it; return the path as a string.

    ``what`` names the input (e.g. "GraphML file"), ``valid`` says what would do. Root
    passes ``os.access`` for any file, so readability is checked by opening it.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise HcsimError(f"{what} '{path}' is a directory, not a file (valid: {valid})")
    if not os.path.exists(path):
        raise HcsimError(f"{what} '{path}' does not exist (valid: {valid})")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise HcsimError(f"{what} '{path}' cannot be read: {exc.strerror} (valid: {valid})") from None
    return path


def _kind(path: str) -> str | None:
    """What is at ``path`` (symbolic links followed): None if nothing, else 'file', 'directory', 'device', ..."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # under a file: said by _check_creatable
        return None
    except OSError as exc:
        raise HcsimError(f"'{path}' cannot be used: {exc.strerror}") from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _text(path: PathLike | None, what: str, valid: str) -> str:
    """``path`` as a string; an empty one (``-o ''``) is refused by name."""
    text = "" if path is None else os.fspath(path)
    if not text.strip():
        raise HcsimError(f"{what} is empty (valid: {valid})")
    if "\0" in text:
        raise HcsimError(f"{what} {text!r} holds a NUL character (valid: {valid})")
    return text


def _check_creatable(directory: str, what: str, text: str) -> None:
    """``directory`` exists and takes files, or the nearest existing ancestor is a writable directory."""
    d = directory
    while not os.path.lexists(d):
        d = os.path.dirname(d)
    if not os.path.isdir(d):
        raise HcsimError(f"{what} '{text}': '{d}' is not a directory (valid: a path whose parents are directories)")
    if not os.access(d, os.W_OK | os.X_OK):
        raise HcsimError(f"{what} '{text}': directory '{d}' is not writable (valid: a writable path)")


def check_output_path(path: PathLike, what: str = "output") -> str:
    """Refuse an output file hcsim must not write, in one line naming ``what``; return its (real) directory.

    Refused: an empty path; a directory, device, FIFO, socket (also behind a symbolic
    link: the link's target is what gets replaced); an existing file that is read-only;
    a path under a file or an unwritable directory. Missing parent directories are fine:
    :func:`atomic_path` creates them when it writes.
    """
    text = _text(path, what, "a file path")
    real = os.path.realpath(text)
    kind = _kind(text)  # stat follows links, magic ones (/dev/stdout) too
    if kind == "directory":
        raise HcsimError(f"{what} '{text}' is a directory (valid: a file path)")
    if kind not in (None, "file"):
        raise HcsimError(f"{what} '{text}' is a {kind}, not a regular file (valid: a file path; left as it is)")
    if kind == "file" and not os.access(real, os.W_OK):
        raise HcsimError(f"{what} '{text}' is read-only (valid: a writable file path)")
    directory = os.path.dirname(real)
    _check_creatable(directory, what, text)
    return directory


def check_output_dir(path: PathLike, what: str = "--out") -> str:
    """Refuse an output directory hcsim cannot write into, naming ``what``; return its real path.

    It may be missing (created, with its parents, when the outputs are written) or an
    existing writable directory; a file, device, FIFO or socket there is refused.
    """
    text = _text(path, what, "a directory path")
    real = os.path.realpath(text)
    kind = _kind(text)  # stat follows links, magic ones (/dev/stdout) too
    if kind not in (None, "directory"):
        raise HcsimError(
            f"{what} '{text}' is a {kind}, not a directory (valid: a directory to write into, created if missing)"
        )
    _check_creatable(real, what, text)
    return real


def _identity(path: str) -> tuple[str, tuple[int, int] | None]:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return real, None
    return real, (st.st_dev, st.st_ino)


def check_distinct(outputs: Mapping[str, PathLike | None], inputs: Mapping[str, PathLike | None] | None = None) -> None:
    """Refuse two ``outputs`` naming one file, or an output naming one of the ``inputs`` (flag -> path).

    Paths are compared after resolving symbolic links and, for existing files, by device
    and inode (hard links). ``None`` entries (flags not given) are skipped.
    """
    seen: list[tuple[str, str, tuple[str, tuple[int, int] | None]]] = []
    for role, items in (("input", inputs or {}), ("output", outputs)):
        for flag, path in items.items():
            if path is None or not os.fspath(path):
                continue
            ident = _identity(os.fspath(path))
            for other_role, other_flag, other in seen:
                same = ident[0] == other[0] or (ident[1] is not None and ident[1] == other[1])
                if same and role == "output":
                    what = "the input" if other_role == "input" else "the output"
                    raise HcsimError(
                        f"{flag} '{os.fspath(path)}' is the same file as {what} {other_flag} "
                        f"(valid: a different path for each output, none on an input)"
                    )
            seen.append((role, flag, ident))


def _make_parents(directory: str) -> list[str]:
    """Create ``directory`` and its missing parents; return those created, deepest first."""
    created = []
    d = directory
    while not os.path.lexists(d):
        created.append(d)
        d = os.path.dirname(d)
    os.makedirs(directory, exist_ok=True)
    return created


def _remove_directories(created: list[str]) -> None:
    for d in created:
        try:
            os.rmdir(d)
        except OSError:
            break


def temporary_beside(path: PathLike, suffix: str = ".tmp") -> str:
    """A new empty file next to ``path`` (its real target), to be renamed over it when complete.

    The directory must exist (:func:`atomic_path` creates it).
    """
    directory = check_output_path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hcsim-", suffix=suffix, dir=directory)
    except OSError as exc:  # root passes os.access on read-only mounts, /proc and /sys: the create tells
        raise HcsimError(
            f"output '{os.fspath(path)}' cannot be written: {exc.strerror} (valid: a writable path)"
        ) from None
    os.close(fd)
    os.chmod(tmp, 0o644)
    return tmp


@contextmanager
def atomic_path(path: PathLike, suffix: str = ".tmp") -> Iterator[str]:
    """A temporary path beside ``path`` to write; renamed over ``path`` if the block ends normally, else removed.

    Enter it only once the work is done and the bytes are about to be written: the
    temporary file (and any missing parent directory) exists only inside the block.
    ``suffix`` keeps the extension writers look at (e.g. ``".png"`` for matplotlib). A
    symbolic link keeps pointing at the new file (its target is replaced).
    """
    check_output_path(path)
    target = os.path.realpath(os.fspath(path))
    tmp = None
    created: list[str] = []
    done = False
    try:
        with _signals_held():  # a Ctrl-C or SIGTERM lands after ``tmp`` is known, so the finally removes it
            try:
                created = _make_parents(os.path.dirname(target))
            except OSError as exc:
                raise HcsimError(f"output '{os.fspath(path)}' cannot be written: {exc.strerror}") from None
            tmp = temporary_beside(target, suffix)
        yield tmp
        check_output_path(path)  # still a regular file (or nothing) at the moment it is replaced
        os.replace(tmp, target)
        done = True
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if not done:
            _remove_directories(created)


@contextmanager
def anonymous_file(name: str) -> Iterator[tuple[BinaryIO, str]]:
    """A scratch file on no file system: ``(its binary handle, a path that opens it)``, gone at the block's end.

    For what hcsim writes only to hand to SimGrid by path (a compiled platform): on Linux
    it is a ``memfd_create`` file, opened as ``/proc/self/fd/N`` here and in the forked
    simulation process (which inherits the descriptor). No name exists on disk, so even a
    SIGKILL leaves nothing behind: the kernel frees the file with its last descriptor.
    Elsewhere it is ``name`` in a private temporary directory, removed at the block's end.
    Flush the handle before the path is read.
    """
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        f = os.fdopen(os.memfd_create(name), "w+b")
        try:
            yield f, f"/proc/self/fd/{f.fileno()}"
        finally:
            f.close()
        return
    with tempfile.TemporaryDirectory(prefix="hcsim-") as tmp:
        path = os.path.join(tmp, name)
        with open(path, "w+b") as f:
            yield f, path


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (blocked by the OS) until the block ends: it cannot be cut in two."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)


MAX_YAML_CHARS = 32 << 20
"""Longest YAML (or JSON) text :func:`load_yaml` parses: 32 Mi characters (PyYAML reads about 1 MB/s)."""
MAX_YAML_VALUES = 10_000_000
"""Most values a YAML document may hold once its aliases are expanded (a "billion laughs" is refused)."""


def load_yaml(text: str, what: str, max_values: int = MAX_YAML_VALUES, noun: str = "it") -> Any:
    """The YAML document ``text`` (safe types only); a key given twice in one mapping is refused.

    PyYAML keeps the last of two equal keys silently; a spec whose second ``grid:`` hides
    the first would run something else than written, so it is one line naming ``what``,
    the key and both lines. A text longer than :data:`MAX_YAML_CHARS`, or a document
    holding more than ``max_values`` values once its aliases are expanded
    (:func:`expanded_size`; ``noun`` names the document there), is refused in one line. Parse errors propagate as
    :class:`yaml.YAMLError`.
    """
    import yaml

    if len(text) > MAX_YAML_CHARS:
        raise HcsimError(
            f"{what} is {len(text):,} characters long (valid: at most {MAX_YAML_CHARS:,}, {MAX_YAML_CHARS >> 20} Mi)"
        )
    data = yaml.load(text, Loader=_unique_key_loader(what))  # noqa: S506 - a SafeLoader subclass
    expanded_size(data, what, max_values, noun)
    return data


def expanded_size(data: Any, what: str, limit: int, noun: str = "it") -> int:
    """How many values ``data`` holds with every shared (aliased) value counted at each use.

    PyYAML builds an alias as a reference to the anchored object, so a "billion laughs"
    document loads quickly as a small graph but expands to a huge tree when used. This
    counts the tree on the graph (each object once, memoized): linear in what was loaded.
    Raises :class:`HcsimError` naming ``what`` beyond ``limit`` values, for a value that
    contains itself, or for nesting deeper than Python recurses. ``noun`` names the
    document in the messages ("the spec").
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(obj: Any) -> int:
        if not isinstance(obj, (dict, list)):
            return 1
        key = id(obj)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise HcsimError(f"{what}: a YAML alias refers to a value that contains it (valid: no recursive aliases)")
        active.add(key)
        children = [v for kv in obj.items() for v in kv] if isinstance(obj, dict) else obj
        total = 1
        for child in children:
            total += size(child)
            if total > limit:
                break
        active.discard(key)
        sizes[key] = total
        return total

    try:
        total = size(data)
    except RecursionError:
        raise HcsimError(f"{what}: {noun} is nested too deeply (valid: a few levels of mappings and lists)") from None
    if total > limit:
        raise HcsimError(
            f"{what}: {noun} holds more than {limit:,} values once its YAML aliases are expanded "
            "(valid: a file of ordinary size; anchors and aliases that expand to so much are refused)"
        )
    return total


def _unique_key_loader(what: str) -> type:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
        loader.flatten_mapping(node)
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: PyYAML refuses it in its own words
                break
            if first is not None:
                raise HcsimError(
                    f"{what}: duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                    f"(first at line {first + 1}; valid: each key once)"
                )
            seen[key] = key_node.start_mark.line
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return Loader


def check_outputs(
    files: Mapping[str, PathLike | None] | None = None,
    dirs: Mapping[str, PathLike | None] | None = None,
    inputs: Mapping[str, PathLike | None] | None = None,
) -> None:
    """A command's outputs checked before its work starts: each by :func:`check_output_path` (``files``) or
    :func:`check_output_dir` (``dirs``), then all of them by :func:`check_distinct` against each other and
    the ``inputs``. Keys name the flags (``"--csv"``); ``None`` values (flags not given) are skipped, an
    empty string is refused by name.
    """
    files, dirs = dict(files or {}), dict(dirs or {})
    for flag, path in files.items():
        if path is not None:
            check_output_path(path, flag)
    for flag, path in dirs.items():
        if path is not None:
            check_output_dir(path, flag)
    check_distinct({**files, **dirs}, inputs)
