//! Running summaries of samples: count, min, max, mean ([`Mean`]) and variance ([`Summary`]).

/// Running count / min / max / mean, in ns (or bytes): what is written of the samples whose
/// spread no output shows (the advertised window, the ACK delay). 40 bytes, not a
/// [`Summary`]'s 48: every direction of every connection holds two, and with many connections
/// open at once those 16 bytes a connection took a connection's statistics over an allocator
/// size class (`docs/performance.md`, *concurrent*).
///
/// Sums of the samples' differences from the first sample, not Welford's update: that one
/// divides on every sample, and the division sat on the per-packet path (the window is a
/// sample of every ACK; ~10 % of the analysing thread on a bulk transfer). The difference
/// from a sample keeps the sums well conditioned (the classic shifted-data method). In f64,
/// not an exact i128 sum: its 16-byte alignment and size made every connection's statistics
/// 150 bytes bigger (+15 % peak memory with 200,000 connections).
#[derive(Clone, Copy, Debug, Default)]
pub struct Mean {
    /// Number of samples.
    pub n: u64,
    /// The first sample: the shift.
    first: u64,
    /// Sum of (x - first).
    sum: f64,
    /// Smallest sample (ns); 0 when `n == 0`.
    pub min: u64,
    /// Largest sample (ns).
    pub max: u64,
}

/// Adds sample `x` to the parts of a summary that held `n` samples: the first sample (the
/// shift), min, max and the sum of differences from the first; returns `x`'s difference (exact
/// in `u64`, then one rounding to `f64`). [`Mean`] and the statistics' narrow copies
/// (`stats::kept`, with `u32` or `u64` samples) all add with it, so their sums are the same bits.
#[inline(always)]
pub(crate) fn add_sample<T: Copy + Ord + Into<u64>>(
    n: u64,
    (first, min, max, sum): (&mut T, &mut T, &mut T, &mut f64),
    x: T,
) -> f64 {
    if n == 0 {
        *first = x;
        *min = x;
    }
    *min = (*min).min(x);
    *max = (*max).max(x);
    let (x, f): (u64, u64) = (x.into(), (*first).into());
    let d = if x >= f { (x - f) as f64 } else { -((f - x) as f64) };
    *sum += d;
    d
}

impl Mean {
    /// No samples (the [`Default`], usable in constants).
    pub const NONE: Mean = Mean { n: 0, first: 0, sum: 0.0, min: 0, max: 0 };

    /// Adds a sample.
    #[inline]
    pub fn add(&mut self, x: u64) {
        self.add_shifted(x);
    }
    /// Adds a sample; returns its difference from the first sample.
    #[inline]
    fn add_shifted(&mut self, x: u64) -> f64 {
        let d = add_sample(self.n, (&mut self.first, &mut self.min, &mut self.max, &mut self.sum), x);
        self.n += 1;
        d
    }
    /// Mean, `None` without samples.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.first as f64 + self.sum / self.n as f64)
    }
    /// Its parts: count, first sample, sum of differences, min, max (what the statistics'
    /// narrow copy keeps, `stats::kept`).
    pub(crate) fn parts(&self) -> (u64, u64, f64, u64, u64) {
        (self.n, self.first, self.sum, self.min, self.max)
    }
    /// The mean of these [`Mean::parts`].
    pub(crate) fn from_parts((n, first, sum, min, max): (u64, u64, f64, u64, u64)) -> Mean {
        Mean { n, first, sum, min, max }
    }
}

/// A [`Mean`] and the samples' variance: the shifted sum of squares beside its sums. Its
/// count, min and max read as a [`Mean`]'s (`s.n`, `s.min`, `s.max`, through `Deref`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    base: Mean,
    /// Sum of (x - first)².
    sum_sq: f64,
}

impl std::ops::Deref for Summary {
    type Target = Mean;
    fn deref(&self) -> &Mean {
        &self.base
    }
}

impl Summary {
    /// No samples (the [`Default`], usable in constants).
    pub const NONE: Summary = Summary { base: Mean::NONE, sum_sq: 0.0 };

    /// Adds a sample.
    #[inline]
    pub fn add(&mut self, x: u64) {
        let d = self.base.add_shifted(x);
        self.sum_sq += d * d;
    }
    /// Its parts: the [`Mean::parts`] and the sum of squares.
    pub(crate) fn parts(&self) -> ((u64, u64, f64, u64, u64), f64) {
        (self.base.parts(), self.sum_sq)
    }
    /// The summary of these [`Summary::parts`].
    pub(crate) fn from_parts(base: (u64, u64, f64, u64, u64), sum_sq: f64) -> Summary {
        Summary { base: Mean::from_parts(base), sum_sq }
    }
    /// Sample standard deviation (n - 1), `None` with fewer than 2 samples.
    pub fn stdev(&self) -> Option<f64> {
        (self.n > 1).then(|| {
            let (n, sum) = (self.n as f64, self.base.sum);
            // Rounding can leave a tiny negative for equal samples.
            ((self.sum_sq - sum * sum / n).max(0.0) / (n - 1.0)).sqrt()
        })
    }
}
