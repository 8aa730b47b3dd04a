//! Writes the rank tables `TiktokenCounter` counts with (feature `tiktoken`).
//!
//! For each of tiktoken's rank sets this writes `$OUT_DIR/<name>.ranks`:
//! every token's bytes by rank and a hash table from bytes to rank, laid out
//! as `src/rank_layout.rs` describes. The ranks come from tiktoken-rs (a
//! build dependency here), so a program that counts needs no base64
//! decoding, parsing or hashing of 200,000 ranks when it starts: the tables
//! are read in place from the binary.

#[cfg(feature = "tiktoken")]
#[path = "src/rank_layout.rs"]
mod rank_layout;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/rank_layout.rs");
    #[cfg(feature = "tiktoken")]
    tables::write_all()?;
    Ok(())
}

#[cfg(feature = "tiktoken")]
mod tables {
    use std::collections::HashSet;
    use std::error::Error;
    use std::path::PathBuf;

    use super::rank_layout::{FINGERPRINT_BITS, RANK_BITS, fingerprint, first_slot, hash};

    /// Every rank set, with the number of ordinary tokens tiktoken gives it
    /// (a check that the ranks were read whole).
    pub(crate) fn write_all() -> Result<(), Box<dyn Error>> {
        let out = PathBuf::from(std::env::var("OUT_DIR")?);
        let sets = [
            ("o200k_base", tiktoken_rs::o200k_base as fn() -> _, 199_998),
            ("cl100k_base", tiktoken_rs::cl100k_base, 100_256),
            ("p50k_base", tiktoken_rs::p50k_base, 50_280),
            ("r50k_base", tiktoken_rs::r50k_base, 50_256),
        ];
        for (name, load, expected) in sets {
            let bpe = load().map_err(|e| format!("{name}: {e}"))?;
            let tokens = ordinary_tokens(&bpe);
            let ordinary = tokens.iter().filter(|t| !t.is_empty()).count();
            if ordinary != expected {
                return Err(format!(
                    "{name}: tiktoken-rs gave {ordinary} ordinary tokens, expected {expected}"
                )
                .into());
            }
            std::fs::write(out.join(format!("{name}.ranks")), table(name, &tokens)?)?;
        }
        Ok(())
    }

    /// Every ordinary token's bytes, by rank: ranks from 0 up to the first
    /// that is neither an ordinary token nor a special token. A special
    /// token's rank among them is an empty entry.
    fn ordinary_tokens(bpe: &tiktoken_rs::CoreBPE) -> Vec<Vec<u8>> {
        let special: HashSet<u32> = bpe
            .special_tokens()
            .into_iter()
            .flat_map(|s| bpe.encode_with_special_tokens(s))
            .collect();
        let mut tokens = Vec::new();
        for rank in 0u32.. {
            if special.contains(&rank) {
                tokens.push(Vec::new());
                continue;
            }
            match bpe.decode_bytes(&[rank]) {
                Ok(bytes) if !bytes.is_empty() => tokens.push(bytes),
                _ => break,
            }
        }
        while tokens.last().is_some_and(Vec::is_empty) {
            tokens.pop();
        }
        tokens
    }

    /// The table of `tokens` (indexed by rank; empty for no token).
    fn table(name: &str, tokens: &[Vec<u8>]) -> Result<Vec<u8>, Box<dyn Error>> {
        let n = tokens.len();
        if n + 1 >= 1 << RANK_BITS {
            return Err(format!("{name}: {n} ranks do not fit {RANK_BITS} bits").into());
        }
        // At least twice as many slots as tokens, and room for the fingerprint.
        let bits = (2 * n).next_power_of_two().trailing_zeros().max(1);
        if bits + FINGERPRINT_BITS > 64 {
            return Err(format!("{name}: too many ranks for the hash").into());
        }
        let mask = (1usize << bits) - 1;
        let mut slots = vec![0u32; 1 << bits];
        let mut offsets = Vec::with_capacity(n + 1);
        let mut bytes = Vec::new();
        let mut seen = HashSet::new();
        for (rank, token) in tokens.iter().enumerate() {
            offsets.push(u32::try_from(bytes.len())?);
            bytes.extend_from_slice(token);
            if token.is_empty() {
                continue;
            }
            if !seen.insert(token.as_slice()) {
                return Err(format!("{name}: rank {rank} repeats an earlier token").into());
            }
            let h = hash(token);
            let mut slot = first_slot(h, bits);
            while slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            slots[slot] = fingerprint(h, bits) | (u32::try_from(rank)? + 1);
        }
        offsets.push(u32::try_from(bytes.len())?);

        let mut out = Vec::with_capacity(4 * (2 + offsets.len() + slots.len()) + bytes.len());
        for v in [u32::try_from(n)?, bits]
            .iter()
            .chain(&offsets)
            .chain(&slots)
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&bytes);
        Ok(out)
    }
}
