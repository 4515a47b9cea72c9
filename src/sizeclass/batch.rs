//! Many lookups at once: [`SizeClasses::usable_sizes`] answers a slice of requests with the
//! same numbers as [`SizeClasses::usable_size`], in a form the compiler vectorizes.
//!
//! The scalar lookup finds a request's class spacing from its leading zeros and a 64-entry
//! table. Neither vectorizes on baseline x86-64 (SSE2 has no 64-bit lane `lzcnt`, no gather,
//! no per-lane 64-bit shift and no 64-bit greater-than), so the batch form works in doubles
//! instead, where SSE2 has everything needed lane by lane:
//!
//! * A request `r < 2^52` becomes an exact double by the classic trick: the bits of
//!   `2^52 + r` are `0x4330_0000_0000_0000 | r`; subtract `2^52`.
//! * In that double, rounding the mantissa up to its top `lg_ngroup` bits (an integer add and
//!   mask on the bits; the carry ripples into the exponent) rounds `r` up to `lg_ngroup + 1`
//!   significant bits, i.e. to a multiple of `2^(floor(log2 r) - lg_ngroup)`: the class
//!   spacing within a doubling. Rounding the whole mantissa up gives the next power of two.
//! * The spacing is clamped below by the quantum, the classes under the quantum are powers
//!   of two (at least 8), and 5.3.1 rounds large requests to whole pages: as rounding up to
//!   a coarser power-of-two grid never gives less, each of these is a `minpd`/`maxpd` of
//!   rounded values (see `LaneLookup::usable_size`), so no lane needs a branch or a table.
//! * The same loop is compiled three times, for SSE2 (2 lanes), AVX2 (4) and AVX-512 (8),
//!   and the widest the CPU has is chosen at run time: the crate is built for baseline
//!   x86-64, where only SSE2 is assumed.
//!
//! Requests of `2^50` and more (no program asks for a petabyte, but classes go up to
//! `7·2^60` and the exactness argument needs headroom) go through the scalar lookup, a chunk
//! at a time, so the common loop has no per-request branch.

use super::SizeClasses;

/// The bits of `2^52` as a double: OR-ing an integer below `2^52` into its mantissa gives
/// exactly `2^52 + integer`.
const TWO_POW_52_BITS: u64 = 0x4330_0000_0000_0000;
const TWO_POW_52: f64 = 4_503_599_627_370_496.0;
/// A double's 52 mantissa bits.
const MANTISSA_MASK: u64 = (1 << 52) - 1;
/// Requests from here on take the scalar path (all requests in a chunk must be below it;
/// with the OR of the chunk checked, it must be a power of two).
const VECTOR_LIMIT: u64 = 1 << 50;
/// Requests looked at together: the vector loop's unit, and the scalar fallback's.
const CHUNK: usize = 64;

/// The config-derived constants of the lane-wise lookup.
#[derive(Clone, Copy, Debug)]
struct LaneLookup {
    /// Mantissa bits below the top `lg_ngroup` (rounding these up gives the class spacing).
    spacing_mask: u64,
    quantum_mask: u64,
    /// The page size minus one where large requests are rounded to pages; otherwise a mask
    /// so wide that rounding to it never wins the minimum.
    page_rounding_mask: u64,
    /// The smallest class, as a double (8: jemalloc's `LG_TINY_MIN` is 3).
    smallest: f64,
}

impl LaneLookup {
    fn new(classes: &SizeClasses) -> Self {
        let config = classes.config();
        LaneLookup {
            spacing_mask: MANTISSA_MASK >> config.lg_ngroup,
            quantum_mask: config.quantum() - 1,
            page_rounding_mask: if config.large_page_rounding {
                config.page() - 1
            } else {
                2 * VECTOR_LIMIT - 1
            },
            smallest: (1u64 << config.lg_tiny_min) as f64,
        }
    }

    /// The usable size of `request` (< [`VECTOR_LIMIT`]), branch-free.
    ///
    /// Why the minima and maxima give the class: rounding up to a coarser power-of-two grid
    /// never gives less, so "the spacing is at least the quantum" is rounding to the quantum
    /// first and then to the doubling's spacing; "tiny classes are powers of two" is the
    /// minimum with the next power of two (which is at least the class everywhere else); and
    /// whole-page rounding of large requests is the minimum with the page multiple (below the
    /// largest small class the spacing is under a page, so the page multiple is never less;
    /// above it every class is a page multiple, so it is never more).
    #[inline(always)]
    fn usable_size(&self, request: u64) -> u64 {
        let exact = to_f64(request);
        let next_pow2 = round_mantissa_up(exact, MANTISSA_MASK);
        let class = round_mantissa_up(
            to_f64(round_up(request, self.quantum_mask)),
            self.spacing_mask,
        );
        let paged = to_f64(round_up(request, self.page_rounding_mask));
        let class = max(self.smallest, min(min(next_pow2, class), paged));
        // Back to an integer by the same trick in reverse (class <= 2^51, so exact).
        (class + TWO_POW_52).to_bits() ^ TWO_POW_52_BITS
    }
}

/// `value` (< 2^52) as a double, exactly, without a 64-bit integer conversion instruction.
#[inline(always)]
fn to_f64(value: u64) -> f64 {
    f64::from_bits(value | TWO_POW_52_BITS) - TWO_POW_52
}

/// Rounds a positive double up to the significant bits above `mask` (the carry ripples into
/// the exponent, which is what makes this a rounding to a power-of-two grid).
#[inline(always)]
fn round_mantissa_up(value: f64, mask: u64) -> f64 {
    f64::from_bits((value.to_bits() + mask) & !mask)
}

#[inline(always)]
fn round_up(value: u64, mask: u64) -> u64 {
    (value + mask) & !mask
}

/// `maxpd` semantics (no NaN handling: there are no NaNs here), unlike `f64::max`.
#[inline(always)]
fn max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

#[inline(always)]
fn min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// Which instruction set the batch lookup's loop is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneWidth {
    /// The crate's baseline target features (SSE2 on x86-64: two requests per instruction).
    Portable,
    /// x86-64 AVX2: four requests per instruction.
    Avx2,
    /// x86-64 AVX-512 (F, DQ, VL): eight requests per instruction.
    Avx512,
}

impl LaneWidth {
    pub const ALL: [LaneWidth; 3] = [LaneWidth::Portable, LaneWidth::Avx2, LaneWidth::Avx512];

    /// Whether this CPU can run the loop compiled for `self` (checked once, then cached by
    /// the standard library).
    pub fn available(self) -> bool {
        match self {
            LaneWidth::Portable => true,
            #[cfg(target_arch = "x86_64")]
            LaneWidth::Avx2 => is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            LaneWidth::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512dq")
                    && is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The widest this CPU runs: what [`SizeClasses::usable_sizes`] uses.
    pub fn widest() -> Self {
        *Self::ALL
            .iter()
            .rev()
            .find(|width| width.available())
            .unwrap_or(&LaneWidth::Portable)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LaneWidth::Portable => "portable",
            LaneWidth::Avx2 => "avx2",
            LaneWidth::Avx512 => "avx512",
        }
    }
}

/// The whole-chunk loop, inlined into each instruction-set version below.
#[inline(always)]
fn chunks(classes: &SizeClasses, lanes: &LaneLookup, requests: &[u64], out: &mut [u64]) {
    let mut request_chunks = requests.chunks_exact(CHUNK);
    let mut out_chunks = out.chunks_exact_mut(CHUNK);
    for (chunk, answers) in (&mut request_chunks).zip(&mut out_chunks) {
        let chunk: &[u64; CHUNK] = chunk.try_into().expect("exact chunk");
        let answers: &mut [u64; CHUNK] = answers.try_into().expect("exact chunk");
        if chunk.iter().fold(0, |acc, &r| acc | r) < VECTOR_LIMIT {
            for (answer, &request) in answers.iter_mut().zip(chunk) {
                *answer = lanes.usable_size(request);
            }
        } else {
            classes.scalar_usable_sizes(chunk, answers);
        }
    }
    classes.scalar_usable_sizes(request_chunks.remainder(), out_chunks.into_remainder());
}

/// The same loop compiled for AVX2 (four lanes instead of SSE2's two), chosen at run time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn chunks_avx2(classes: &SizeClasses, lanes: &LaneLookup, requests: &[u64], out: &mut [u64]) {
    chunks(classes, lanes, requests, out)
}

/// ... and for AVX-512 (eight lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn chunks_avx512(classes: &SizeClasses, lanes: &LaneLookup, requests: &[u64], out: &mut [u64]) {
    chunks(classes, lanes, requests, out)
}

impl SizeClasses {
    /// [`SizeClasses::usable_size`] of every request, written to `out[i]`, with 0 for a request
    /// past the largest class (what `nallocx` answers there).
    ///
    /// # Panics
    /// If `out` is not as long as `requests`.
    pub fn usable_sizes(&self, requests: &[u64], out: &mut [u64]) {
        self.usable_sizes_with(LaneWidth::widest(), requests, out)
    }

    /// [`SizeClasses::usable_sizes`] with the loop compiled for `width` (the portable loop
    /// if this CPU lacks it): for tests and benchmarks of each instruction set.
    ///
    /// # Panics
    /// If `out` is not as long as `requests`.
    pub fn usable_sizes_with(&self, width: LaneWidth, requests: &[u64], out: &mut [u64]) {
        assert_eq!(
            requests.len(),
            out.len(),
            "usable_sizes: {} requests but {} answer slots",
            requests.len(),
            out.len()
        );
        let lanes = LaneLookup::new(self);
        #[cfg(target_arch = "x86_64")]
        {
            if width == LaneWidth::Avx512 && width.available() {
                // SAFETY: the CPU has the features the function is compiled for.
                return unsafe { chunks_avx512(self, &lanes, requests, out) };
            }
            if width == LaneWidth::Avx2 && width.available() {
                // SAFETY: as above.
                return unsafe { chunks_avx2(self, &lanes, requests, out) };
            }
        }
        chunks(self, &lanes, requests, out)
    }

    fn scalar_usable_sizes(&self, requests: &[u64], out: &mut [u64]) {
        for (answer, &request) in out.iter_mut().zip(requests) {
            *answer = self.usable_size(request).unwrap_or(0);
        }
    }

    /// The iterator form of [`SizeClasses::usable_sizes`]: the usable size of each request
    /// (0 past the largest class), looked up a buffer of requests at a time.
    pub fn usable_sizes_iter<I>(&self, requests: I) -> UsableSizes<'_, I::IntoIter>
    where
        I: IntoIterator<Item = u64>,
    {
        UsableSizes {
            classes: self,
            requests: requests.into_iter(),
            buffered: [0; ITER_BUFFER],
            answers: [0; ITER_BUFFER],
            next: 0,
            len: 0,
        }
    }
}

const ITER_BUFFER: usize = 4 * CHUNK;

/// Usable sizes of a stream of requests; see [`SizeClasses::usable_sizes_iter`].
pub struct UsableSizes<'a, I> {
    classes: &'a SizeClasses,
    requests: I,
    buffered: [u64; ITER_BUFFER],
    answers: [u64; ITER_BUFFER],
    next: usize,
    len: usize,
}

impl<I: Iterator<Item = u64>> Iterator for UsableSizes<'_, I> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.next == self.len {
            self.len = 0;
            for (slot, request) in self.buffered.iter_mut().zip(&mut self.requests) {
                *slot = request;
                self.len += 1;
            }
            if self.len == 0 {
                return None;
            }
            self.next = 0;
            self.classes
                .usable_sizes(&self.buffered[..self.len], &mut self.answers[..self.len]);
        }
        let answer = self.answers[self.next];
        self.next += 1;
        Some(answer)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (low, high) = self.requests.size_hint();
        let buffered = self.len - self.next;
        (
            low.saturating_add(buffered),
            high.and_then(|h| h.checked_add(buffered)),
        )
    }
}
