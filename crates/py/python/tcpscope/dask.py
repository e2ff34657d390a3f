"""tcpscope on a Dask cluster: many traces or capture rings, analysed in parallel.

The plan (docs/scale.md): each input (a file, or a ring directory read as one trace in time
order) is split into ``shards`` tasks by 4-tuple hash. Every task reads all of its input's
files in time order but analyses only the connections of its shard, so a connection that
crosses from one ring file into the next is analysed whole, by one task, exactly as on one
machine; no state is handed between tasks and nothing but the result rows is moved. The
same plan runs on Ray or Spark: a task is one call of ``tcpscope.read(input, shard=(k, n))``.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

import pandas as pd

import tcpscope

__all__ = ["analyze", "task"]


def task(spec: tuple) -> pd.DataFrame:
    """One task of the plan: ``(input, k, n, table, options)`` → that shard's rows as pandas,
    with a ``shard`` column (``conn`` numbers the connections within the shard)."""
    path, k, n, table, options = spec
    t = tcpscope.read(path, table, shard=(k, n) if n > 1 else None, **options)
    df = t.to_pandas()
    df.insert(2, "shard", k)
    return df


def _meta(table: str) -> pd.DataFrame:
    df = tcpscope.schema(table).empty_table().to_pandas()
    df.insert(2, "shard", pd.Series([], dtype="int64"))
    return df


def analyze(
    paths_or_ring_dirs: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]],
    client=None,
    *,
    table: str = "connections",
    shards: Optional[int] = None,
    **options,
):
    """A Dask DataFrame of one table (``connections`` by default; ``events``, ``segments``,
    ``rtt``) over many traces.

    Args:
        paths_or_ring_dirs: capture files and ring directories; each is one trace.
        client: a ``dask.distributed.Client``; the result is persisted on it. Without one,
            the DataFrame is lazy and runs on the default scheduler.
        table: the table to compute.
        shards: tasks per trace (by 4-tuple hash); default: twice the client's workers, or
            the CPU count.
        **options: ``start``, ``duration``, ``end``, ``wscale``, ``idle_split``, ``checksums``
            (``tcpscope.Options``), as ``tcpscope.read`` takes them; not ``conns`` (a task
            numbers only its shard's connections: filter the result instead).

    A connection is named by (``input``, ``shard``, ``conn``) in the result; its values are
    those of the one-machine result (a test holds them equal, connection by connection, on a
    ring whose connections cross file boundaries).
    """
    import dask.dataframe as dd

    if options.get("conns"):
        # A task numbers the connections of its shard only: no id names one run-wide here.
        raise ValueError("conns: not with tcpscope.dask; filter the result on (input, shard, conn)")
    if isinstance(paths_or_ring_dirs, (str, os.PathLike)):
        paths = [os.fspath(paths_or_ring_dirs)]
    else:
        paths = [os.fspath(p) for p in paths_or_ring_dirs]
    if shards is None:
        workers = len(client.scheduler_info()["workers"]) if client is not None else (os.cpu_count() or 1)
        shards = max(1, 2 * workers)
    specs = [(p, k, shards, table, dict(options)) for p in paths for k in range(shards)]
    df = dd.from_map(task, specs, meta=_meta(table), enforce_metadata=False)
    if client is not None:
        df = client.persist(df)
    return df
