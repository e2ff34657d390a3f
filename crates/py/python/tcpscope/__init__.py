"""tcpscope: TCP trace analysis as Arrow tables.

One streaming pass of tcpscope's engine over packet captures (pcap, pcapng; plain, .gz or
.zst; or a ring directory of them), its results as ``pyarrow.Table``s handed over without a
copy (the Arrow C data interface)::

    import tcpscope
    t = tcpscope.read("trace.pcap")                   # {"connections": Table, "events": ...}
    t["connections"].to_pandas().nlargest(10, "rexmit_packets")

The tables and their columns are documented in the project's ``docs/json.md`` ("Arrow and
Parquet"); the walk-through is ``docs/python.md``. ``tcpscope.dask`` runs the same pass over
many files or rings on a Dask cluster.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Iterable, Optional, Sequence, Union

import pyarrow

from . import _native
from ._native import TcpscopeError

__all__ = ["TABLES", "TcpscopeError", "columns", "read", "schema", "screen"]

#: Every table ``read`` can give, in order.
TABLES: tuple = tuple(_native.TABLES)

Paths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def _paths(path: Paths) -> list:
    if isinstance(path, (str, os.PathLike)):
        return [os.fspath(path)]
    return [os.fspath(p) for p in path]


def _warn(messages: Iterable[str]) -> None:
    for m in messages:
        # stacklevel 3: the caller of read/screen.
        warnings.warn(m, RuntimeWarning, stacklevel=3)


def read(
    path: Paths,
    tables: Union[str, Sequence[str]] = TABLES,
    *,
    merge: bool = False,
    start: Optional[str] = None,
    duration: Optional[str] = None,
    end: Optional[str] = None,
    wscale: Optional[int] = None,
    idle_split: float = 240.0,
    shard: Optional[tuple] = None,
) -> Any:
    """Analyse traces and return their tables.

    Args:
        path: a capture file, a ring directory, or a list of them (each its own trace, as
            on the command line).
        tables: one table name (the result is that ``pyarrow.Table``) or several (the
            result is a dict of name to table): ``connections``, ``events``, ``segments``,
            ``rtt`` (``tcpscope.TABLES``).
        merge: read all paths as one trace in time order (``--merge``).
        start, duration, end: the time window, as ``--from``, ``--for``, ``--to`` take it
            (``"12:06:00"``, ``"+30s"``, ``"@1700000000"``; ``"500ms"``, ``"5m"``).
        wscale: window scale to assume when the handshake was not captured (``--wscale``).
        idle_split: seconds of silence that split a 4-tuple into two connections.
        shard: ``(k, n)``: analyse only the connections of shard ``k`` of ``n`` (by 4-tuple
            hash), every file still read in order; the ``n`` shards together hold every
            connection (``tcpscope.dask`` uses this).

    Returns:
        A ``pyarrow.Table``, or a dict of them.

    Raises:
        TcpscopeError: no trace could be read (the message names the file and the byte
            offset).
        ValueError: a bad option (window, table name).

    A capture damaged part-way gives what was read, with a ``RuntimeWarning`` per damaged
    stretch or read error.
    """
    one = isinstance(tables, str)
    names = [tables] if one else list(tables)
    got, warns = _native.read(
        _paths(path),
        names,
        merge=merge,
        start=start,
        duration=duration,
        end=end,
        wscale=wscale,
        idle_split=idle_split,
        shard=shard,
    )
    _warn(warns)
    result = dict(got)
    return result[names[0]] if one else result


def screen(
    path: Paths,
    *,
    merge: bool = False,
    start: Optional[str] = None,
    duration: Optional[str] = None,
    end: Optional[str] = None,
    wscale: Optional[int] = None,
    idle_split: float = 240.0,
) -> list:
    """Rank connections by trouble, as ``tcpscope screen --json --all``.

    Returns a list of dicts, most troubled first, with the fields of ``screen --json``
    (``id``, ``severity``, ``verdict``, ``limits``, ``out_of_sequence``, ``events``, ...).
    Options and errors as ``read``.
    """
    text, warns = _native.screen(
        _paths(path), merge=merge, start=start, duration=duration, end=end, wscale=wscale, idle_split=idle_split
    )
    _warn(warns)
    return json.loads(text)


def columns(table: str) -> list:
    """The column names of a table, in order (a stable schema: columns are only added)."""
    return _native.columns(table)


def schema(table: str) -> pyarrow.Schema:
    """The Arrow schema of a table; each field's metadata has its ``unit`` and ``doc``."""
    return _native.table_schema(table)
