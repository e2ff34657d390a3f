//! Which sockets to sample: a small filter language, its user-space test, and its compilation
//! to the kernel's `inet_diag` bytecode (`INET_DIAG_REQ_BYTECODE`), so that the kernel sends
//! only matching sockets.
//!
//! Grammar (words as in `ss`/tcpdump; `sport`/`src` are the local end, `dport`/`dst` the remote):
//! ```text
//! expr := conj ("or" conj)*
//! conj := term ("and" term)*
//! term := ("sport" | "dport" | "port") PORT | ("src" | "dst" | "host") ADDR["/"PREFIX]
//! ```
//! `port N` is `sport N or dport N`, `host A` is `src A or dst A`. There is no `not` and no
//! parentheses: the filter is an OR of ANDs, which every term compiles to directly.
//!
//! The whole filter always compiles to bytecode (Linux ≥ 4.1 for the port-equality ops
//! `S_EQ`/`D_EQ`); if the kernel refuses the bytecode the sampler falls back to the user-space
//! test [`Filter::matches`], which is also applied to every reply so that both paths give the
//! same answer.

use std::net::IpAddr;

/// One test on a socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// Local port.
    SPort(u16),
    /// Remote port.
    DPort(u16),
    /// Local address within a prefix.
    Src(IpAddr, u8),
    /// Remote address within a prefix.
    Dst(IpAddr, u8),
}

/// An OR of ANDs of terms; empty matches every socket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub any: Vec<Vec<Term>>,
}

/// The endpoints of a socket as the filter sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
}

impl Filter {
    /// Parses `text`; the error names the word that was wrong.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut any: Vec<Vec<Vec<Term>>> = vec![vec![]];
        let mut i = 0;
        let mut want_term = true;
        while i < words.len() {
            let w = words[i];
            if !want_term {
                match w {
                    "or" => any.push(vec![]),
                    "and" => {}
                    _ => return Err(format!("expected `and` or `or` at word {} (`{w}`)", i + 1)),
                }
                want_term = true;
                i += 1;
                continue;
            }
            let arg = words.get(i + 1).ok_or_else(|| format!("`{w}` needs a value"))?;
            let port = || arg.parse::<u16>().map_err(|_| format!("`{arg}` is not a port (after `{w}`)"));
            let net = || parse_net(arg);
            // Each alternative of a term is one of the terms it ORs.
            let alts = match w {
                "sport" => vec![Term::SPort(port()?)],
                "dport" => vec![Term::DPort(port()?)],
                "port" => vec![Term::SPort(port()?), Term::DPort(port()?)],
                "src" => {
                    let (a, p) = net()?;
                    vec![Term::Src(a, p)]
                }
                "dst" => {
                    let (a, p) = net()?;
                    vec![Term::Dst(a, p)]
                }
                "host" => {
                    let (a, p) = net()?;
                    vec![Term::Src(a, p), Term::Dst(a, p)]
                }
                _ => return Err(format!("unknown filter word `{w}` (sport, dport, port, src, dst, host, and, or)")),
            };
            // `any` is a list of conjunctions, each a list of alternatives; expanded below.
            any.last_mut().expect("any starts non-empty and only grows").push(alts);
            want_term = false;
            i += 2;
        }
        if want_term && !words.is_empty() {
            return Err("the filter ends with `and` or `or`".into());
        }
        // Distribute: a conjunction of ORs becomes an OR of conjunctions.
        let mut out = Vec::new();
        for conj in any.into_iter().filter(|c| !c.is_empty()) {
            let mut acc: Vec<Vec<Term>> = vec![vec![]];
            for alts in conj {
                acc =
                    acc.iter().flat_map(|a| alts.iter().map(move |t| [a.clone(), vec![t.clone()]].concat())).collect();
            }
            out.extend(acc);
        }
        Ok(Filter { any: out })
    }

    /// Whether a socket with these ends passes.
    pub fn matches(&self, e: &Ends) -> bool {
        self.any.is_empty() || self.any.iter().any(|c| c.iter().all(|t| t.matches(e)))
    }

    /// The filter as `inet_diag` bytecode, or `None` when it matches everything (no bytecode).
    ///
    /// Layout (`include/uapi/linux/inet_diag.h`): ops of 4 bytes `{code: u8, yes: u8, no: u16}`;
    /// a true test jumps `yes` bytes on, a false one `no` bytes; landing exactly on the end
    /// accepts, landing 4 bytes past it rejects. The kernel's audit (`inet_diag_bc_audit`) walks
    /// the `yes` chain and requires every `no` target to be on it, so alternatives are laid out
    /// as `ss` does: `A JMP B`, where a failing test in `A` jumps to `B` and the `JMP` (always
    /// taken, via `no`) skips `B` when `A` passed.
    pub fn bytecode(&self) -> Option<Vec<u8>> {
        if self.any.is_empty() {
            return None;
        }
        let mut code: Vec<u8> = Vec::new();
        for (k, conj) in self.any.iter().enumerate() {
            let mut part = Vec::new();
            for t in conj {
                t.emit(&mut part);
            }
            // Patch every test's `no` so that failure lands 4 bytes past this part's end
            // (reject when this is the last part, else on the next part after the JMP).
            let plen = part.len();
            let mut at = 0;
            while at < plen {
                let yes = part[at + 1] as usize;
                let no = plen - at + 4;
                part[at + 2..at + 4].copy_from_slice(&(no as u16).to_ne_bytes());
                at += yes;
            }
            code.extend_from_slice(&part);
            if k + 1 < self.any.len() {
                // JMP over the remaining parts: patched after they are laid out.
                code.extend_from_slice(&[OP_JMP, 4, 0, 0]);
            }
        }
        // Patch each JMP to land exactly on the end (accept).
        let total = code.len();
        let mut at = 0;
        while at < total {
            if code[at] == OP_JMP {
                let no = total - at;
                code[at + 2..at + 4].copy_from_slice(&(no as u16).to_ne_bytes());
            }
            at += code[at + 1] as usize;
        }
        Some(code)
    }
}

const OP_JMP: u8 = 1;
const OP_S_COND: u8 = 7;
const OP_D_COND: u8 = 8;
const OP_S_EQ: u8 = 11;
const OP_D_EQ: u8 = 12;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

impl Term {
    fn matches(&self, e: &Ends) -> bool {
        match *self {
            Term::SPort(p) => e.sport == p,
            Term::DPort(p) => e.dport == p,
            Term::Src(a, n) => in_net(e.src, a, n),
            Term::Dst(a, n) => in_net(e.dst, a, n),
        }
    }

    /// Appends this test's ops; `yes` steps over the test, `no` is patched by the caller.
    fn emit(&self, out: &mut Vec<u8>) {
        match *self {
            Term::SPort(p) | Term::DPort(p) => {
                let code = if matches!(self, Term::SPort(_)) { OP_S_EQ } else { OP_D_EQ };
                // S_EQ/D_EQ: the port is in the `no` field of the op that follows.
                out.extend_from_slice(&[code, 8, 0, 0, 0, 0]);
                out.extend_from_slice(&p.to_ne_bytes());
            }
            Term::Src(a, n) | Term::Dst(a, n) => {
                let code = if matches!(self, Term::Src(..)) { OP_S_COND } else { OP_D_COND };
                // struct inet_diag_hostcond { u8 family; u8 prefix_len; int port; be32 addr[]; }
                let (family, bytes): (u8, Vec<u8>) = match a {
                    IpAddr::V4(v) => (AF_INET, v.octets().to_vec()),
                    IpAddr::V6(v) => (AF_INET6, v.octets().to_vec()),
                };
                let len = 4 + 8 + bytes.len();
                out.extend_from_slice(&[code, len as u8, 0, 0, family, n]);
                out.extend_from_slice(&[0, 0]); // padding before the int
                out.extend_from_slice(&(-1i32).to_ne_bytes()); // any port
                out.extend_from_slice(&bytes);
            }
        }
    }
}

fn parse_net(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, p) = s.split_once('/').map_or((s, None), |(a, p)| (a, Some(p)));
    let addr: IpAddr = a.parse().map_err(|_| format!("`{a}` is not an IP address"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match p {
        None => max,
        Some(p) => {
            p.parse::<u8>().ok().filter(|&n| n <= max).ok_or_else(|| format!("`/{p}` is not a prefix length"))?
        }
    };
    Ok((addr, prefix))
}

fn in_net(x: IpAddr, net: IpAddr, n: u8) -> bool {
    match (x, net) {
        (IpAddr::V4(x), IpAddr::V4(net)) => {
            let mask = if n == 0 { 0 } else { u32::MAX << (32 - n) };
            u32::from(x) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(x), IpAddr::V6(net)) => {
            let mask = if n == 0 { 0 } else { u128::MAX << (128 - n) };
            u128::from(x) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(sport: u16, dport: u16) -> Ends {
        Ends { src: "10.0.0.1".parse().unwrap(), sport, dst: "10.0.0.2".parse().unwrap(), dport }
    }

    #[test]
    fn parses_and_matches() {
        let f = Filter::parse("dport 5201 or sport 22").unwrap();
        assert!(f.matches(&ends(1000, 5201)));
        assert!(f.matches(&ends(22, 1)));
        assert!(!f.matches(&ends(5201, 22)));
        let f = Filter::parse("port 80 and dst 10.0.0.0/24").unwrap();
        assert_eq!(f.any.len(), 2);
        assert!(f.matches(&ends(80, 1)));
        assert!(!Filter::parse("port 80 and dst 10.9.0.0/24").unwrap().matches(&ends(80, 1)));
        assert!(Filter::parse("").unwrap().matches(&ends(1, 2)));
        assert!(Filter::parse("port x").is_err());
        assert!(Filter::parse("port 1 or").is_err());
        assert!(Filter::parse("bogus 1").is_err());
    }

    /// Runs bytecode the way `inet_diag_bc_run` does, for the tests.
    fn run(bc: &[u8], e: &Ends) -> bool {
        let mut at = 0usize;
        let len = bc.len();
        while at < len {
            let (code, yes, no) = (bc[at], bc[at + 1] as usize, u16::from_ne_bytes([bc[at + 2], bc[at + 3]]) as usize);
            let ok = match code {
                OP_JMP => false,
                OP_S_EQ | OP_D_EQ => {
                    let p = u16::from_ne_bytes([bc[at + 6], bc[at + 7]]);
                    if code == OP_S_EQ { e.sport == p } else { e.dport == p }
                }
                OP_S_COND | OP_D_COND => {
                    let n = bc[at + 5];
                    let a: IpAddr = if bc[at + 4] == AF_INET {
                        <[u8; 4]>::try_from(&bc[at + 12..at + 16]).unwrap().into()
                    } else {
                        <[u8; 16]>::try_from(&bc[at + 12..at + 28]).unwrap().into()
                    };
                    in_net(if code == OP_S_COND { e.src } else { e.dst }, a, n)
                }
                _ => panic!("unknown op {code}"),
            };
            at += if ok { yes } else { no };
        }
        at == len
    }

    #[test]
    fn bytecode_agrees_with_user_space() {
        for text in
            ["dport 5201 or sport 22", "port 80 and dst 10.0.0.0/24", "sport 1 and dport 2 or sport 3", "host 10.0.0.2"]
        {
            let f = Filter::parse(text).unwrap();
            let bc = f.bytecode().unwrap();
            for s in [1, 2, 3, 22, 80, 5201] {
                for d in [1, 2, 3, 22, 80, 5201] {
                    assert_eq!(run(&bc, &ends(s, d)), f.matches(&ends(s, d)), "{text}: {s} {d}");
                }
            }
        }
    }
}
