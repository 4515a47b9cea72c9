//! Deterministic pseudo-random requests, so checks and benchmarks see the same inputs every run.

/// splitmix64: a small, well-known generator.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A splitmix64 stream with the draws the generators need (the traces they write are
/// committed, so the arithmetic of each draw is part of their format: do not change it).
pub(crate) struct SplitMix(pub u64);

impl SplitMix {
    pub(crate) fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.0)
    }
    /// Uniform in [0, 1), 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform below `n` (0 for `n` = 0 or 1).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() > 1.0 - p
    }
    /// Log-uniform in [lo, hi].
    pub(crate) fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo.max(1) as f64).ln(), (hi.max(lo + 1) as f64).ln());
        ((a + self.unit() * (b - a)).exp() as u64).clamp(lo.max(1), hi)
    }
}

/// `count` requests spread log-uniformly from 1 byte up to `max`.
pub fn log_uniform_requests(count: u64, max: u64, seed: u64) -> Vec<u64> {
    let mut state = seed;
    let bits = 64 - max.leading_zeros();
    (0..count)
        .map(|_| {
            let width = 1 + splitmix64(&mut state) % u64::from(bits);
            let r = splitmix64(&mut state) >> (64 - width);
            r.clamp(1, max)
        })
        .collect()
}
