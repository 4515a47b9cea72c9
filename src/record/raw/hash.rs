//! The converter's hash map: keyed by the recorder's own ids and addresses.

use std::collections::HashMap;

/// (slot, stack id) -> the maps to symbolize it with and its return addresses, innermost
/// first: filled as the cursors decode `STACK` events (a stack is always defined before the
/// first call that names it, in the same slot's stream).
pub type Stacks = FastMap<(u32, u32), (usize, Vec<u64>)>;

/// A hash map with a multiplicative hash (FxHash's): the converter looks a stack up per
/// event and a frame per return address, and SipHash was a tenth of a `--stacks`
/// conversion. The keys are the recorder's own ids and addresses, not adversarial input.
pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;

#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline(always)]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        for &b in words.remainder() {
            self.add(b as u64);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, v: u8) {
        self.add(v as u64)
    }

    #[inline(always)]
    fn write_u32(&mut self, v: u32) {
        self.add(v as u64)
    }

    #[inline(always)]
    fn write_u64(&mut self, v: u64) {
        self.add(v)
    }

    #[inline(always)]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64)
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
