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
from typing import Any, Iterable, Optional, Sequence, TypedDict, Union

import pyarrow

from . import _native
from ._native import TcpscopeError

__all__ = [
    "PLOT_KINDS",
    "TABLES",
    "Options",
    "Plot",
    "TcpscopeError",
    "columns",
    "plot",
    "read",
    "schema",
    "screen",
    "series",
]

#: Every table ``read`` can give, in order.
TABLES: tuple = tuple(_native.TABLES)

#: Every kind ``plot`` draws (``tcpscope plot --kind``).
PLOT_KINDS: tuple = tuple(_native.PLOT_KINDS)

Paths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def _paths(path: Paths) -> list:
    if isinstance(path, (str, os.PathLike)):
        return [os.fspath(path)]
    return [os.fspath(p) for p in path]


def _warn(messages: Iterable[str]) -> None:
    for m in messages:
        # stacklevel 3: the caller of read/screen.
        warnings.warn(m, RuntimeWarning, stacklevel=3)


class Options(TypedDict, total=False):
    """The options of a pass: keyword arguments of ``read``, ``screen`` and
    ``tcpscope.dask.analyze``, the command line's flags of the same names (the native module
    holds their one definition and defaults; an unknown one is a ``TypeError``).

    - ``merge`` (``False``): read all paths as one trace in time order (``--merge``).
    - ``start``, ``duration``, ``end`` (``None``): the time window, as ``--from``, ``--for``,
      ``--to`` take it (``"12:06:00"``, ``"+30s"``, ``"@1700000000"``; ``"500ms"``, ``"5m"``).
    - ``wscale`` (``None``): window scale to assume when the handshake was not captured
      (``--wscale``).
    - ``idle_split`` (``240.0``): seconds of silence that split a 4-tuple into two
      connections (``--idle-split``).
    - ``checksums`` (``False``): verify IPv4 header and TCP checksums; a damaged segment is
      counted (``checksum_errors``) and not analysed (``--checksums``).
    - ``conns`` (``[]``: every one): only the rows of these connection ids (``-c``), as
      ``tcpscope conns`` numbers them: across several paths the run's ids (the ``id`` of
      ``connections``), not each trace's ``conn``. Not with ``shard`` (a shard numbers only
      its own connections). An id the run does not have is a ``ValueError``.
    """

    merge: bool
    start: Optional[str]
    duration: Optional[str]
    end: Optional[str]
    wscale: Optional[int]
    idle_split: float
    checksums: bool
    conns: Sequence[int]


def read(
    path: Paths,
    tables: Union[str, Sequence[str]] = TABLES,
    *,
    shard: Optional[tuple] = None,
    **options: Any,
) -> Any:
    """Analyse traces and return their tables.

    Args:
        path: a capture file, a ring directory, or a list of them (each its own trace, as
            on the command line).
        tables: one table name (the result is that ``pyarrow.Table``) or several (the
            result is a dict of name to table): ``connections``, ``events``, ``segments``,
            ``rtt`` (``tcpscope.TABLES``).
        shard: ``(k, n)``: analyse only the connections of shard ``k`` of ``n`` (by 4-tuple
            hash), every file still read in order; the ``n`` shards together hold every
            connection (``tcpscope.dask`` uses this).
        **options: ``merge``, ``start``, ``duration``, ``end``, ``wscale``, ``idle_split``,
            ``checksums``, ``conns`` (``tcpscope.Options``).

    Returns:
        A ``pyarrow.Table``, or a dict of them.

    Raises:
        TcpscopeError: no trace could be read (the message names the file and the byte
            offset).
        ValueError: a bad option (window, table name).
        TypeError: an unknown option.

    A capture damaged part-way gives what was read, with a ``RuntimeWarning`` per damaged
    stretch or read error.
    """
    one = isinstance(tables, str)
    names = [tables] if one else list(tables)
    got, warns = _native.read(_paths(path), names, shard=shard, **options)
    _warn(warns)
    result = dict(got)
    return result[names[0]] if one else result


def screen(path: Paths, **options: Any) -> list:
    """Rank connections by trouble, as ``tcpscope screen --json --all``.

    Returns a list of dicts, most troubled first, with the fields of ``screen --json``
    (``id``, ``severity``, ``verdict``, ``limits``, ``out_of_sequence``, ``events``, ...).
    Options (``tcpscope.Options``) and errors as ``read``.
    """
    text, warns = _native.screen(_paths(path), **options)
    _warn(warns)
    return json.loads(text)


class Plot:
    """An image ``plot`` made: its bytes (``data``, also ``bytes(p)``) and ``format``
    (``"svg"`` or ``"png"``). Jupyter shows it inline (``_repr_svg_``/``_repr_png_``)."""

    def __init__(self, data: bytes, format: str) -> None:
        self.data = data
        self.format = format

    def __bytes__(self) -> bytes:
        return self.data

    def __repr__(self) -> str:
        return f"<tcpscope.Plot {self.format}, {len(self.data)} bytes>"

    def _repr_svg_(self) -> Optional[str]:
        return self.data.decode("utf-8") if self.format == "svg" else None

    def _repr_png_(self) -> Optional[bytes]:
        return self.data if self.format == "png" else None

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the image to ``path``."""
        with open(path, "wb") as f:
            f.write(self.data)


def plot(
    path: Union[str, "os.PathLike[str]"],
    conn: int,
    kind: str = "tsg",
    *,
    dir: Optional[str] = None,
    start: Union[str, float, None] = None,
    end: Union[str, float, None] = None,
    seq_from: Optional[int] = None,
    seq_to: Optional[int] = None,
    abs_seq: bool = False,
    width: int = 1200,
    height: int = 750,
    title: Optional[str] = None,
    wscale: Optional[int] = None,
    window: Optional[float] = None,
    format: str = "svg",
) -> Plot:
    """Plot one connection, as ``tcpscope plot`` does (the same code, the same bytes).

    Args:
        path: a capture file or a ring directory (read whole, as one trace).
        conn: connection id, 1-based, as ``tcpscope conns`` numbers them (the ``conn``
            column of ``read``'s tables for a single file).
        kind: what to draw (``tcpscope.PLOT_KINDS``): ``tsg``, ``rtt``, ``tput``,
            ``flight``, ``ssize``, ``ack``, ``burst``, ``burst-cdf``, ``dupack``, ``ladder``,
            ``states`` (docs/plots.md).
        dir: ``"a2b"`` or ``"b2a"``: whose data is drawn (default: the direction that sent
            the most payload bytes, said in the title).
        start, end: the time axis' limits, as ``plot --from``/``--to`` take them: seconds
            since the connection's first packet (``1.5`` or ``"1.5"``), or an absolute time
            (``"12:06:05.2"``, ``"@1700000000"``; UTC).
        seq_from, seq_to: the sequence axis' limits (relative; absolute with ``abs_seq``).
        width, height: image size in pixels.
        title: the plot's title (default: connection, direction and endpoints).
        wscale: window scale to assume when the handshake was not captured.
        window: ``tput``'s moving-average window, ``dupack``'s counting interval (seconds).
        format: ``"svg"`` or ``"png"``.

    Returns:
        A ``Plot`` (shown inline in Jupyter; ``bytes(p)`` or ``p.save(path)`` for the file).

    Raises:
        TcpscopeError: the trace could not be read, or has no packets of the connection in
            the limits.
        ValueError: a bad option, or a connection the trace does not have (messages name
            the option by its ``tcpscope plot`` flag).
    """
    data, warns = _native.plot(
        os.fspath(path),
        conn,
        kind,
        dir=dir,
        start=_time(start),
        end=_time(end),
        seq_from=seq_from,
        seq_to=seq_to,
        abs_seq=abs_seq,
        width=width,
        height=height,
        title=title,
        wscale=wscale,
        window=window,
        format=format,
    )
    _warn(warns)
    return Plot(data, format)


def _time(t: Union[str, float, None]) -> Optional[str]:
    """A time limit as ``plot --from`` takes it: a number of seconds as its text (``repr``
    keeps every digit of a float), an absolute time as given."""
    if t is None or isinstance(t, str):
        return t
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise TypeError(f"a time must be seconds (a number) or a str, not {type(t).__name__}")
    return repr(float(t))


def series(
    path: Union[str, "os.PathLike[str]"],
    conn: int,
    kind: str = "tsg",
    *,
    dir: Optional[str] = None,
    start: Union[str, float, None] = None,
    end: Union[str, float, None] = None,
    wscale: Optional[int] = None,
    window: Optional[float] = None,
) -> dict:
    """The series a plot of one connection is drawn from, as tables (``tcpscope plot --data``).

    Every point of the connection (or of ``start``/``end``), in the units of ``read``'s
    tables (seconds since the connection's first packet, relative sequence numbers, bytes,
    bits/s, ms): to draw it your own way, or to compute on it.

    Args:
        path: a capture file or a ring directory (read whole, as one trace).
        conn: connection id, 1-based, as ``tcpscope conns`` numbers them.
        kind: which plot's series (``tcpscope.PLOT_KINDS``). The tables of each:
            ``tsg``: ``segments``, ``acks``, ``sacks``, ``notes``; ``rtt``: ``samples``;
            ``tput``: ``packets``, ``rates``; ``flight``: ``points``, ``cwnd``; ``ssize``:
            ``segments``; ``ack``: ``delays``; ``burst`` and ``burst-cdf``: ``packets``,
            ``bins``, ``cdf``; ``dupack``: ``dupacks``, ``rexmits``, ``intervals``;
            ``ladder``: ``segments``; ``states``: ``steps``. Columns:
            docs/json.md, "The series behind the plots".
        dir: ``"a2b"`` or ``"b2a"``: whose data (default: the direction that sent the most
            payload bytes; every table's ``dir`` column says which).
        start, end: the time window, as ``plot``'s (seconds since the connection's first
            packet, ``0.2`` or ``"0.2"``, or an absolute time), both ends included: rows
            with a time in it, cwnd rounds and dup-ACK intervals that overlap it. ``burst``'s
            and ``states``' tables have no time axis and are the whole connection's.
        wscale: window scale to assume when the handshake was not captured.
        window: ``tput``'s moving-average window, ``dupack``'s counting interval (seconds;
            default: the plot's choice, given in the tables' ``window_s``/``interval_s``).

    Returns:
        A dict of table name to ``pyarrow.Table``, in the order above.

    Raises:
        TcpscopeError: the trace could not be read, or has no packets of the connection in
            the window.
        ValueError: a bad option, or a connection the trace does not have.
    """
    got, _dir, warns = _native.series(
        os.fspath(path), conn, kind, dir=dir, start=_time(start), end=_time(end), wscale=wscale, window=window
    )
    _warn(warns)
    return dict(got)


def columns(table: str) -> list:
    """The column names of a table, in order (a stable schema: columns are only added)."""
    return _native.columns(table)


def schema(table: str) -> pyarrow.Schema:
    """The Arrow schema of a table; each field's metadata has its ``unit`` and ``doc``."""
    return _native.table_schema(table)
