//! File version 4's checksums recomputed by hand, from the layout `src/trace/frame.rs`
//! documents (a 132-byte header whose last four bytes are the CRC-32 of the 128 before; then
//! chunks of `length u32, crc u32, bytes`, the CRC over the length's bytes and the chunk's).
//! A test that damages the events on purpose reseals the file, so that the damage reaches the
//! decoder's checks instead of stopping at a checksum.

/// The header's length.
pub const HEADER: usize = 132;

/// The chunks of a trace: (offset of the chunk's head, length of its bytes), as far as whole
/// heads go.
pub fn chunks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = HEADER;
    while at + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push((at, len));
        at += 8 + len;
    }
    out
}

/// Recomputes the header's checksum and those of the whole chunks (lengths left as they are).
pub fn reseal(bytes: &mut [u8]) {
    let sum = crc32fast::hash(&bytes[..128]);
    bytes[128..132].copy_from_slice(&sum.to_le_bytes());
    for (at, len) in chunks(bytes) {
        if at + 8 + len > bytes.len() {
            break;
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&bytes[at..at + 4]);
        h.update(&bytes[at + 8..at + 8 + len]);
        bytes[at + 4..at + 8].copy_from_slice(&h.finalize().to_le_bytes());
    }
}

/// Whether `offset` is in a chunk's head (its length or checksum).
pub fn in_chunk_head(bytes: &[u8], offset: usize) -> bool {
    chunks(bytes)
        .iter()
        .any(|&(at, _)| (at..at + 8).contains(&offset))
}
