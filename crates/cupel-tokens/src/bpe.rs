//! Counting with a tiktoken encoding: the encoding's pre-tokenizer (its
//! regular expression, as tiktoken has it) and byte-pair merges by rank, read
//! from a rank table the build script wrote (see `rank_layout`).
//!
//! The merges are tiktoken's own (`_byte_pair_merge` for pieces under 100
//! bytes, the heap-based `_byte_pair_merge_large` above), counting tokens
//! instead of collecting them, so every count is the length of tiktoken's
//! `encode_ordinary`. Only what counting needs is built: no decoder, no
//! sorted token list, no special-token pattern; the ranks are read in place.

use std::collections::BinaryHeap;

use fancy_regex::Regex;

use crate::rank_layout::{RANK_BITS, fingerprint, first_slot, hash};

/// o200k_base (and o200k_harmony, whose ordinary tokens are o200k_base's).
static O200K_BASE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.ranks"));
/// cl100k_base.
static CL100K_BASE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.ranks"));
/// p50k_base (and p50k_edit, whose ordinary tokens are p50k_base's).
static P50K_BASE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/p50k_base.ranks"));
/// r50k_base (`gpt2`).
static R50K_BASE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/r50k_base.ranks"));

/// cl100k_base's pre-tokenizer, as tiktoken has it.
const CL100K_BASE_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// r50k_base's and p50k_base's pre-tokenizer, as tiktoken has it.
const R50K_BASE_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";

/// A rank set read in place (layout in `rank_layout`).
#[derive(Clone, Copy)]
struct RankTable {
    offsets: &'static [u8],
    slots: &'static [u8],
    bytes: &'static [u8],
    bits: u32,
    mask: usize,
}

/// The `i`th little-endian `u32` of `b` (0 past the end, which a table
/// checked by [`RankTable::read`] never reaches).
#[inline]
fn u32_at(b: &[u8], i: usize) -> u32 {
    match b.get(i * 4..i * 4 + 4) {
        Some(&[a0, a1, a2, a3]) => u32::from_le_bytes([a0, a1, a2, a3]),
        _ => 0,
    }
}

impl RankTable {
    /// Reads a table, checking that its parts have the sizes its header
    /// gives.
    fn read(data: &'static [u8]) -> Option<Self> {
        let n = usize::try_from(u32_at(data, 0)).ok()?;
        let bits = u32_at(data, 1);
        if !(1..=26).contains(&bits) || n + 1 >= 1 << RANK_BITS {
            return None;
        }
        let (_, rest) = data.split_at_checked(8)?;
        let (offsets, rest) = rest.split_at_checked(4 * (n + 1))?;
        let (slots, bytes) = rest.split_at_checked(4 << bits)?;
        let table = RankTable {
            offsets,
            slots,
            bytes,
            bits,
            mask: (1 << bits) - 1,
        };
        (usize::try_from(u32_at(offsets, n)).ok()? == bytes.len()).then_some(table)
    }

    /// The bytes of the token `rank` (empty for none).
    #[inline]
    fn token(&self, rank: usize) -> &'static [u8] {
        let start = u32_at(self.offsets, rank) as usize;
        let end = u32_at(self.offsets, rank + 1) as usize;
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The rank of the token `piece`, if it is one.
    #[inline]
    fn rank(&self, piece: &[u8]) -> Option<u32> {
        let h = hash(piece);
        let want = fingerprint(h, self.bits);
        let mut slot = first_slot(h, self.bits);
        // At most half the slots are full: an empty one ends every probe. The
        // bound only keeps a damaged table from looping.
        for _ in 0..=self.mask {
            let entry = u32_at(self.slots, slot);
            if entry == 0 {
                return None;
            }
            if entry & !((1 << RANK_BITS) - 1) == want {
                let rank = (entry & ((1 << RANK_BITS) - 1)) - 1;
                if self.token(rank as usize) == piece {
                    return Some(rank);
                }
            }
            slot = (slot + 1) & self.mask;
        }
        None
    }
}

/// One tiktoken encoding, as far as counting needs it.
pub(crate) struct Encoder {
    ranks: RankTable,
    pattern: Regex,
}

impl Encoder {
    /// The encoder of `encoding` (a canonical name from
    /// [`TIKTOKEN_ENCODINGS`](crate::TIKTOKEN_ENCODINGS)).
    ///
    /// # Errors
    /// A message when the table or the pattern cannot be read (neither
    /// happens with the tables the build script writes).
    pub(crate) fn new(encoding: &str) -> Result<Self, String> {
        let (data, pattern) = match encoding {
            "o200k_base" | "o200k_harmony" => (O200K_BASE, tiktoken_rs::O200K_BASE_PAT_STR),
            "cl100k_base" => (CL100K_BASE, CL100K_BASE_PATTERN),
            "p50k_base" | "p50k_edit" => (P50K_BASE, R50K_BASE_PATTERN),
            "r50k_base" => (R50K_BASE, R50K_BASE_PATTERN),
            other => return Err(format!("no rank table for {other}")),
        };
        let ranks = RankTable::read(data).ok_or("the rank table is damaged")?;
        let pattern = Regex::new(pattern).map_err(|e| e.to_string())?;
        Ok(Encoder { ranks, pattern })
    }

    /// The number of tokens tiktoken's `encode_ordinary` gives `text`.
    ///
    /// Should the pattern give up on a text (fancy-regex's backtracking
    /// limit, which tiktoken's patterns are not known to reach), the rest of
    /// the text is counted as one piece rather than failing.
    pub(crate) fn count(&self, text: &str) -> usize {
        let mut total = 0usize;
        let mut end = 0;
        for found in self.pattern.find_iter(text) {
            match found {
                Ok(m) => {
                    total = total.saturating_add(self.count_piece(m.as_str().as_bytes()));
                    end = m.end();
                }
                Err(_) => {
                    let rest = text.get(end..).unwrap_or_default();
                    return total.saturating_add(self.count_piece(rest.as_bytes()));
                }
            }
        }
        total
    }

    /// The tokens of one piece of the pre-tokenizer's.
    fn count_piece(&self, piece: &[u8]) -> usize {
        match piece.len() {
            0 => 0,
            // Every byte is a token.
            1 => 1,
            _ if self.ranks.rank(piece).is_some() => 1,
            n if n < 100 => self.merge_count(piece),
            _ => self.merge_count_large(piece),
        }
    }

    /// tiktoken's `_byte_pair_merge`: repeatedly merge the adjacent pair of
    /// lowest rank (the leftmost of equals); the count of parts left.
    fn merge_count(&self, piece: &[u8]) -> usize {
        const NONE: u32 = u32::MAX;
        let rank = |range: std::ops::Range<usize>| {
            piece
                .get(range)
                .and_then(|p| self.ranks.rank(p))
                .unwrap_or(NONE)
        };
        // (start of a part, rank of the merge of it and the next part).
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        let mut min = (NONE, usize::MAX);
        for i in 0..piece.len() - 1 {
            let r = rank(i..i + 2);
            if r < min.0 {
                min = (r, i);
            }
            parts.push((i, r));
        }
        parts.push((piece.len() - 1, NONE));
        parts.push((piece.len(), NONE));
        // The rank of merging parts `i` and `i + 1` once `i + 1` and `i + 2`
        // are one (parts[i + 1] is still to be removed).
        let merged = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                rank(parts[i].0..parts[i + 3].0)
            } else {
                NONE
            }
        };
        while min.0 != NONE {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = merged(&parts, i - 1);
            }
            parts[i].1 = merged(&parts, i);
            parts.remove(i + 1);
            min = (NONE, usize::MAX);
            for (j, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < min.0 {
                    min = (r, j);
                }
            }
        }
        parts.len() - 1
    }

    /// tiktoken's `_byte_pair_merge_large`: the same merges in the same
    /// order, the next one taken from a heap; the count of tokens left.
    fn merge_count_large(&self, piece: &[u8]) -> usize {
        const NONE: u32 = u32::MAX;
        let rank = |start: usize, end: usize| {
            piece
                .get(start..end)
                .and_then(|p| self.ranks.rank(p))
                .unwrap_or(NONE)
        };
        /// A possible merge: lowest rank first, then leftmost.
        #[derive(PartialEq, Eq)]
        struct Merge {
            start: usize,
            rank: u32,
        }
        impl Ord for Merge {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                other
                    .rank
                    .cmp(&self.rank)
                    .then_with(|| other.start.cmp(&self.start))
            }
        }
        impl PartialOrd for Merge {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        /// The token starting at a byte: where it ends, where the next
        /// token ends, the rank of merging the two, and the previous
        /// token's start.
        struct State {
            prev: usize,
            end: usize,
            next_end: usize,
            next_rank: u32,
        }

        let len = piece.len();
        let mut state: Vec<State> = (0..len)
            .map(|i| State {
                prev: i.wrapping_sub(1),
                end: i + 1,
                next_end: i + 2,
                next_rank: NONE,
            })
            .collect();
        let mut heap = BinaryHeap::with_capacity(len);
        for (start, s) in state.iter_mut().enumerate().take(len - 1) {
            let r = rank(start, start + 2);
            if r != NONE {
                heap.push(Merge { start, rank: r });
                s.next_rank = r;
            }
        }
        let potential =
            |state: &mut [State], heap: &mut BinaryHeap<Merge>, start: usize, next_end: usize| {
                state[start].next_end = next_end;
                state[start].next_rank = NONE;
                if next_end <= len {
                    let r = rank(start, next_end);
                    if r != NONE {
                        heap.push(Merge { start, rank: r });
                        state[start].next_rank = r;
                    }
                }
            };
        while let Some(left) = heap.pop() {
            if left.rank != state[left.start].next_rank {
                continue; // invalidated by an earlier merge
            }
            let left_start = left.start;
            let right_start = state[left_start].end;
            let right_end = state[left_start].next_end;
            let right_next_end = state[right_start].next_end;
            state[left_start].end = right_end;
            potential(&mut state, &mut heap, left_start, right_next_end);
            if right_end < len {
                state[right_end].prev = left_start;
            }
            if left_start > 0 {
                let prev_start = state[left_start].prev;
                potential(&mut state, &mut heap, prev_start, right_end);
            }
            state[right_start].next_rank = NONE;
        }
        let mut count = 0;
        let mut i = 0;
        while i < len {
            count += 1;
            i = state[i].end;
        }
        count
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_table_reads_and_finds_its_tokens() {
        for (name, first, last) in [
            ("o200k_base", 0, 199_997),
            ("cl100k_base", 0, 100_255),
            ("p50k_base", 0, 50_280),
            ("r50k_base", 0, 50_255),
        ] {
            let e = Encoder::new(name).unwrap();
            for rank in [first, 1, 255, 256, 1000, last] {
                let token = e.ranks.token(rank);
                assert!(!token.is_empty(), "{name} {rank}");
                assert_eq!(e.ranks.rank(token), Some(rank as u32), "{name} {rank}");
            }
            assert_eq!(e.ranks.token(last + 1), b"", "{name}: past the last rank");
            // Every single byte is a token; a long run of one byte is not.
            assert!((0..=255u8).all(|b| e.ranks.rank(&[b]).is_some()), "{name}");
            assert_eq!(e.ranks.rank(&[b'q'; 300]), None, "{name}");
        }
        // p50k_base's rank 50256 is <|endoftext|>, a special token: no bytes.
        let p50k = Encoder::new("p50k_base").unwrap();
        assert_eq!(p50k.ranks.token(50_256), b"");
        assert!(Encoder::new("nope").is_err());
    }

    #[test]
    fn a_damaged_table_is_refused() {
        assert!(RankTable::read(&[]).is_none());
        let short = O200K_BASE.get(..O200K_BASE.len() - 1).unwrap();
        assert!(RankTable::read(short).is_none());
        assert!(RankTable::read(O200K_BASE).is_some());
    }

    #[test]
    fn both_merges_agree_with_tiktoken() {
        let e = Encoder::new("cl100k_base").unwrap();
        let tiktoken = tiktoken_rs::cl100k_base().unwrap();
        for piece in ["xyzzyplugh", "ñandú", "日本語のテキスト", "aaaaaaaaaaaaa"] {
            let expected = tiktoken.encode_ordinary(piece).len();
            assert_eq!(e.count(piece), expected, "{piece}");
            // The large merge, on a piece of any length, merges alike.
            assert_eq!(
                e.merge_count_large(piece.as_bytes()),
                e.merge_count(piece.as_bytes())
            );
        }
        let long = "antidisestablishmentarianism".repeat(8);
        assert!(long.len() >= 100);
        assert_eq!(e.count(&long), tiktoken.encode_ordinary(&long).len());
    }
}
