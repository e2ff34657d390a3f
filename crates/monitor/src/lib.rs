//! Live TCP monitoring (issue 19): the kernel's own view of chosen connections.
//!
//! - [`source`]: where samples come from: [`bpf`], a BPF iterator over the kernel's TCP sockets
//!   (loaded with aya), or [`diag`], and which one (`--sampler`);
//! - [`bpf`]: one pass of the BPF iterator, records decoded into [`diag`]'s per-socket values;
//! - [`diag`]: one dump of the kernel's TCP sockets over `NETLINK_SOCK_DIAG` (`tcp_info`,
//!   congestion control, BBR info, memory), filtered in the kernel by [`filter`]'s bytecode;
//! - [`fields`]: every value of a sample defined once (name, unit, source, Web100 name, meaning),
//!   with the JSON/CSV output and the table of `docs/monitor.md` generated from it;
//! - [`track`]: connections followed by socket cookie, starts and ends, the sampling loop and
//!   `--pid` matching by socket inode;
//! - [`triage`]: AveBW, interval bandwidth, and what limited each sender (seed 002 §§4–5);
//! - [`tsm`]: the recording file;
//! - [`record`]: a monitoring run (record and/or stream samples);
//! - [`events`]: application events and host CPU;
//! - [`plot`]: figures of a recorded connection (cwnd, RTT, bandwidth, limits);
//! - [`ship`]: reliable collection of recordings by a collector.
//!
//! No `unsafe` here: `netlink-sys` owns the socket, aya the BPF program.
#![forbid(unsafe_code)]

pub mod bpf;
pub mod diag;
pub mod events;
pub mod fields;
pub mod filter;
pub mod plot;
pub mod record;
pub mod ship;
pub mod source;
pub mod top;
pub mod track;
pub mod triage;
pub mod tsm;
