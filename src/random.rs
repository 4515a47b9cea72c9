//! Deterministic pseudo-random requests, so checks and benchmarks see the same inputs every run.

/// splitmix64: a small, well-known generator.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
