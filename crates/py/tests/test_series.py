"""tcpscope.series: the tables behind each plot, against the CLI's files and `read`'s tables."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tcpscope

PARTS = {
    "tsg": ["segments", "acks", "sacks", "notes"],
    "rtt": ["samples"],
    "tput": ["packets", "rates"],
    "flight": ["points", "cwnd"],
    "ssize": ["segments"],
    "ack": ["delays"],
    "burst": ["packets", "bins", "cdf"],
    "burst-cdf": ["packets", "bins", "cdf"],
    "dupack": ["dupacks", "rexmits", "intervals"],
    "ladder": ["segments"],
    "states": ["steps"],
}


def test_every_kind_has_its_tables():
    assert set(PARTS) == set(tcpscope.PLOT_KINDS)


@pytest.mark.parametrize("kind", sorted(PARTS))
def test_tables_equal_the_clis_files(cli, loss_snd, tmp_path, kind):
    cli("plot", loss_snd, "-c", "1", "-k", kind, "--data", str(tmp_path))
    got = tcpscope.series(loss_snd, 1, kind)
    assert list(got) == PARTS[kind]
    for name, table in got.items():
        assert table.num_rows > 0, name
        assert table.equals(pq.read_table(tmp_path / f"{kind}-{name}.parquet")), name
        for f in table.schema:
            assert set(f.metadata) == {b"unit", b"doc"} and f.metadata[b"doc"], f.name


def test_time_sequence_rows_are_the_directions_segments(loss_snd):
    """The plotted direction's packets on the time-sequence plot are `read`'s segments of
    that direction, frame for frame and sequence number for sequence number."""
    tsg = tcpscope.series(loss_snd, 1, "tsg")
    d = tsg["segments"]["dir"][0].as_py()
    seg = tcpscope.read(loss_snd, "segments").to_pandas()
    seg = seg[(seg.conn == 1) & (seg.dir == d)]
    plotted = tsg["segments"].to_pandas()
    assert list(plotted.frame) == list(seg.frame)
    assert list(plotted.seq) == list(seg.seq)
    assert list(plotted.len) == list(seg.len)
    # Its classes are the segments' verdicts.
    assert list(plotted.kind) == list(seg.verdict)
    assert (plotted.kind == "retransmission").sum() > 0
    # The ACKs come from the other direction, with their windows.
    back = tcpscope.read(loss_snd, "segments").to_pandas()
    back = back[(back.conn == 1) & (back.dir != d) & back.ack.notna()]
    acks = tsg["acks"].to_pandas()
    assert list(acks.frame) == list(back.frame)
    assert list(acks.ack) == list(back.ack.astype("int64"))
    assert list(acks.win_bytes) == list(back.win_bytes)


@pytest.mark.parametrize("kind", ["tsg", "tput", "flight", "dupack"])
def test_a_time_window_is_the_clis(cli, loss_snd, tmp_path, kind):
    """`start`/`end` as `plot --data --from/--to`: the same files, a number or its text."""
    cli("plot", loss_snd, "-c", "1", "-k", kind, "--from", "0.05", "--to", "0.1", "--data", str(tmp_path))
    got = tcpscope.series(loss_snd, 1, kind, start=0.05, end="0.1")
    whole = tcpscope.series(loss_snd, 1, kind)
    for name, table in got.items():
        assert table.equals(pq.read_table(tmp_path / f"{kind}-{name}.parquet")), name
        if "time_s" in table.column_names:
            t = whole[name].to_pandas()
            assert table.to_pandas().equals(t[(t.time_s >= 0.05) & (t.time_s <= 0.1)].reset_index(drop=True)), name
    assert 0 < got[PARTS[kind][0]].num_rows < whole[PARTS[kind][0]].num_rows


def test_options_and_errors(loss_snd):
    t = tcpscope.series(loss_snd, 1, "tput", dir="b2a", window=0.5)
    assert set(t["rates"]["dir"].to_pylist()) <= {"b2a"}
    w = tcpscope.series(loss_snd, 1, "tput", window=0.5)["rates"].to_pandas()
    assert set(w[w.line != "instantaneous"].window_s) == {0.5}
    assert w[w.line == "instantaneous"].window_s.isna().all()
    assert isinstance(tcpscope.series(loss_snd, 1, "rtt")["samples"], pa.Table)
    with pytest.raises(ValueError, match="unknown plot kind"):
        tcpscope.series(loss_snd, 1, "nope")
    with pytest.raises(ValueError, match="no connection 9"):
        tcpscope.series(loss_snd, 9, "tsg")
    with pytest.raises(ValueError, match="a2b or b2a"):
        tcpscope.series(loss_snd, 1, "tsg", dir="up")
    with pytest.raises(tcpscope.TcpscopeError):
        tcpscope.series(loss_snd + ".missing", 1, "tsg")
    with pytest.raises(tcpscope.TcpscopeError, match="no packets from 100 s"):
        tcpscope.series(loss_snd, 1, "rtt", start=100)
    with pytest.raises(ValueError, match="--to must be after --from"):
        tcpscope.series(loss_snd, 1, "rtt", start=0.2, end=0.1)
    with pytest.raises(TypeError, match="seconds"):
        tcpscope.series(loss_snd, 1, "rtt", start=[1])
    # The burst plots have no time axis: their tables are whole, and the user is told.
    with pytest.warns(RuntimeWarning, match="burst has no time axis"):
        b = tcpscope.series(loss_snd, 1, "burst", start=0.05, end=0.1)
    assert b["packets"].equals(tcpscope.series(loss_snd, 1, "burst")["packets"])


def test_time_sequence_rows_match_segments_on_public_traces():
    """On real captures (../shared, skipped without it): every direction's time-sequence rows
    are its segments, frame, sequence number and verdict."""
    from conftest import ROOT

    public = ROOT.parent / "shared" / "traces" / "public"
    traces = sorted(public.glob("*.pcap*"))
    if not traces:
        pytest.skip(f"skipping: no captures in {public}")
    checked = 0
    for p in traces:
        try:
            seg = tcpscope.read(str(p), "segments").to_pandas()
        except tcpscope.TcpscopeError:
            continue
        for c in sorted(seg.conn.unique())[:3]:
            for d in ("a2b", "b2a"):
                s = seg[(seg.conn == c) & (seg.dir == d)]
                if s.empty:
                    continue
                t = tcpscope.series(str(p), int(c), "tsg", dir=d)["segments"].to_pandas()
                assert list(t.frame) == list(s.frame), (p.name, c, d)
                assert list(t.seq) == list(s.seq), (p.name, c, d)
                assert list(t.kind) == list(s.verdict), (p.name, c, d)
                checked += 1
    assert checked > 50
