//! tcpscope's lab: a ttcp-compatible traffic generator ([`ttcp`]).

pub mod ttcp;

pub use ttcp::TtcpArgs;
