"""tcpscope.dask on a LocalCluster of worker processes: a ring whose connections cross file
boundaries gives, connection by connection, the one-machine result."""

import pandas as pd
import pytest

import tcpscope
import tcpscope.dask
from conftest import make_ring

distributed = pytest.importorskip("dask.distributed")

KEY = ["input", "a_addr", "a_port", "b_addr", "b_port", "first_time", "dir"]


def test_cluster_equals_one_machine(tmp_path):
    ring = make_ring(str(tmp_path / "ring"), files=24, n_conns=150)
    one = tcpscope.read(ring, "connections").to_pandas()
    # Connections crossing from one file of the ring into another: many.
    assert len(_names(ring)) >= 20
    seg = tcpscope.read(ring, "segments").to_pandas()
    spans = seg.groupby("conn")["ts_ns"].agg(["min", "max"])
    bounds = sorted(tcpscope.read(f"{ring}/{f}", "segments").to_pandas()["ts_ns"].min() for f in _names(ring))
    crossing = sum(any(lo < b <= hi for b in bounds) for lo, hi in zip(spans["min"], spans["max"]))
    assert crossing >= 50, f"{crossing} connections cross a file boundary"

    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        with distributed.Client(cl) as client:
            df = tcpscope.dask.analyze([ring], client=client, shards=6)
            got = df.compute()
    assert sorted(got["shard"].unique()) == list(range(6))
    assert len(got) == len(one)
    cols = [c for c in one.columns if c not in ("id", "conn")]
    a = one[cols].sort_values(KEY).reset_index(drop=True)
    b = got[cols].sort_values(KEY).reset_index(drop=True)
    # Dask keeps text as pyarrow strings where pandas has objects, and a null as <NA> where
    # pandas has None (an all-null boolean column): values compared, exactly, nulls as None.
    a, b = (f.astype(object).where(f.notna(), None) for f in (a, b))
    pd.testing.assert_frame_equal(a, b, check_dtype=False, check_exact=True)


def _names(ring):
    import os

    return sorted(os.listdir(ring))


def test_conns_is_refused_with_a_way_out(loss_snd):
    with pytest.raises(ValueError, match=r"filter the result on \(input, shard, conn\)"):
        tcpscope.dask.analyze(loss_snd, conns=[1])
