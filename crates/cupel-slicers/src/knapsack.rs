//! [`KnapsackSlice`]: 0/1 knapsack dynamic programming over discretised tokens.

use std::collections::TryReserveError;
use std::ops::Add;

use cupel_core::{
    CupelError, ScoredItem, SliceBudget, SliceOutcome, Slicer, SlicerKind, TableLimit,
    VariantOutcome, VariantPick,
};

use crate::variants::{form_count, form_tokens, reason};

/// Default token bucket size of [`KnapsackSlice`].
pub const DEFAULT_BUCKET_SIZE: i64 = 100;

/// Default cell guard of [`KnapsackSlice`]: none (`u64::MAX`).
///
/// The table is guarded in bytes ([`DEFAULT_MAX_TABLE_BYTES`], 64 MiB); a cell
/// limit is an optional second guard
/// ([`with_max_table_cells`](KnapsackSlice::with_max_table_cells)).
pub const DEFAULT_MAX_TABLE_CELLS: u64 = u64::MAX;

pub use cupel_core::DEFAULT_MAX_TABLE_BYTES;

/// Scores are scaled by this factor and floored to integer DP values.
pub const SCORE_SCALE: f64 = 10_000.0;

/// Selects the subset of items with the greatest total score that fits the
/// target, by 0/1 knapsack dynamic programming.
///
/// Tokens are discretised into buckets of [`bucket_size`](Self::bucket_size)
/// tokens to keep the table small, so the answer is optimal for the
/// discretised problem and never over the real target.
///
/// # Algorithm
/// 1. Empty input or `target_tokens <= 0`: select nothing.
/// 2. Items with `tokens == 0` are always selected and stay out of the DP;
///    items with `tokens > 0` are the *candidates* (in input order).
/// 3. `value = max(0, floor(score * 10000))` (a NaN score gives 0),
///    `weight = ceil(tokens / bucket_size)`,
///    `capacity = floor(target_tokens / bucket_size)`. Rounding weights up and
///    the capacity down means every discretised solution fits the real target.
///    With `capacity == 0` only the zero-token items are selected.
/// 4. One DP row `dp[0..=capacity]`; candidate `i` is folded in with `w` from
///    `capacity` down to `weight[i]`: if `dp[w - weight[i]] + value[i] >
///    dp[w]` (strictly), update `dp[w]` and set the keep bit `(i, w)`.
/// 5. Reconstruction walks `i` from the last candidate down to the first,
///    taking candidate `i` when its keep bit at the remaining capacity is set.
///
/// The output lists the zero-token items (input order) followed by the DP
/// selection in reconstruction order (highest candidate index first).
///
/// # Memory and the table guard
/// The keep table has `candidates x (capacity + 1)` cells stored as bits in
/// `u64` words, each row padded to a whole word: `candidates *
/// ceil((capacity + 1) / 64) * 8` bytes, i.e. **1/8 byte per cell** (a
/// `bool` table would take 8 times as much). Next to it the DP keeps two rows
/// of `capacity + 1` values: `u32` while the candidates' values add up to at
/// most `u32::MAX` (always the case for scores in `[0, 1]` and fewer than
/// 429,496 candidates), else `u64`, else `u128` — so `(capacity + 1) * 8`
/// bytes in the usual case. Measured sizes:
///
/// | candidates | capacity + 1 | cells | keep table | DP rows | time (2-core VM) |
/// | --- | --- | --- | --- | --- | --- |
/// | 1,000 | 2,501 (target 250,000, bucket 100) | 2.5 M | 320 KB | 20 KB | ~1.8 ms |
/// | 1,000 | 25,001 (target 250,000, bucket 10) | 25 M | 3.1 MB | 200 KB | ~19 ms |
/// | 10,000 | 25,001 (target 2,500,000, bucket 100) | 250 M | 31 MB | 200 KB | over the default guard; ~180 ms with it raised |
/// | — | — | ~537 M (default guard: 64 MiB) | up to 64 MiB | — | ~0.4 s (extrapolated at 0.73 ns/cell) |
///
/// A run whose keep table and DP rows together would take more than
/// [`max_table_bytes`](Self::max_table_bytes) bytes (default
/// [`DEFAULT_MAX_TABLE_BYTES`], 64 MiB), or — when a cell guard is set with
/// [`with_max_table_cells`](Self::with_max_table_cells) — more than that many
/// cells, fails with [`CupelError::TableTooLarge`] before allocating any
/// table; its message names the numbers and what to change (raise the bucket
/// size, lower the target, or raise the guard). The guard counts every
/// candidate, including ones too heavy to fit. The rows count because they
/// grow with the capacity alone: without them a single candidate could bring
/// half a billion buckets within a 64 MiB keep table, and 4 GB of rows. So
/// the default guard holds a capacity of up to about 8.26 million buckets
/// with one candidate (2 rows × 4 bytes + 1/8 byte of keep table = 8.125
/// bytes per bucket; 64 MiB / 8.125 = 8,259,552), fewer as candidates add
/// keep-table bytes. A table within the guard that cannot be
/// allocated (only plausible with a raised guard) fails with
/// [`CupelError::SlicerConfig`], never an abort.
///
/// # Variants
/// [`slice_variants`](Slicer::slice_variants) solves the *multiple-choice*
/// knapsack: each item is taken in at most one of its forms (the item
/// itself, or one of its variants). A form's value is
/// `max(0, floor(score * value * 10000))` (the item itself: `value = 1`, so
/// exactly the value above), its weight `ceil(tokens / bucket_size)`. The DP
/// keeps, for every candidate and capacity, which form (or none) gave the
/// best total; a form replaces the best so far only when strictly better, so
/// ties keep "none", then the more complete form. Candidates are items with
/// `tokens > 0`; its table takes 2 bytes per cell (at most 65,534 forms per
/// item) and the same byte and cell guards apply.
///
/// # Choices where the specification is silent
/// * Items with negative token counts (which the pipeline never passes) are
///   neither candidates nor zero-token items: they are never selected.
/// * Values are `u64` (the `as` conversion saturates absurd scores above
///   `1.8e15`); the DP runs in the narrowest of `u32`/`u64`/`u128` that holds
///   the sum of all values, so sums never wrap.
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::KnapsackSlice;
///
/// let a = ContextItem::new("a", 60)?;
/// let b = ContextItem::new("b", 50)?;
/// let c = ContextItem::new("c", 50)?;
/// let items = [ScoredItem::new(&a, 0.9), ScoredItem::new(&b, 0.6), ScoredItem::new(&c, 0.6)];
/// // bucket 10: weights 6, 5, 5; capacity 10. Best value: b + c = 12000 > a = 9000.
/// let knapsack = KnapsackSlice::new(10)?;
/// let out = knapsack.slice(&items, SliceBudget::new(100, 100))?.selected;
/// assert_eq!(out, vec![2, 1]); // reconstruction order: last candidate first
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KnapsackSlice {
    bucket_size: i64,
    max_table_cells: u64,
    max_table_bytes: u64,
}

impl Default for KnapsackSlice {
    /// Bucket size [`DEFAULT_BUCKET_SIZE`] (100), guard
    /// [`DEFAULT_MAX_TABLE_BYTES`] (64 MiB), no cell guard.
    fn default() -> Self {
        Self {
            bucket_size: DEFAULT_BUCKET_SIZE,
            max_table_cells: DEFAULT_MAX_TABLE_CELLS,
            max_table_bytes: DEFAULT_MAX_TABLE_BYTES,
        }
    }
}

/// The dimensions of a knapsack keep table, from [`KnapsackSlice::table_size`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KnapsackTableSize {
    /// Number of DP candidates (items with `tokens > 0`).
    pub candidates: usize,
    /// Row length: `floor(target / bucket_size) + 1`.
    pub row_len: u64,
    /// `candidates * row_len` (saturating).
    pub cells: u64,
    /// Bytes of the keep table: `candidates * ceil(row_len / 64) * 8` (saturating).
    pub keep_bytes: u64,
    /// Bytes of the two DP rows with `u32` values (the usual case):
    /// `2 * row_len * 4` (saturating); double it for `u64` values.
    pub dp_bytes: u64,
}

impl KnapsackSlice {
    /// A knapsack slicer with the given bucket size and the default table guard.
    ///
    /// # Errors
    /// [`CupelError::SlicerConfig`] when `bucket_size <= 0`.
    pub fn new(bucket_size: i64) -> Result<Self, CupelError> {
        if bucket_size <= 0 {
            return Err(CupelError::SlicerConfig(format!(
                "KnapsackSlice bucket_size must be > 0 (got {bucket_size})"
            )));
        }
        Ok(Self {
            bucket_size,
            ..Self::default()
        })
    }

    /// Adds a cell guard: runs whose keep table would have more than `cells`
    /// cells fail with [`CupelError::TableTooLarge`]. The byte guard
    /// ([`with_max_table_bytes`](Self::with_max_table_bytes)) still applies.
    pub fn with_max_table_cells(mut self, cells: u64) -> Self {
        self.max_table_cells = cells;
        self
    }

    /// Replaces the byte guard (default [`DEFAULT_MAX_TABLE_BYTES`], 64 MiB):
    /// runs whose keep table would take more than `bytes` bytes fail with
    /// [`CupelError::TableTooLarge`]. `u64::MAX` lifts it.
    pub fn with_max_table_bytes(mut self, bytes: u64) -> Self {
        self.max_table_bytes = bytes;
        self
    }

    /// The byte guard of the keep table.
    pub fn max_table_bytes(&self) -> u64 {
        self.max_table_bytes
    }

    /// The token bucket size (always `> 0`).
    pub fn bucket_size(&self) -> i64 {
        self.bucket_size
    }

    /// The cell guard (`u64::MAX`: none).
    pub fn max_table_cells(&self) -> u64 {
        self.max_table_cells
    }

    /// The keep table a run with `candidates` positive-token items and
    /// `target_tokens` would build (`row_len` is 1 when the target is `<= 0`).
    /// The byte guard compares `keep_bytes + dp_bytes` (for `u32` values,
    /// the usual case) with [`max_table_bytes`](Self::max_table_bytes).
    ///
    /// ```
    /// let k = cupel_slicers::KnapsackSlice::new(10)?;
    /// let t = k.table_size(1_000, 250_000);
    /// assert_eq!((t.row_len, t.cells), (25_001, 25_001_000));
    /// // ceil(25_001 / 64) = 391 words per row; 1_000 rows x 391 x 8 bytes.
    /// assert_eq!(t.keep_bytes, 3_128_000);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    pub fn table_size(&self, candidates: usize, target_tokens: i64) -> KnapsackTableSize {
        let capacity = u64::try_from(target_tokens.max(0) / self.bucket_size).unwrap_or(0);
        let row_len = capacity.saturating_add(1);
        let n = candidates as u64;
        KnapsackTableSize {
            candidates,
            row_len,
            cells: n.saturating_mul(row_len),
            keep_bytes: n.saturating_mul(row_len.div_ceil(64)).saturating_mul(8),
            dp_bytes: row_len.saturating_mul(8),
        }
    }
}

/// `max(0, floor(score * 10000))`; NaN and negatives give 0, `as` saturates.
pub(crate) fn scaled_value(score: f64) -> u64 {
    (score * SCORE_SCALE).floor() as u64
}

/// `ceil(tokens / bucket)` for `tokens > 0`, `bucket > 0`, without overflow.
fn ceil_div(tokens: i64, bucket: i64) -> u64 {
    let q = tokens / bucket;
    let q = if tokens % bucket != 0 { q + 1 } else { q };
    u64::try_from(q).unwrap_or(u64::MAX)
}

/// DP value type: the narrowest of `u32`, `u64`, `u128` that holds the sum of
/// all candidate values (so no addition in the DP can overflow).
trait DpValue: Copy + Ord + Add<Output = Self> + Default {
    /// Converts a value known to fit (its total fits `Self`).
    fn from_u64(v: u64) -> Self;
}
impl DpValue for u32 {
    fn from_u64(v: u64) -> Self {
        u32::try_from(v).unwrap_or(u32::MAX)
    }
}
impl DpValue for u64 {
    fn from_u64(v: u64) -> Self {
        v
    }
}
impl DpValue for u128 {
    fn from_u64(v: u64) -> Self {
        u128::from(v)
    }
}

/// A row of `len` zeros, or the allocation error (never an abort).
fn zeroed<T: Copy + Default>(len: usize) -> Result<Vec<T>, TryReserveError> {
    let mut row = Vec::new();
    row.try_reserve_exact(len)?;
    row.resize(len, T::default());
    Ok(row)
}

/// Builds the keep table (row-major, `row_words` words per row) for the given
/// weights (`weights[i] > capacity` means "never fits") and values.
///
/// This is the specification's in-place reverse loop
/// (`for w = capacity downto dw: if dp[w - dw] + dv > dp[w] ...`), computed
/// with two rows instead: a reverse in-place pass only ever reads slots it
/// has not yet written (`w - dw < w`), so it equals
/// `new[w] = max(old[w], old[w - dw] + dv)` for every `w >= dw` at once, which
/// the compiler can vectorise. Keep bits are identical.
///
/// Every buffer (the two DP rows first, then the `words`-word keep table) is
/// allocated fallibly, so a table the machine cannot hold is an error, not an
/// abort.
///
/// Invariants upheld by the caller: `words == weights.len() * row_words`,
/// `row_words * 64 > capacity`, every weight `>= 1`, and the values' total
/// fits in `V`.
fn fill_keep_table<V: DpValue>(
    weights: &[usize],
    values: &[u64],
    capacity: usize,
    row_words: usize,
    words: usize,
) -> Result<Vec<u64>, TryReserveError> {
    let row_len = capacity.saturating_add(1);
    let mut old: Vec<V> = zeroed(row_len)?;
    let mut new: Vec<V> = zeroed(row_len)?;
    let mut keep: Vec<u64> = zeroed(words)?;
    for ((&dw, &v), row) in weights
        .iter()
        .zip(values)
        .zip(keep.chunks_exact_mut(row_words))
    {
        // A zero value can never beat `dp[w]` strictly (dp is non-decreasing in
        // w), so skipping it leaves the table exactly as the full loop would.
        if dw > capacity || v == 0 {
            continue;
        }
        let dv = V::from_u64(v);
        new[..dw].copy_from_slice(&old[..dw]);
        // One 64-bit keep word at a time, w in [lo, hi] within the word.
        for (k, word) in row.iter_mut().enumerate().skip(dw / 64) {
            let base = k * 64;
            let lo = dw.max(base);
            let hi = capacity.min(base + 63);
            let current = &old[lo..=hi];
            let shifted = &old[lo - dw..=hi - dw];
            let mut bits = 0u64;
            for (j, ((out, &cur), &prev)) in new[lo..=hi]
                .iter_mut()
                .zip(current)
                .zip(shifted)
                .enumerate()
            {
                let with_item = prev + dv;
                let take = with_item > cur; // strictly better only
                *out = if take { with_item } else { cur };
                bits |= u64::from(take) << j;
            }
            *word = bits << (lo - base);
        }
        std::mem::swap(&mut old, &mut new);
    }
    Ok(keep)
}

impl KnapsackSlice {
    /// The table guard, before any table allocation: a table of `n` rows of
    /// `row_len` cells taking `keep_bytes`, worked through with two DP rows
    /// taking `row_bytes`, must stay within both limits (the byte guard
    /// counts both: a single candidate's rows would otherwise be bounded by
    /// the capacity alone).
    fn check_table(
        &self,
        n: usize,
        row_len: u128,
        keep_bytes: u128,
        row_bytes: u128,
    ) -> Result<(), CupelError> {
        let cells = (n as u128) * row_len;
        let limit = if keep_bytes.saturating_add(row_bytes) > u128::from(self.max_table_bytes) {
            TableLimit::Bytes(self.max_table_bytes)
        } else if cells > u128::from(self.max_table_cells) {
            TableLimit::Cells(self.max_table_cells)
        } else {
            return Ok(());
        };
        Err(CupelError::TableTooLarge {
            candidates: n,
            // row_len <= 2^63: the capacity is a non-negative i64.
            capacity: u64::try_from(row_len).unwrap_or(u64::MAX),
            cells,
            keep_bytes,
            row_bytes,
            limit,
        })
    }
}

impl Slicer for KnapsackSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        if crate::inner::nothing_to_slice("KnapsackSlice", items, budget)? {
            return Ok(SliceOutcome::default());
        }
        let mut selected = Vec::new();
        let mut candidates: Vec<usize> = Vec::new();
        for (i, s) in items.iter().enumerate() {
            match s.item.tokens() {
                0 => selected.push(i),
                t if t > 0 => candidates.push(i),
                _ => {} // negative: never selected (see type docs)
            }
        }
        let n = candidates.len();
        if n == 0 {
            return Ok(SliceOutcome::selected(selected));
        }
        let capacity = budget.target_tokens / self.bucket_size; // target > 0, bucket > 0
        if capacity == 0 {
            return Ok(SliceOutcome::selected(selected));
        }

        // ----- table guard (before any table allocation) -----
        let row_len = u128::from(capacity.unsigned_abs()) + 1;
        // The DP value width the fill will use: the narrowest that holds the
        // values' total (see `fill_keep_table` below).
        let values: Vec<u64> = candidates
            .iter()
            .map(|&i| scaled_value(items[i].score))
            .collect();
        let value_total: u128 = values.iter().map(|&v| u128::from(v)).sum();
        let width: u128 = if value_total <= u128::from(u32::MAX) {
            4
        } else if value_total <= u128::from(u64::MAX) {
            8
        } else {
            16
        };
        // One bit per cell, rows rounded up to 64-bit words; two DP rows.
        let keep_bytes = (n as u128) * row_len.div_ceil(64) * 8;
        self.check_table(n, row_len, keep_bytes, 2 * row_len * width)?;
        let too_big = || {
            CupelError::SlicerConfig(format!(
                "KnapsackSlice: a keep table of {n} x {row_len} cells cannot be addressed or allocated on this platform"
            ))
        };
        let capacity = usize::try_from(capacity).map_err(|_| too_big())?;
        let row_words = capacity / 64 + 1; // ceil((capacity + 1) / 64)
        let words = n.checked_mul(row_words).ok_or_else(too_big)?;

        // ----- parallel arrays -----
        let mut weights = Vec::with_capacity(n);
        for &i in &candidates {
            let dw = ceil_div(items[i].item.tokens(), self.bucket_size);
            // Anything heavier than the capacity never fits: store capacity + 1.
            weights.push(usize::try_from(dw).map_or(capacity + 1, |w| w.min(capacity + 1)));
        }

        // The width chosen for the guard above.
        let keep = if width == 4 {
            fill_keep_table::<u32>(&weights, &values, capacity, row_words, words)
        } else if width == 8 {
            fill_keep_table::<u64>(&weights, &values, capacity, row_words, words)
        } else {
            fill_keep_table::<u128>(&weights, &values, capacity, row_words, words)
        }
        .map_err(|_| too_big())?;

        // ----- reconstruction: i = n-1 down to 0 -----
        let mut remaining = capacity;
        for i in (0..n).rev() {
            let word = keep[i * row_words + remaining / 64];
            if word >> (remaining % 64) & 1 == 1 {
                selected.push(candidates[i]);
                // A set keep bit at `remaining` implies weights[i] <= remaining.
                remaining = remaining.saturating_sub(weights[i]);
            }
        }
        Ok(SliceOutcome::selected(selected))
    }

    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        if crate::inner::nothing_to_slice("KnapsackSlice", items, budget)? {
            return Ok(VariantOutcome::default());
        }
        let mut out = VariantOutcome::default();
        let mut candidates: Vec<usize> = Vec::new();
        for (i, s) in items.iter().enumerate() {
            match s.item.tokens() {
                0 => out.outcome.selected.push(i),
                t if t > 0 => candidates.push(i),
                _ => {}
            }
        }
        let capacity = budget.target_tokens / self.bucket_size;
        if candidates.is_empty() || capacity == 0 {
            // A variant of 0 tokens would still fit, but with no capacity
            // there is nothing to weigh: the plain rule (zero-token items only).
            return Ok(out);
        }
        let n = candidates.len();
        let row_len = u128::from(capacity.unsigned_abs()) + 1;
        // Two bytes per cell: the form chosen at each (item, capacity); two
        // DP rows of u128 values.
        self.check_table(n, row_len, (n as u128) * row_len * 2, 2 * row_len * 16)?;
        let too_big = || {
            CupelError::SlicerConfig(format!(
                "KnapsackSlice: a choice table of {n} x {row_len} cells cannot be addressed or allocated on this platform"
            ))
        };
        let capacity = usize::try_from(capacity).map_err(|_| too_big())?;
        let row = capacity + 1;
        let cells = n.checked_mul(row).ok_or_else(too_big)?;

        // Per candidate, its forms as (weight, value); forms too heavy for
        // the capacity are never taken (weight capacity + 1).
        let mut forms: Vec<Vec<(usize, u128)>> = Vec::with_capacity(n);
        for &i in &candidates {
            let item = items[i].item;
            let count = form_count(item);
            if count > usize::from(u16::MAX) {
                return Err(CupelError::SlicerConfig(format!(
                    "KnapsackSlice: an item has {} variants; at most {} are supported",
                    count - 1,
                    u16::MAX - 1
                )));
            }
            let mut f = Vec::with_capacity(count);
            for form in 0..count {
                let dw = match form_tokens(item, form) {
                    0 => 0,
                    t => ceil_div(t, self.bucket_size),
                };
                let w = usize::try_from(dw).map_or(capacity + 1, |w| w.min(capacity + 1));
                let score = if form == 0 {
                    items[i].score
                } else {
                    items[i].score * item.variant_value(form).unwrap_or(0.0)
                };
                f.push((w, u128::from(scaled_value(score))));
            }
            forms.push(f);
        }
        let mut old: Vec<u128> = zeroed(row).map_err(|_| too_big())?;
        let mut new: Vec<u128> = zeroed(row).map_err(|_| too_big())?;
        let mut choice: Vec<u16> = zeroed(cells).map_err(|_| too_big())?;
        for (f, chosen) in forms.iter().zip(choice.chunks_exact_mut(row)) {
            for w in 0..row {
                let mut best = old[w];
                let mut pick = 0u16;
                for (k, &(dw, dv)) in f.iter().enumerate() {
                    if dw <= w && dv > 0 && old[w - dw] + dv > best {
                        best = old[w - dw] + dv;
                        // k < u16::MAX: checked above.
                        pick = u16::try_from(k + 1).unwrap_or(u16::MAX);
                    }
                }
                new[w] = best;
                chosen[w] = pick;
            }
            std::mem::swap(&mut old, &mut new);
        }
        // Reconstruction, last candidate first (as the plain knapsack).
        let mut remaining = capacity;
        let mut taken: Vec<(usize, usize)> = Vec::new();
        for c in (0..n).rev() {
            let pick = usize::from(choice[c * row + remaining]);
            if pick > 0 {
                let form = pick - 1;
                taken.push((candidates[c], form));
                remaining = remaining.saturating_sub(forms[c][form].0);
            }
        }
        let total = taken.iter().fold(0i64, |acc, &(i, form)| {
            acc.saturating_add(form_tokens(items[i].item, form))
        });
        for (i, form) in taken {
            out.outcome.selected.push(i);
            if form > 0 {
                // The room the item had: the target minus everything else taken.
                let own = form_tokens(items[i].item, form);
                let room = budget
                    .target_tokens
                    .saturating_sub(total.saturating_sub(own));
                out.picks
                    .push(VariantPick::new(i, form, reason(items[i].item, form, room)));
            }
        }
        Ok(out)
    }

    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::Knapsack
    }

    fn is_monotonic(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{budget, item, scored};

    fn run(
        k: &KnapsackSlice,
        items: &[cupel_core::ContextItem],
        scores: &[f64],
        target: i64,
    ) -> Vec<usize> {
        let s = scored(items, scores);
        k.slice(&s, budget(target)).unwrap().selected
    }

    fn k(bucket: i64) -> KnapsackSlice {
        KnapsackSlice::new(bucket).unwrap()
    }

    // ----- construction -----

    #[test]
    fn bucket_size_must_be_positive() {
        for b in [0, -1, i64::MIN] {
            let err = KnapsackSlice::new(b).unwrap_err();
            assert!(
                matches!(err, CupelError::SlicerConfig(ref m) if m.contains(&format!("got {b}")))
            );
        }
        assert_eq!(KnapsackSlice::default().bucket_size(), 100);
        assert_eq!(KnapsackSlice::default().max_table_cells(), u64::MAX);
        assert_eq!(KnapsackSlice::default().max_table_bytes(), 64 << 20);
    }

    // ----- edge-case table of the specification -----

    #[test]
    fn empty_input_selects_nothing() {
        assert!(run(&k(1), &[], &[], 100).is_empty());
    }

    #[test]
    fn non_positive_target_selects_nothing() {
        let items = [item("z", 0), item("a", 1)];
        assert!(run(&k(1), &items, &[0.5, 0.5], 0).is_empty());
        assert!(run(&k(1), &items, &[0.5, 0.5], -1).is_empty());
    }

    #[test]
    fn all_zero_token_items_selected() {
        let items = [item("a", 0), item("b", 0)];
        assert_eq!(run(&k(100), &items, &[0.1, 0.2], 5), vec![0, 1]);
    }

    #[test]
    fn zero_capacity_after_discretisation_keeps_only_zero_token_items() {
        // capacity = floor(99 / 100) = 0.
        let items = [item("a", 10), item("z", 0)];
        assert_eq!(run(&k(100), &items, &[0.9, 0.1], 99), vec![1]);
    }

    #[test]
    fn all_items_exceed_discretised_capacity() {
        // bucket 100, target 250 -> capacity 2; weights ceil(201/100) = 3, ceil(300/100) = 3.
        let items = [item("a", 201), item("z", 0), item("b", 300)];
        assert_eq!(run(&k(100), &items, &[0.9, 0.1, 0.8], 250), vec![1]);
    }

    #[test]
    fn single_candidate_that_fits_plus_zero_token_items() {
        // weight ceil(150/100) = 2 <= capacity floor(200/100) = 2.
        let items = [item("a", 150), item("z", 0)];
        assert_eq!(run(&k(100), &items, &[0.5, 0.0], 200), vec![1, 0]);
    }

    // ----- discretisation -----

    #[test]
    fn ceil_weights_and_floor_capacity_never_overfill() {
        // bucket 100, target 299 -> capacity floor(299/100) = 2.
        // weights: a ceil(101/100) = 2, b ceil(100/100) = 1, c ceil(99/100) = 1.
        // values: a 9900, b 5000, c 4000. Subsets of weight <= 2: {a} = 9900,
        // {b, c} = 9000 -> {a}, even though a + b = 201 real tokens would fit.
        let items = [item("a", 101), item("b", 100), item("c", 99)];
        assert_eq!(run(&k(100), &items, &[0.99, 0.5, 0.4], 299), vec![0]);
        // Bucket 1 sees the real weights: a+b = 201 <= 299, value 14900 beats
        // a+c (13900) and b+c (9000); a+b+c = 300 > 299.
        assert_eq!(run(&k(1), &items, &[0.99, 0.5, 0.4], 299), vec![1, 0]);
    }

    #[test]
    fn score_scaling_floors_to_four_decimals() {
        assert_eq!(scaled_value(0.5), 5000);
        // 0.57 * 10000 = 5699.999999999999 in f64 -> floor 5699 (not 5700).
        assert_eq!(scaled_value(0.57), 5699);
        assert_eq!(scaled_value(0.29), 2900); // 0.29 * 10000 is exactly 2900.0
        assert_eq!(scaled_value(0.00009), 0); // below 1e-4 -> 0
        assert_eq!(scaled_value(-0.5), 0);
        assert_eq!(scaled_value(f64::NAN), 0);
        assert_eq!(scaled_value(f64::INFINITY), u64::MAX);
    }

    #[test]
    fn zero_value_items_are_never_selected_by_the_dp() {
        // value floor(0.00001 * 10000) = 0: can never beat dp[w] strictly.
        let items = [item("a", 10), item("b", 10)];
        assert_eq!(
            run(&k(1), &items, &[0.00001, 0.0], 100),
            Vec::<usize>::new()
        );
    }

    // ----- DP details -----

    #[test]
    fn strict_improvement_keeps_the_earlier_of_equal_items() {
        // Two identical items, room for one. Item 0 sets dp[1] = 5000 first;
        // item 1 offers dp[0] + 5000 = 5000, not > 5000, so no keep bit.
        let items = [item("a", 1), item("b", 1)];
        assert_eq!(run(&k(1), &items, &[0.5, 0.5], 1), vec![0]);
    }

    #[test]
    fn output_is_zero_token_items_then_reconstruction_order() {
        // All fit (bucket 1: 10+20+30 = 60 <= 60). Reconstruction walks 3,2,0
        // (candidate indices 2,1,0 -> input 3,2,0); zero-token item 1 first.
        let items = [item("a", 10), item("z", 0), item("b", 20), item("c", 30)];
        assert_eq!(
            run(&k(1), &items, &[0.9, 0.5, 0.8, 0.7], 60),
            vec![1, 3, 2, 0]
        );
    }

    #[test]
    fn beats_greedy_where_density_misleads() {
        // Target 100, bucket 1. a: 51 tokens, 0.9 (density .0176); b, c: 50 tokens,
        // 0.6 each (density .012). Greedy takes a only (9000). Knapsack: b + c =
        // 12000 > 9000.
        let items = [item("a", 51), item("b", 50), item("c", 50)];
        assert_eq!(run(&k(1), &items, &[0.9, 0.6, 0.6], 100), vec![2, 1]);
    }

    #[test]
    fn rows_wider_than_one_word() {
        // capacity 200 (bucket 1): rows span 4 words. a: 130, b: 70, c: 71.
        // values 9000, 5000, 5100. Feasible best: a + b = 200 -> 14000;
        // a + c = 201 > 200; b + c = 141 -> 10100.
        let items = [item("a", 130), item("b", 70), item("c", 71)];
        assert_eq!(run(&k(1), &items, &[0.9, 0.5, 0.51], 200), vec![1, 0]);
    }

    #[test]
    fn negative_token_items_are_never_selected() {
        let items = [item("neg", -5), item("a", 10)];
        assert_eq!(run(&k(1), &items, &[0.9, 0.5], 10), vec![1]);
    }

    #[test]
    fn huge_values_use_the_wide_path() {
        // Huge scores saturate to u64::MAX; two of them sum past u64::MAX.
        // Room for both (bucket 1, 1 + 1 <= 2): both selected, no wraparound.
        let items = [item("a", 1), item("b", 1), item("c", 1)];
        let out = run(&k(1), &items, &[1e300, 1e300, 0.5], 2);
        assert_eq!(out, vec![1, 0]);
    }

    // ----- table guard -----

    #[test]
    fn table_over_the_guard_is_an_error_with_the_numbers() {
        // 3 candidates x (floor(1000/10) + 1 = 101) = 303 cells > 300.
        let items = [item("a", 10), item("b", 10), item("c", 10), item("z", 0)];
        let slicer = k(10).with_max_table_cells(300);
        let err = slicer
            .slice(&scored(&items, &[0.1; 4]), budget(1000))
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::TableTooLarge {
                candidates: 3,
                capacity: 101,
                cells: 303,
                keep_bytes: 3 * 2 * 8,
                // Two rows of 101 buckets, u32 values (total 3 x 1000).
                row_bytes: 2 * 101 * 4,
                limit: TableLimit::Cells(300)
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("3 candidates") && msg.contains("101") && msg.contains("303"));
        // Exactly at the limit is allowed.
        let ok = k(10).with_max_table_cells(303);
        assert!(ok.slice(&scored(&items, &[0.1; 4]), budget(1000)).is_ok());
    }

    #[test]
    fn guard_handles_extreme_targets_without_overflow() {
        // capacity = i64::MAX: cells = 1 x (2^63) > default guard.
        let items = [item("a", 10)];
        let err = k(1)
            .slice(&scored(&items, &[0.5]), budget(i64::MAX))
            .unwrap_err();
        assert!(matches!(
            err,
            CupelError::TableTooLarge { candidates: 1, capacity, cells, .. }
                if capacity == 1u64 << 63 && cells == 1u128 << 63
        ));
    }

    #[test]
    fn unallocatable_tables_are_errors_not_aborts() {
        // Guard lifted, one candidate, capacity 1.5e18 buckets: each DP row
        // would need 1.5e18 x 4 = 6e18 bytes, which no address space holds,
        // while rows and keep table (2 x 6e18 + 1.875e17 bytes) stay within a
        // u64::MAX guard. Every buffer is reserved fallibly (the DP rows used
        // to be `vec!`s, which abort the process when the allocator says no —
        // seen with capacity ~1e10 on a 23 GB machine, where the 1.2 GB keep
        // table fitted and the 40 GB rows did not).
        let items = [item("a", 10)];
        let err = k(1)
            .with_max_table_cells(u64::MAX)
            .with_max_table_bytes(u64::MAX)
            .slice(&scored(&items, &[0.5]), budget(1_500_000_000_000_000_000))
            .unwrap_err();
        assert!(
            matches!(&err, CupelError::SlicerConfig(m) if m.contains("cannot be addressed or allocated")),
            "{err}"
        );
    }

    #[test]
    fn the_guard_is_bytes_of_keep_table_and_says_what_to_change() {
        // Issue 18 (8): `max_table_cells = u64::MAX` with an i64::MAX budget
        // used to say "... 18446744073709551615 cells, limit is
        // 18446744073709551615". The byte guard (64 MiB) now trips, with
        // exact (unsaturated) numbers.
        let items = [item("a", 10), item("b", 10)];
        let err = k(1)
            .with_max_table_cells(u64::MAX)
            .slice(&scored(&items, &[0.5, 0.5]), budget(i64::MAX))
            .unwrap_err();
        let CupelError::TableTooLarge {
            cells,
            keep_bytes,
            limit,
            ..
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!(*cells, 2 * (1u128 << 63));
        assert_eq!(*keep_bytes, 2 * (1u128 << 57) * 8);
        assert_eq!(*limit, TableLimit::Bytes(DEFAULT_MAX_TABLE_BYTES));
        let msg = err.to_string();
        assert!(msg.contains("18446744073709551616 cells"), "{msg}");
        assert!(
            msg.contains("max_table_bytes guard of 67108864 bytes"),
            "{msg}"
        );
        assert!(msg.contains("raise the knapsack `bucket_size`"), "{msg}");
        assert!(!msg.contains("limit is"), "{msg}");
        // One row of 64 Mi x 8 bits is a 64 MiB keep table.
        let cap = 64 * 1024 * 1024 * 8 - 1;
        let t = k(1).table_size(1, cap);
        assert_eq!(t.keep_bytes, DEFAULT_MAX_TABLE_BYTES);
    }

    #[test]
    fn the_dp_rows_count_towards_the_byte_guard() {
        // Found by the pipeline fuzz target: one candidate, bucket 1, target
        // 300,000,000. Row length L = 300,000,001: a keep table of
        // ceil(L / 64) = 4,687,501 words = 37,500,008 bytes, within 64 MiB,
        // but two u32 rows of 2 x L x 4 = 2,400,000,008 bytes (the old guard
        // let 2.4 GB through). Together 2,437,500,016 > 67,108,864.
        let items = [item("a", 10)];
        let err = k(1)
            .slice(&scored(&items, &[0.5]), budget(300_000_000))
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::TableTooLarge {
                candidates: 1,
                capacity: 300_000_001,
                cells: 300_000_001,
                keep_bytes: 37_500_008,
                row_bytes: 2_400_000_008,
                limit: TableLimit::Bytes(DEFAULT_MAX_TABLE_BYTES)
            }
        );
        assert!(
            err.to_string()
                .contains("a keep table of 37500008 bytes and DP rows of 2400000008 bytes"),
            "{err}"
        );
        // The boundary, with a small guard: target 639 gives L = 640, a keep
        // table of 10 words = 80 bytes and rows of 2 x 640 x 4 = 5,120 bytes:
        // 5,200 in all. A guard of 5,200 holds it; 5,199 does not.
        let scored_a = scored(&items, &[0.5]);
        assert_eq!(
            k(1).with_max_table_bytes(5_200)
                .slice(&scored_a, budget(639))
                .unwrap()
                .selected,
            vec![0]
        );
        assert_eq!(
            k(1).with_max_table_bytes(5_199)
                .slice(&scored_a, budget(639))
                .unwrap_err(),
            CupelError::TableTooLarge {
                candidates: 1,
                capacity: 640,
                cells: 640,
                keep_bytes: 80,
                row_bytes: 5_120,
                limit: TableLimit::Bytes(5_199)
            }
        );
    }

    #[test]
    fn non_finite_scores_are_rejected() {
        // Issue 18 (7): one rule everywhere; a slicer given NaN or ±inf fails
        // naming itself and the position.
        let items = [item("a", 10), item("b", 10)];
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = k(1)
                .slice(&scored(&items, &[0.5, bad]), budget(100))
                .unwrap_err();
            assert!(
                matches!(&err, CupelError::NonFiniteScore { index: 1, scorer, .. } if scorer.contains("KnapsackSlice")),
                "{err}"
            );
        }
    }

    #[test]
    fn table_size_reports_memory() {
        let t = KnapsackSlice::default().table_size(1_000, 250_000);
        // capacity 2500 -> row 2501 -> 40 words -> 1000 * 40 * 8 bytes.
        assert_eq!(t.cells, 2_501_000);
        assert_eq!(t.keep_bytes, 320_000);
        assert_eq!(t.dp_bytes, 20_008);
        // 50M cells at 1/8 byte each = 6.25 MB (one row of 50M cells, 781,250 words).
        let t = k(1).table_size(1, 49_999_999);
        assert_eq!(t.cells, 50_000_000);
        assert_eq!(t.keep_bytes, 6_250_000);
    }

    #[test]
    fn reports_kind_and_monotonicity() {
        assert_eq!(k(1).slicer_kind(), SlicerKind::Knapsack);
        assert!(k(1).is_monotonic());
    }
}
