"""Send application events to a running `tcpscope monitor --events SOCKET` (docs/monitor.md).

Each event is one NetLogger Best-Practices line, stamped now (ISO-8601 UTC, microseconds), sent
as a datagram. A send waits (at most a second) only while the recorder's queue is full; with no
recorder listening a unix-socket send raises OSError (catch it if events are optional) while a
UDP one is simply dropped.

    from tcpscope_events import EventLog
    log = EventLog("unix:/tmp/tcpscope.sock")     # or "udp:127.0.0.1:9412"; default $TCPSCOPE_EVENTS
    log.start("block.write", guid=42, bytes=524288)
    log.end("block.write", guid=42, status=0)
    log.write("disk.stall", ms=300)

Run as a script it sends one event: python3 tcpscope_events.py SOCKET NAME [key=value ...]
"""

import datetime
import os
import socket
import sys

__all__ = ["EventLog", "bp_line"]


def _ts(t=None):
    t = datetime.datetime.now(datetime.timezone.utc) if t is None else t
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def bp_line(event, fields, t=None):
    """One NetLogger Best-Practices line: ts=... event=EVENT key=value ..."""
    if not event or any(c.isspace() for c in event):
        raise ValueError(f"{event!r} is not an event name")
    parts = [f"ts={_ts(t)}", f"event={event}"]
    for k, v in fields.items():
        if not k or any(c.isspace() or c in '="' for c in k):
            raise ValueError(f"{k!r} is not a field name")
        v = str(v)
        if not v or any(c.isspace() for c in v) or '"' in v:
            v = '"' + v.replace('"', "'") + '"'
        parts.append(f"{k}={v}")
    return " ".join(parts)


class EventLog:
    """A sender of events to one recorder socket (`unix:PATH` or `udp:HOST:PORT`)."""

    def __init__(self, to=None):
        to = to or os.environ.get("TCPSCOPE_EVENTS")
        if not to:
            raise ValueError("say where the recorder listens: unix:PATH, udp:HOST:PORT or $TCPSCOPE_EVENTS")
        if to.startswith("unix:"):
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._dest = to[len("unix:"):]
        elif to.startswith("udp:"):
            host, _, port = to[len("udp:"):].rpartition(":")
            self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
            self._dest = (host.strip("[]"), int(port))
        else:
            raise ValueError(f"{to!r}: expected unix:PATH or udp:HOST:PORT")
        self._sock.settimeout(1.0)

    def write(self, event, **fields):
        """Sends EVENT with its fields."""
        self._sock.sendto(bp_line(event, fields).encode(), self._dest)

    def start(self, name, guid, **fields):
        """Sends NAME.start with guid=GUID."""
        self.write(f"{name}.start", guid=guid, **fields)

    def end(self, name, guid, status=0, **fields):
        """Sends NAME.end with guid=GUID and status=STATUS (negative: failure)."""
        self.write(f"{name}.end", guid=guid, status=status, **fields)

    def close(self):
        self._sock.close()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    kv = dict(a.split("=", 1) for a in sys.argv[3:])
    EventLog(sys.argv[1]).write(sys.argv[2], **kv)
