"""tcpscope.read and screen: schemas, equality with `stats --json`, damaged captures."""

import json
import math
import shutil

import pyarrow as pa
import pytest

import tcpscope

TYPES = {pa.int64(), pa.float64(), pa.bool_(), pa.string()}


def test_schemas_are_the_documented_columns(loss_snd):
    got = tcpscope.read(loss_snd)
    assert list(got) == list(tcpscope.TABLES) == ["connections", "events", "segments", "rtt"]
    for name, table in got.items():
        assert table.column_names == tcpscope.columns(name)
        assert table.schema.equals(tcpscope.schema(name))
        assert {f.type for f in table.schema} <= TYPES
        for f in table.schema:
            assert set(f.metadata) == {b"unit", b"doc"} and f.metadata[b"doc"], f.name
    conns = got["connections"]
    assert conns.column_names[:4] == ["id", "file", "input", "conn"]
    assert {"dir", "rexmit_packets", "rtt_avg_ms", "dir_first_time"} <= set(conns.column_names)
    assert conns.num_rows == 2
    assert got["segments"].column_names[:2] == ["input", "conn"]


def _close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=0) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_connections_equal_stats_json(cli):
    paths = [str(tcpscope_data(n)) for n in ("loss-snd.pcap", "reorder-rcv.pcap", "bursty-snd.pcap")]
    want = json.loads(cli("stats", "--json", *paths))["connections"]
    rows = tcpscope.read(paths, "connections").to_pylist()
    assert len(rows) == 2 * len(want)
    checked = 0
    for row in rows:
        c = next(c for c in want if c["input"] == row["input"] and c["conn"] == row["conn"])
        for name, v in row.items():
            if name == "dir":
                continue
            if name[:2] in ("a_", "b_"):
                w = c[name[0]][name[2:]]
            elif name in c:
                w = c[name]
            else:
                w = c[row["dir"]][name.removeprefix("dir_")]
            assert _close(v, w), (name, v, w)
            checked += 1
    assert checked > 400


def tcpscope_data(name):
    from conftest import DATA

    return DATA / name


def test_pandas_and_duckdb_read_the_tables(loss_snd):
    duckdb = pytest.importorskip("duckdb")
    t = tcpscope.read(loss_snd)
    df = t["connections"].to_pandas()
    assert df.loc[df.dir == "a2b", "rexmit_packets"].iloc[0] > 0
    segs = t["segments"]
    n = duckdb.sql("select count(*) from segs where verdict = 'retransmission'").fetchall()[0][0]
    assert n == df.loc[df.dir == "a2b", "rexmit_packets"].iloc[0] + df.loc[df.dir == "b2a", "rexmit_packets"].iloc[0]


def test_window_and_screen(loss_snd):
    whole = tcpscope.read(loss_snd, "segments")
    part = tcpscope.read(loss_snd, "segments", duration="100ms")
    assert 0 < part.num_rows < whole.num_rows
    s = tcpscope.screen(loss_snd)
    assert s[0]["id"] == 1 and s[0]["out_of_sequence"]["fast_retransmit"] > 0 and s[0]["events"]
    with pytest.raises(ValueError, match="start"):
        tcpscope.read(loss_snd, start="not a time")
    with pytest.raises(ValueError, match="unknown table"):
        tcpscope.read(loss_snd, "nope")


def test_read_and_screen_take_the_one_set_of_options(loss_snd):
    read = lambda **o: tcpscope.read(loss_snd, "connections", **o)  # noqa: E731
    screen = lambda **o: tcpscope.screen(loss_snd, **o)  # noqa: E731
    for f in (read, screen):
        with pytest.raises(TypeError, match="unexpected option 'windw'"):
            f(windw="1s")
        with pytest.raises(ValueError, match="idle_split"):
            f(idle_split=0)
        with pytest.raises(ValueError, match="wscale"):
            f(wscale=15)
        with pytest.raises(ValueError, match="duration"):
            f(duration="soon")
        assert f(start=None, duration="100ms", wscale=7, idle_split=60.0, merge=False, checksums=True)


def test_checksums_as_the_cli_counts_them(cli, loss_snd):
    want = json.loads(cli("stats", "--json", "--checksums", loss_snd))["connections"]
    got = tcpscope.read(loss_snd, "connections", checksums=True).to_pylist()
    counted = [(c["a2b"]["checksum_errors"], c["a2b"]["checksum_offloaded"]) for c in want]
    assert [(r["checksum_errors"], r["checksum_offloaded"]) for r in got[::2]] == counted
    assert all(e is not None for e, _ in counted)
    off = tcpscope.read(loss_snd, "connections").to_pylist()
    assert all(r["checksum_errors"] is None for r in off)


def test_a_damaged_capture_gives_what_was_read_with_a_warning(loss_snd, tmp_path):
    data = open(loss_snd, "rb").read()
    whole = tcpscope.read(loss_snd, "segments").num_rows
    # Cut in the middle of a record: the records before it are read.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.warns(RuntimeWarning, match=r"cut\.pcap.*byte"):
        t = tcpscope.read(str(cut), "segments")
    assert 0 < t.num_rows < whole
    # Garbage in the middle: skipped, reading resumes after it.
    bad = bytearray(data)
    bad[len(data) // 3 : len(data) // 3 + 200] = b"\xff" * 200
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(bytes(bad))
    with pytest.warns(RuntimeWarning, match=r"junk\.pcap: bytes \d+\.\.\d+ corrupt"):
        t = tcpscope.read(str(junk), "segments")
    assert 0 < t.num_rows < whole


def test_unreadable_inputs_raise_naming_file_and_offset(tmp_path):
    missing = tmp_path / "missing.pcap"
    with pytest.raises(tcpscope.TcpscopeError, match=r"missing\.pcap.*byte offset 0"):
        tcpscope.read(str(missing))
    notcap = tmp_path / "notes.txt"
    notcap.write_text("hello, not a capture\n" * 10)
    with pytest.raises(tcpscope.TcpscopeError, match=r"notes\.txt.*byte offset 0"):
        tcpscope.read(str(notcap))


def test_export_files_equal_read(cli, loss_snd, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    cli("export", loss_snd, "-o", str(tmp_path), "-q")
    mem = tcpscope.read(loss_snd)
    for name in tcpscope.TABLES:
        f = pq.read_table(tmp_path / f"{name}.parquet")
        assert f.equals(mem[name]), name


def test_connection_tables_alone_are_those_of_every_table(loss_snd, tmp_path):
    """Without a per-packet table, `connections` and `events` come from the pass `stats` and
    `screen` run (no per-packet sink, a file split over the analysing threads by 4-tuple),
    not the pass of every table: the same rows."""
    import pyarrow.compute as pc

    from conftest import made_connections, write_pcap

    a = tmp_path / "a.pcap"
    write_pcap(a, made_connections(n_conns=30))
    paths = [str(a), loss_snd, str(tcpscope_data("reorder-rcv.pcap"))]
    every = tcpscope.read(paths)["connections"]
    assert every.num_rows == 2 * 32
    assert tcpscope.read(paths, "connections").equals(every)
    some = tcpscope.read(paths, "connections", conns=[2, 31])
    assert some.equals(every.filter(pc.is_in(every["id"], pa.array([2, 31]))))
    events = tcpscope.read(paths)["events"]
    assert len(set(zip(events["input"].to_pylist(), events["conn"].to_pylist()))) > 10
    both = tcpscope.read(paths, ["connections", "events"])
    assert both["connections"].equals(every) and both["events"].equals(events)
    assert tcpscope.read(paths, "events").equals(events)


def test_conns_keeps_the_rows_of_those_ids(cli, loss_snd, tmp_path):
    """`conns` (`-c`): run-wide ids, as `stats -c` takes them; every table keeps exactly those
    connections' rows, as the CLI's `export -c` writes them."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from conftest import made_connections, write_pcap

    a = tmp_path / "a.pcap"
    write_pcap(a, made_connections(n_conns=30))
    paths = [str(a), loss_snd]
    every = tcpscope.read(paths)
    n_a = pc.sum(pc.equal(every["connections"]["input"], str(a))).as_py() // 2
    assert n_a == 30
    ids = [2, n_a + 1]  # a's second connection, loss-snd's only one
    some = tcpscope.read(paths, conns=ids)
    assert some["events"].num_rows > 0 and some["segments"].num_rows > 0
    for name, t in some.items():
        e = every[name]
        keep = pc.or_(
            pc.and_(pc.equal(e["input"], str(a)), pc.equal(e["conn"], 2)),
            pc.and_(pc.equal(e["input"], loss_snd), pc.equal(e["conn"], 1)),
        )
        assert t.equals(e.filter(keep)), name
    assert some["connections"]["id"].to_pylist() == [2, 2, 31, 31]
    assert [r["id"] for r in tcpscope.screen(paths, conns=[31])] == [31]
    out = tmp_path / "out"
    cli("export", *paths, "-c", "2,31", "-o", str(out))
    for name in ("segments", "connections"):
        assert pq.read_table(out / f"{name}.parquet").equals(some[name]), name
    for bad in ([0], [32]):
        with pytest.raises(ValueError, match="no connection"):
            tcpscope.read(paths, "connections", conns=bad)
        with pytest.raises(ValueError, match="no connection"):
            tcpscope.screen(paths, conns=bad)
    with pytest.raises(ValueError, match="shard"):
        tcpscope.read(paths, "connections", conns=[1], shard=(0, 2))
