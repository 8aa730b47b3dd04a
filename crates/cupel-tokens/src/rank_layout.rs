//! The layout of a rank table, shared by the build script that writes the
//! tables and the counter that reads them (`build.rs` includes this file).
//!
//! A table holds one tiktoken rank set, every number a little-endian `u32`:
//!
//! | part | size | what |
//! | --- | --- | --- |
//! | header | 2 numbers | the number of ranks `n`, and `bits` |
//! | offsets | `n + 1` numbers | token `r`'s bytes are `bytes[offsets[r]..offsets[r + 1]]` (empty for a rank that is a special token's) |
//! | slots | `2^bits` numbers | a hash table from a token's bytes to its rank, linear probing |
//! | bytes | the rest | every token's bytes, in rank order |
//!
//! A slot is 0 when empty; otherwise its low [`RANK_BITS`] bits hold the rank
//! plus one and the high bits a fingerprint of the token's hash, so a probe
//! reads a token's bytes only when the fingerprints agree. A token's first
//! slot is the top `bits` bits of its [`hash`], its fingerprint the next
//! [`FINGERPRINT_BITS`]. At most half the slots are full.

/// Bits of a slot that hold the rank plus one (o200k_base has 199,998 ranks).
pub(crate) const RANK_BITS: u32 = 18;
/// Bits of a slot that hold the fingerprint.
pub(crate) const FINGERPRINT_BITS: u32 = 32 - RANK_BITS;

/// The hash of a token's bytes: eight bytes at a time (little-endian, the
/// last word zero-padded), then MurmurHash3's 64-bit finaliser, so the top
/// bits depend on every byte.
#[inline]
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        // Built byte by byte: no copy into a buffer (a call to memcpy).
        let w = rest
            .iter()
            .rev()
            .fold(0u64, |w, &b| (w << 8) | u64::from(b));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The first slot of a token whose hash is `h`, in a table of `2^bits` slots
/// (`bits` is between 1 and 32).
pub(crate) fn first_slot(h: u64, bits: u32) -> usize {
    // At most 32 bits: fits a usize on every target Rust supports here.
    (h >> (64 - bits)) as usize
}

/// The fingerprint of a token whose hash is `h`, already shifted to the high
/// bits of a slot.
pub(crate) fn fingerprint(h: u64, bits: u32) -> u32 {
    let f = (h >> (64 - bits - FINGERPRINT_BITS)) as u32 & ((1 << FINGERPRINT_BITS) - 1);
    f << RANK_BITS
}
