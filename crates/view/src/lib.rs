//! The browser viewer (`tcpscope view`) and the self-contained report (`tcpscope report`).
//!
//! - [`data::Traces`] loads the traces named on the command line (one statistics pass) and
//!   keeps, per opened connection, its series from one more pass ([`data::Detail`]).
//! - [`api`] builds the JSON answers; every one is bounded by the viewport's pixel width;
//!   [`pack`] the compact form of the figure and panels that the page reads (`fmt=bin`).
//! - [`timeline::Monitor`] a monitor recording (`tcpscope view run.tsm [TRACE]`): its monitored
//!   connections and each one's timeline for a view (`api/monitor`, `api/timeline`), read by
//!   the monitor crate's reader;
//! - [`Server`] serves the page (the Vite build of `web/`, embedded at compile time) and the API
//!   on one port; [`report`] writes the same page with the data inline.
//!
//! Security model (docs/viewer.md): loopback by default, with the Host header checked so that a
//! web page cannot reach the server through DNS rebinding; on any other address a random token
//! is the first path segment of every URL; only the fixed routes below answer, and traces are
//! named by index, never by path, so no request can reach another file.

#![deny(missing_docs)]

pub mod api;
pub mod correlated;
pub mod data;
pub mod list;
pub mod pack;
pub mod report;
pub mod timeline;

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::thread::JoinHandle;

use tcpscope_core::analysis::Dir;
use tiny_http::{Method, Request};

use crate::api::Viewport;
use crate::data::Traces;

/// The built page (`web/dist/index.html`: scripts and styles inline).
pub const PAGE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/dist/index.html"));

/// Worker threads answering requests: the page asks for a figure, panels and events at once.
const WORKERS: usize = 4;

/// Where and how to serve.
#[derive(Clone, Debug)]
pub struct Options {
    /// Address to bind (loopback unless the user says otherwise).
    pub bind: IpAddr,
    /// Port; 0 picks a free one.
    pub port: u16,
}

/// A running viewer server.
pub struct Server {
    /// The URL to open (with the token, when one is required).
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    workers: Vec<JoinHandle<()>>,
}

/// A random token of 128 bits, as 32 hex digits.
fn random_token() -> io::Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| io::Error::other(format!("no random numbers for the token: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// What routing needs to know besides the request.
struct Ctx {
    traces: Arc<Traces>,
    /// Path prefix every URL must start with: `""` or `"/TOKEN"`.
    prefix: String,
    /// Host header values accepted (loopback only; `None`: any, the token protects).
    hosts: Option<Vec<String>>,
    /// The last answers, newest last: stepping back out through the zoom history asks for
    /// views seen before, and a zoomed-out figure of millions of packets is the costly one.
    recent: std::sync::Mutex<std::collections::VecDeque<Recent>>,
    /// The connection list's filter text and last orders.
    list: list::List,
    /// A monitor recording, when the viewer shows one (`api/monitor`, `api/timeline`).
    monitor: Option<Arc<timeline::Monitor>>,
}

/// A recent answer: the request (route and query, which also say its content type) and its body.
type Recent = (String, Arc<Vec<u8>>);

/// Answers kept in [`Ctx::recent`].
const RECENT: usize = 64;

impl Server {
    /// Binds and starts answering on background threads.
    pub fn start(traces: Arc<Traces>, opts: &Options) -> io::Result<Server> {
        Server::start_with(traces, None, opts)
    }

    /// As [`Server::start`], with a monitor recording whose timeline the page shows (the traces
    /// are then the captures shown under it, possibly none).
    pub fn start_with(
        traces: Arc<Traces>,
        monitor: Option<Arc<timeline::Monitor>>,
        opts: &Options,
    ) -> io::Result<Server> {
        let listener = std::net::TcpListener::bind(SocketAddr::new(opts.bind, opts.port))?;
        // No Nagle: tiny_http writes the headers and the body separately, and the body's last
        // packet then waited for the client's delayed ACK of the headers — 40 ms on every other
        // answer, more than the work of most zooms. Accepted sockets inherit it from the
        // listening one on Linux (tiny_http does not hand us the accepted ones).
        socket2::SockRef::from(&listener).set_tcp_nodelay(true)?;
        let server = tiny_http::Server::from_listener(listener, None).map_err(io::Error::other)?;
        let addr =
            server.server_addr().to_ip().ok_or_else(|| io::Error::other("the server is not bound to an IP address"))?;
        let loopback = opts.bind.is_loopback();
        let prefix = if loopback { String::new() } else { format!("/{}", random_token()?) };
        let hosts = loopback.then(|| {
            let p = addr.port();
            vec![format!("127.0.0.1:{p}"), format!("localhost:{p}"), format!("[::1]:{p}")]
        });
        let shown = if opts.bind.is_unspecified() || addr.ip().is_unspecified() {
            SocketAddr::new(IpAddr::from([127, 0, 0, 1]), addr.port()).to_string()
        } else {
            addr.to_string()
        };
        let url = format!("http://{shown}{prefix}/");
        let server = Arc::new(server);
        let ctx =
            Arc::new(Ctx { traces, prefix, hosts, recent: Default::default(), list: Default::default(), monitor });
        let workers = (0..WORKERS)
            .map(|_| {
                let (server, ctx) = (server.clone(), ctx.clone());
                std::thread::spawn(move || {
                    for req in server.incoming_requests() {
                        // A client that went away is not our error.
                        let _ = answer(&ctx, req);
                    }
                })
            })
            .collect();
        Ok(Server { url, addr, server, workers })
    }

    /// Serves until the process ends.
    pub fn wait(self) {
        for w in self.workers {
            let _ = w.join();
        }
    }

    /// Stops answering (for tests).
    pub fn stop(self) {
        self.server.unblock();
        for _ in 1..WORKERS {
            self.server.unblock();
        }
        for w in self.workers {
            let _ = w.join();
        }
    }
}

/// Writes an answer and asks the client to close the connection.
///
/// Written raw because tiny_http drops a `Connection` header we set, and keep-alive connections
/// hang the server: tiny_http reads each connection on a pool thread until the client closes
/// it, and when several connections arrive at once (the page opens five) its pool can queue one
/// behind threads that a browser's idle keep-alive connections hold — for minutes (seen in the
/// browser tests: a plot's answers never came). Closed after each answer, a connection frees
/// its thread at once; a new one costs a fraction of a millisecond on loopback.
fn send_with(req: Request, status: u16, headers: &[(&str, &str)], body: &[u8]) -> io::Result<()> {
    let reason = tiny_http::StatusCode(status).default_reason_phrase();
    let head_only = *req.method() == Method::Head;
    let mut out = format!("HTTP/1.1 {status} {reason}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n");
    let mut buf = out.into_bytes();
    if !head_only {
        buf.extend_from_slice(body);
    }
    // One write: headers and body in separate packets made every other answer wait for the
    // client's delayed ACK (see TCP_NODELAY in Server::start).
    let mut w = req.into_writer();
    let r = w.write_all(&buf).and_then(|_| w.flush());
    // A client that went away is not our error.
    match r {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
            ) =>
        {
            Ok(())
        }
        r => r,
    }
}

fn send(req: Request, status: u16, ctype: &str, body: &[u8]) -> io::Result<()> {
    send_with(req, status, &[("Content-Type", ctype)], body)
}

const JSON: &str = "application/json";
const BIN: &str = "application/octet-stream";

fn send_json(req: Request, status: u16, v: &impl serde::Serialize) -> io::Result<()> {
    send(req, status, JSON, &serde_json::to_vec(v).unwrap_or_default())
}

fn error(req: Request, status: u16, msg: &str) -> io::Result<()> {
    send_json(req, status, &serde_json::json!({ "error": msg }))
}

/// The query parameters of a request.
struct Query(Vec<(String, String)>);

impl Query {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
    fn num<T: std::str::FromStr>(&self, k: &str) -> Result<Option<T>, String> {
        self.get(k).filter(|v| !v.is_empty()).map(|v| v.parse().map_err(|_| format!("bad {k}: {v:?}"))).transpose()
    }
    fn dir(&self) -> Result<Dir, String> {
        match self.get("dir").unwrap_or("a2b") {
            "a2b" => Ok(Dir::AtoB),
            "b2a" => Ok(Dir::BtoA),
            d => Err(format!("bad dir: {d:?} (a2b or b2a)")),
        }
    }
    fn flag(&self, k: &str, default: bool) -> Result<bool, String> {
        match self.get(k) {
            None | Some("") => Ok(default),
            Some("1" | "true") => Ok(true),
            Some("0" | "false") => Ok(false),
            Some(v) => Err(format!("bad {k}: {v:?} (0 or 1)")),
        }
    }
    fn list(&self) -> Result<list::ListQuery, String> {
        Ok(list::ListQuery {
            sort: self.get("sort").filter(|s| !s.is_empty()).unwrap_or("severity").to_string(),
            desc: self.flag("desc", true)?,
            filter: self.get("q").unwrap_or("").to_string(),
            boring: self.flag("boring", false)?,
            from: self.num("from")?.unwrap_or(0),
            n: self.num("n")?.unwrap_or(100),
        })
    }
    fn viewport(&self) -> Result<Viewport, String> {
        let f = |k| {
            self.num::<f64>(k).and_then(|v| match v {
                Some(x) if !x.is_finite() => Err(format!("bad {k}")),
                v => Ok(v),
            })
        };
        Ok(Viewport {
            t0: f("t0")?,
            t1: f("t1")?,
            s0: self.num("s0")?,
            s1: self.num("s1")?,
            w: self.num("w")?.unwrap_or(1000),
        })
    }
}

/// Answers one request: checks the host and token, then routes.
fn answer(ctx: &Ctx, req: Request) -> io::Result<()> {
    if let Some(hosts) = &ctx.hosts {
        let host = req.headers().iter().find(|h| h.field.equiv("Host")).map(|h| h.value.as_str().to_string());
        if !host.is_some_and(|h| hosts.iter().any(|a| a.eq_ignore_ascii_case(&h))) {
            return error(req, 403, "unexpected Host header");
        }
    }
    if !matches!(req.method(), Method::Get | Method::Head) {
        return error(req, 405, "only GET");
    }
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let Some(route) = path.strip_prefix(ctx.prefix.as_str()) else {
        return error(req, 404, "not found");
    };
    let q = Query(form_urlencoded::parse(query.as_bytes()).into_owned().collect());
    let t = &ctx.traces;
    match route {
        "/" | "/index.html" => send(req, 200, "text/html; charset=utf-8", PAGE.as_bytes()),
        "" => send_with(req, 301, &[("Location", &format!("{}/", ctx.prefix))], b""),
        // With list parameters, one page of the filtered, sorted list; without, every row.
        "/api/conns" if ["sort", "desc", "q", "boring", "from", "n"].iter().any(|k| q.get(k).is_some()) => {
            match q.list().and_then(|l| ctx.list.page(t, &l)) {
                Ok(page) => send_json(req, 200, &page),
                Err(e) => error(req, 400, &e),
            }
        }
        "/api/conns" => send_json(req, 200, &api::conns(t)),
        // `null` when no recording is shown: the page then lists the traces' connections.
        "/api/monitor" => match &ctx.monitor {
            Some(m) => send_json(req, 200, &m.conns_json((!t.paths.is_empty()).then_some(&**t))),
            None => send_json(req, 200, &serde_json::Value::Null),
        },
        "/api/timeline" => {
            let Some(m) = &ctx.monitor else { return error(req, 404, "no recording shown") };
            let built = (|| -> Result<serde_json::Value, (u16, String)> {
                let id: u32 = q.num("conn").map_err(|e| (400, e))?.ok_or((400, "conn missing".to_string()))?;
                let v = q.viewport().map_err(|e| (400, e))?;
                m.timeline_json(id, &v).map_err(|e| (404, e))
            })();
            match built {
                Ok(v) => send_json(req, 200, &v),
                Err((status, msg)) => error(req, status, &msg),
            }
        }
        // `null` unless the traces are correlated (`view --correlate`): then the captures.
        "/api/correlate" => match &t.corr {
            Some(c) => send_json(req, 200, &serde_json::json!({ "points": c.points() })),
            None => send_json(req, 200, &serde_json::Value::Null),
        },
        "/api/tsg" | "/api/ladder" | "/api/lifeline" | "/api/owd" | "/api/panels" | "/api/events" | "/api/packet" => {
            // `fmt=bin`: the packed form (crate::pack) of the figures and the panels.
            let bin = q.get("fmt") == Some("bin");
            let ctype = if bin && route != "/api/events" && route != "/api/packet" { BIN } else { JSON };
            let key = format!("{route}?{query}");
            let hit = ctx.recent.lock().ok().and_then(|r| r.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()));
            if let Some(body) = hit {
                return send(req, 200, ctype, &body);
            }
            let built = (|| -> Result<Vec<u8>, (u16, String)> {
                let id: usize = q.num("conn").map_err(|e| (400, e))?.ok_or((400, "conn missing".to_string()))?;
                let d = t.detail(id).map_err(|e| (404, e))?;
                let v = match route {
                    "/api/tsg" => {
                        let dir = q.dir().map_err(|e| (400, e))?;
                        let f = api::tsg_figure(&d, dir, &q.viewport().map_err(|e| (400, e))?);
                        if bin {
                            return Ok(pack::figure(&d, dir, &f));
                        }
                        return serde_json::to_vec(&api::figure_out(&d, dir, &f)).map_err(|e| (500, e.to_string()));
                    }
                    "/api/ladder" => {
                        let h: u32 = q.num("h").map_err(|e| (400, e))?.unwrap_or(600);
                        let f = api::ladder_figure(&d, &q.viewport().map_err(|e| (400, e))?, h);
                        // Both directions: `dir` says a2b (a's line is the upper one).
                        if bin {
                            return Ok(pack::figure(&d, Dir::AtoB, &f));
                        }
                        return serde_json::to_vec(&api::figure_out(&d, Dir::AtoB, &f))
                            .map_err(|e| (500, e.to_string()));
                    }
                    "/api/lifeline" | "/api/owd" => {
                        let Some(c) = &t.corr else {
                            return Err((404, "the traces are not correlated (view --correlate)".to_string()));
                        };
                        let dir = q.dir().map_err(|e| (400, e))?;
                        let kind = if route == "/api/owd" { correlated::Kind::Owd } else { correlated::Kind::Lifeline };
                        let v = q.viewport().map_err(|e| (400, e))?;
                        let f = c.figure(id, dir, kind, &t.an.conns[id - 1], d.t0_ns(), &v).map_err(|e| (404, e))?;
                        if bin {
                            return Ok(pack::figure(&d, dir, &f));
                        }
                        return serde_json::to_vec(&api::figure_out(&d, dir, &f)).map_err(|e| (500, e.to_string()));
                    }
                    "/api/panels" => {
                        let p = api::panels(&d, q.dir().map_err(|e| (400, e))?, &q.viewport().map_err(|e| (400, e))?);
                        if bin {
                            return Ok(pack::panels(&p));
                        }
                        p.to_json()
                    }
                    "/api/events" => api::events_json(&d),
                    _ => {
                        let frame: u64 =
                            q.num("frame").map_err(|e| (400, e))?.ok_or((400, "frame missing".to_string()))?;
                        api::packet_json(&d, frame)
                    }
                };
                serde_json::to_vec(&v).map_err(|e| (500, e.to_string()))
            })();
            match built {
                Ok(body) => {
                    let body = Arc::new(body);
                    if let Ok(mut r) = ctx.recent.lock() {
                        if r.len() == RECENT {
                            r.pop_front();
                        }
                        r.push_back((key, body.clone()));
                    }
                    send(req, 200, ctype, &body)
                }
                Err((status, msg)) => error(req, status, &msg),
            }
        }
        _ => error(req, 404, "not found"),
    }
}

/// Opens `url` in the user's browser: tries the system's launchers (`xdg-open`, `gio open`, ...
/// as the `open` crate orders them) until one succeeds. Waits for the launcher (which may wait
/// for the browser: call it from a thread of its own). The error says, in words, what each
/// launcher that exists did ("xdg-open exited with status 3"), or that none exists.
pub fn open_browser(url: &str) -> io::Result<()> {
    use std::process::Stdio;
    let mut failed = Vec::new();
    let mut missing = Vec::new();
    for mut cmd in open::commands(url) {
        let name = cmd.get_program().to_string_lossy().into_owned();
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        match cmd.status() {
            Ok(s) if s.success() => return Ok(()),
            Ok(s) => failed.push(match s.code() {
                Some(c) => format!("{name} exited with status {c}"),
                None => format!("{name} was killed by a signal"),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(name),
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    Err(io::Error::other(if failed.is_empty() {
        format!("no browser launcher is installed (tried {})", missing.join(", "))
    } else {
        failed.join("; ")
    }))
}
