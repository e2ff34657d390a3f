//! `format!("{f:.d$}")` without the formatting machinery.
//!
//! Written by hand because no crate does it: `ryu` (and serde_json through it) gives the
//! shortest round-trip digits, not a fixed number of decimals, and std's exact mode (Grisu
//! with a Dragon fallback) cost ~700 instructions a value, a fifth of printing 200,000
//! connections. The value is exact: a finite double is `m · 2^e` with `m < 2^53`, so for the
//! magnitudes we print (`|f| < 2^52`, where `e < 0`) `f · 10^d = m · 10^d / 2^-e` is a fraction
//! of two integers that fit in `u128`, rounded half to even on the exact binary value as std
//! does. Anything else (NaN, infinities, huge values or results) goes to std.

/// Most decimals done here; more go to std (`10^d` times a 53-bit mantissa fits `u128` far
/// beyond, but the result must fit `u64`).
const MAX_DECIMALS: usize = 9;

const POW10: [u64; MAX_DECIMALS + 1] =
    [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];
const ZEROS: [u8; MAX_DECIMALS] = [b'0'; MAX_DECIMALS];

/// Appends `format!("{f:.d$}")` to `buf`, byte for byte.
pub fn push_fixed(buf: &mut Vec<u8>, f: f64, d: usize) {
    match scaled(f, d) {
        Some(q) => {
            if f.is_sign_negative() {
                buf.push(b'-');
            }
            // The digits of q with the point put in: d of them after it, at least one before.
            let mut ib = itoa::Buffer::new();
            let digits = ib.format(q).as_bytes();
            let (int, frac) = digits.split_at(digits.len().saturating_sub(d));
            buf.extend_from_slice(if int.is_empty() { b"0" } else { int });
            if d > 0 {
                buf.push(b'.');
                buf.extend_from_slice(&ZEROS[..d - frac.len()]);
                buf.extend_from_slice(frac);
            }
        }
        None => {
            use std::io::Write as _;
            let _ = write!(buf, "{f:.d$}");
        }
    }
}

/// `|f| · 10^d` rounded half to even, or `None` when std must do it.
fn scaled(f: f64, d: usize) -> Option<u64> {
    if d > MAX_DECIMALS {
        return None;
    }
    let bits = f.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    // Subnormals have no implicit bit and the exponent of the smallest normals.
    let (m, e) = if biased == 0 { (frac, -1074) } else { (frac | 1 << 52, biased - 1075) };
    if biased == 0x7ff || e >= 0 {
        return None; // NaN, infinities, |f| >= 2^52
    }
    let k = (-e) as u32;
    let p = m as u128 * POW10[d] as u128; // < 2^83
    if k >= 84 {
        return Some(0); // p < 2^83 <= 2^(k-1): below one half
    }
    let (mut q, r, half) = (p >> k, p & ((1u128 << k) - 1), 1u128 << (k - 1));
    if r > half || (r == half && q & 1 == 1) {
        q += 1;
    }
    u64::try_from(q).ok()
}

#[cfg(test)]
mod tests {
    use super::push_fixed;

    fn check(f: f64, d: usize) {
        let mut buf = Vec::new();
        push_fixed(&mut buf, f, d);
        assert_eq!(String::from_utf8(buf).unwrap(), format!("{f:.d$}"), "{f:e} with {d} decimals");
    }

    /// splitmix64: deterministic values for the random tests, without a dependency.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    // Some values are written with the digits of the numbers that printed wrong, not the
    // shortest ones that name the same float.
    #[allow(clippy::excessive_precision)]
    fn edge_values() {
        let edges = [
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.25,
            0.35,
            0.125,
            0.375,
            0.0005,
            0.0015,
            0.0025,
            -0.0004,
            1e-300,
            -1e-300,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            1e17,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1.8446744073709552e19,
            1.8446744073709552e13,
            1.8446744073709551e13,
            1795306570.849758,
            1700000000.0000445,
            123.0004999,
            65.887654,
            1269333333.3333333,
            0.9999995,
            0.99999949999999,
            9.9999995,
            999999.9999995,
            0.05,
            0.95,
        ];
        for f in edges {
            for d in 0..=12 {
                check(f, d);
            }
        }
    }

    /// Exact ties and their neighbours one ulp away, where rounding an inexact product would
    /// go wrong. `f · 10^d = n + 1/2` exactly holds for the doubles `m / 2^(d+1)`, `m` odd.
    #[test]
    fn ties_and_neighbours() {
        let mut s = 1;
        for _ in 0..200_000 {
            let r = next(&mut s);
            let d = (r % 10) as usize;
            let m = (next(&mut s) >> (11 + (r >> 8) % 50)) | 1;
            let t = m as f64 / (1u64 << (d + 1)) as f64;
            for f in [t, t.next_up(), t.next_down(), -t] {
                check(f, d);
            }
            // Decimal midpoints rounded to the nearest double: x.xxx5 at every decimal count.
            let mid = ((next(&mut s) % 10_000_000_000) as f64 * 10.0 + 5.0) / 10f64.powi(d as i32 + 1);
            for f in [mid, mid.next_up(), mid.next_down()] {
                check(f, d);
            }
        }
    }

    #[test]
    fn random_bits_and_magnitudes() {
        let mut s = 7;
        for _ in 0..300_000 {
            let r = next(&mut s);
            let d = (r % 10) as usize;
            check(f64::from_bits(next(&mut s)), d);
            // Magnitudes the statistics have: timestamps, milliseconds, rates.
            let x = (next(&mut s) >> 11) as f64 / (1u64 << 53) as f64;
            for scale in [1e-6, 1e-3, 1.0, 1e3, 1e6, 1.7e9, 1e12, 1e15] {
                check(x * scale, d);
            }
        }
    }

    /// Timestamps as the capture gives them: ns since the epoch, divided by 1e9.
    #[test]
    fn timestamps() {
        let mut s = 3;
        for _ in 0..300_000 {
            let ns = 1_000_000_000_000_000_000 + next(&mut s) % 1_000_000_000_000_000_000;
            check(ns as f64 / 1e9, 6);
            let us = ns / 1000 * 1000;
            check(us as f64 / 1e9, 6);
        }
    }
}
