"""tcpscope.plot: the CLI's figure code (core's plot::make), so the CLI's bytes are the oracle."""

import os
import subprocess
import warnings

import pytest

import tcpscope

from conftest import ROOT

PUBLIC = ROOT.parent / "shared" / "traces" / "public"


@pytest.fixture
def public_trace():
    """A public capture with a handshake, data both ways and retransmissions, or a skip."""
    p = PUBLIC / "chrissanders__tcp_zerowindowrecovery.pcapng"
    if not p.exists():
        pytest.skip(f"skipping: {PUBLIC} is absent")
    return str(p)


@pytest.fixture
def cli_bin():
    b = os.environ.get("TCPSCOPE_BIN")
    if not b or not os.path.exists(b):
        pytest.skip("no tcpscope binary: set TCPSCOPE_BIN (make test-python does)")
    return b


@pytest.mark.parametrize("kind", ["tsg", "rtt", "ladder"])
def test_svg_equals_the_clis_bytes(cli_bin, public_trace, tmp_path, kind):
    out = tmp_path / f"{kind}.svg"
    subprocess.run([cli_bin, "plot", public_trace, "--conn", "1", "-k", kind, "-o", str(out)], check=True,
                   capture_output=True)
    got = tcpscope.plot(public_trace, 1, kind)
    assert got.format == "svg" and got.data.startswith(b"<svg")
    assert got.data == out.read_bytes()
    assert got._repr_svg_() == out.read_text() and got._repr_png_() is None


def test_options_reach_the_figure_as_the_cli_flags_do(cli_bin, loss_snd, tmp_path):
    out = tmp_path / "tput.svg"
    flags = ["--dir", "a2b", "--from", "0.2", "--to", "1.5", "--width", "800", "--height", "400", "--title", "T",
             "--window", "0.25"]
    subprocess.run([cli_bin, "plot", loss_snd, "--conn", "1", "-k", "tput", *flags, "-o", str(out)], check=True,
                   capture_output=True)
    got = tcpscope.plot(loss_snd, 1, "tput", dir="a2b", start="0.2", end="1.5", width=800, height=400, title="T",
                        window=0.25)
    assert got.data == out.read_bytes()
    # The times as numbers are the same limits.
    assert tcpscope.plot(loss_snd, 1, "tput", dir="a2b", start=0.2, end=1.5, width=800, height=400, title="T",
                         window=0.25).data == got.data
    # And the options change the figure (the test can fail).
    assert got.data != tcpscope.plot(loss_snd, 1, "tput", dir="a2b").data


def test_png(loss_snd, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a machine without fonts warns
        p = tcpscope.plot(loss_snd, 1, "rtt", format="png")
    assert p.data[:8] == b"\x89PNG\r\n\x1a\n" and p._repr_png_() == p.data and p._repr_svg_() is None
    p.save(tmp_path / "x.png")
    assert (tmp_path / "x.png").read_bytes() == bytes(p)


def test_errors(loss_snd, tmp_path):
    with pytest.raises(ValueError, match="no connection 9"):
        tcpscope.plot(loss_snd, 9, "tsg")
    with pytest.raises(ValueError, match="unknown plot kind"):
        tcpscope.plot(loss_snd, 1, "pie")
    with pytest.raises(ValueError, match="connection ids start at 1"):
        tcpscope.plot(loss_snd, 0, "tsg")
    with pytest.raises(tcpscope.TcpscopeError, match="no packets from 100 s"):
        tcpscope.plot(loss_snd, 1, "tsg", start="100")
    missing = str(tmp_path / "missing.pcap")
    with pytest.raises(tcpscope.TcpscopeError, match="missing.pcap"):
        tcpscope.plot(missing, 1, "tsg")
    assert set(tcpscope.PLOT_KINDS) >= {"tsg", "rtt", "ladder", "states"}
