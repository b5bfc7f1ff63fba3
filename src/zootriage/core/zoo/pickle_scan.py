"""A static allow-list scan of a pickle: which globals it would import, without unpickling it.

Unpickling runs code exactly where a pickle names a callable (``GLOBAL``/``STACK_GLOBAL``, then
``REDUCE``/``NEWOBJ``/``BUILD`` on it) or an extension code (``EXT*``), or builds an instance from a
class named inline (``INST``/``OBJ``). So a pickle whose every named global is on the allow-list below
(tensor rebuild functions, storage classes, dtypes, ``OrderedDict``) and that has no ``INST``/``OBJ``/
``EXT*`` opcode can only build tensors and plain containers. ``STACK_GLOBAL`` takes its names from the
stack: the scan follows string pushes and the memo, and refuses a ``STACK_GLOBAL`` whose names it
cannot see as two string literals.

The scan reads bytes in memory, never a file: ``pickletools`` reads an opcode's argument with
``read(n)`` for the length ``n`` the pickle itself declares (up to 2**63 for ``BINBYTES8``,
``BINUNICODE8`` and ``BYTEARRAY8``; 2**31 or 2**32 for ``BINSTRING``, ``BINBYTES``, ``BINUNICODE`` and
``LONG4``), and a file object allocates ``n`` bytes before it finds the file shorter (``MemoryError``
for 2**62), where an in-memory buffer returns only what it holds. So the caller bounds the bytes it
passes (``core.zoo.archive_check`` passes at most its pickle limit) and every declared length is
bounded by them: one that runs past them is a pickle that ends early.
"""

from __future__ import annotations

import io
import pickletools
from collections import deque

_DTYPES = (
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
    "complex64", "complex128",
)
_STORAGES = (
    "DoubleStorage", "FloatStorage", "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage",
    "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage", "ComplexFloatStorage",
    "ComplexDoubleStorage", "UntypedStorage",
)
ALLOWED_GLOBALS = frozenset(
    {
        ("collections", "OrderedDict"),
        ("torch._utils", "_rebuild_tensor"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("torch._utils", "_rebuild_tensor_v3"),
        ("torch._utils", "_rebuild_parameter"),
        ("torch._utils", "_rebuild_parameter_with_state"),
        ("torch._tensor", "_rebuild_from_type_v2"),
        ("torch.nn.parameter", "Parameter"),
        ("_codecs", "encode"),  # how protocol 2 spells a bytes literal
        ("torch", "Size"),
    }
    | {("torch", name) for name in _STORAGES + _DTYPES}
)
_FORBIDDEN_OPS = frozenset({"INST", "OBJ", "EXT1", "EXT2", "EXT4"})
_STRING_OPS = frozenset(
    {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
)
_PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
# Memo entries a pickle may make: torch's pickles make a few per tensor (a large state_dict some
# thousands); every entry costs the scan ~250 bytes, so a 64 MiB pickle of nothing but MEMOIZE
# opcodes would otherwise hold GiBs of it.
MAX_MEMO = 1 << 17
_GET_OPS = frozenset({"GET", "BINGET", "LONG_BINGET"})


class PickleRefused(Exception):
    """The pickle names a global outside the allow-list, or uses an opcode that runs code."""


class PickleMalformed(Exception):
    """The bytes are not one complete pickle."""


class PickleIncomplete(PickleMalformed):
    """The bytes end before the pickle's ``STOP``, or before the end of a length one of its opcodes
    declares: the pickle is cut short, or (when the caller passed only the first bytes of a longer
    file) longer than those bytes."""


def scan_pickle(data: bytes) -> int:
    """The length of the pickle that starts ``data`` (up to and including its ``STOP``); raises
    ``PickleRefused`` naming the first global (or opcode) that is not allowed.

    Bytes after the ``STOP`` are not read, so consecutive pickles (torch's legacy format) are scanned
    by calling this once per pickle, each time on the bytes that follow the previous one.
    """
    stream = io.BytesIO(data)
    recent: deque[str | None] = deque(maxlen=2)  # all STACK_GLOBAL looks at
    memo: dict[int, str | None] = {}  # every key, as the unpickler's (MEMOIZE's index is its length)
    try:
        for opcode, arg, _pos in pickletools.genops(stream):
            name = opcode.name
            if name in _FORBIDDEN_OPS:
                raise PickleRefused(f"opcode {name} builds an object from a class named inline")
            if name in _PUT_OPS or name == "MEMOIZE":
                if len(memo) >= MAX_MEMO:
                    raise PickleMalformed(f"it memoises more than {MAX_MEMO} objects (torch's never do)")
                memo[int(str(arg)) if name in _PUT_OPS else len(memo)] = recent[-1] if recent else None
            elif name in _STRING_OPS:
                recent.append(arg if isinstance(arg, str) else None)
            elif name in _GET_OPS:
                recent.append(memo.get(int(str(arg))))
            elif name == "GLOBAL":
                module, _, qualname = str(arg).partition(" ")
                _check_global(module, qualname)
                recent.append(None)
            elif name == "STACK_GLOBAL":
                if len(recent) < 2 or recent[-2] is None or recent[-1] is None:
                    raise PickleRefused("STACK_GLOBAL with names that are not string literals")
                _check_global(str(recent[-2]), str(recent[-1]))
                recent.append(None)
            else:
                recent.append(None)
    except (PickleRefused, PickleMalformed):
        raise
    except (ValueError, EOFError) as exc:  # genops' own errors: a bad opcode or bytes that end early
        if stream.tell() >= len(data):  # it read to the end of the bytes and wanted more
            raise PickleIncomplete(str(exc)) from exc
        raise PickleMalformed(str(exc)) from exc
    return stream.tell()


def _check_global(module: str, qualname: str) -> None:
    if (module, qualname) not in ALLOWED_GLOBALS:
        raise PickleRefused(f"it imports {module}.{qualname}")
