//! `tcpscope ttcp` and `tcpscope lab`: glue over `tcpscope-lab`, which does the work.

use std::io;
use std::process::ExitCode;

/// `tcpscope ttcp`.
pub fn ttcp(args: &tcpscope_lab::TtcpArgs) -> io::Result<ExitCode> {
    tcpscope_lab::ttcp::main(args)
}

/// `tcpscope lab run|report`.
pub fn lab(args: &tcpscope_lab::LabArgs) -> ExitCode {
    tcpscope_lab::main(args)
}
