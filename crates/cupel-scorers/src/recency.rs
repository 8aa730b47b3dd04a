//! [`RecencyScorer`]: rank by timestamp.

use chrono::{DateTime, Utc};
use cupel_core::{ContextItem, Scorer};

use crate::rank::{rank_i64_scores_all, rank_score_one, rank_scores_all, try_rank_scores_all};

/// A timestamp as nanoseconds since the Unix epoch: an order-preserving,
/// one-to-one key for instants between the years 1677 and 2262 that are not
/// leap seconds (chrono marks those with a sub-second part of 1e9 or more).
fn nanos_key(t: DateTime<Utc>) -> Option<i64> {
    if t.timestamp_subsec_nanos() >= 1_000_000_000 {
        return None;
    }
    t.timestamp_nanos_opt()
}

/// Ranks items by timestamp: the most recent scores 1.0, the oldest 0.0, the
/// rest evenly in between.
///
/// An item's score is `rank / (count - 1)`, where `count` is the number of
/// items *with* a timestamp and `rank` the number of those strictly older than
/// it. So:
///
/// * items without a timestamp score 0.0 (and do not count);
/// * items with equal timestamps share a rank and a score;
/// * a lone timestamped item scores 1.0 (it is the most recent by definition);
/// * if every timestamped item has the same timestamp, all score 0.0.
///
/// A relative scorer: an item's score depends on its peers.
///
/// # Performance
/// [`score`](Scorer::score) is the specification's reference algorithm, O(N)
/// per item. [`score_all`](Scorer::score_all) sorts the timestamped items once
/// and reads ranks off the sorted runs: O(N log N) for a whole pass, with
/// results identical to `score`.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::RecencyScorer;
///
/// let at = |h| Utc.with_ymd_and_hms(2025, 1, 1, h, 0, 0).unwrap();
/// let old = ContextItem::builder("old", 1).timestamp(at(8)).build()?;
/// let mid = ContextItem::builder("mid", 1).timestamp(at(9)).build()?;
/// let new = ContextItem::builder("new", 1).timestamp(at(10)).build()?;
/// let undated = ContextItem::new("undated", 1)?;
/// // 3 timestamped items -> denominator 2; ranks 0, 1, 2.
/// assert_eq!(RecencyScorer.score_all(&[&old, &mid, &new, &undated]), vec![0.0, 0.5, 1.0, 0.0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RecencyScorer;

impl RecencyScorer {
    /// The scorer (it has no configuration).
    pub fn new() -> Self {
        Self
    }
}

impl Scorer for RecencyScorer {
    /// The reference algorithm; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        let Some(item) = items.get(index) else {
            return f64::NAN;
        };
        rank_score_one(item.timestamp(), items.iter().map(|i| i.timestamp()))
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        let n = items.len();
        // Gather the timestamps first (a branch-free pass the CPU can overlap
        // memory reads in), then rank from the local copy. Integer keys sort
        // faster; fall back to comparing `DateTime`s when a timestamp is
        // outside their range.
        let stamps: Vec<Option<DateTime<Utc>>> = items.iter().map(|i| i.timestamp()).collect();
        // Whole-second timestamps (the usual case) rank by their seconds: the
        // same order, and a key of about 3 varying bytes instead of the 7 of
        // nanoseconds, so the radix sort makes fewer passes.
        if stamps
            .iter()
            .flatten()
            .all(|t| t.timestamp_subsec_nanos() == 0)
        {
            return rank_i64_scores_all(n, stamps.iter().map(|t| t.map(|t| t.timestamp())));
        }
        try_rank_scores_all(n, stamps.iter().copied(), nanos_key)
            .unwrap_or_else(|| rank_scores_all(n, stamps.iter().copied()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, TimeZone, Utc};

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 1, 1, h, 0, 0).unwrap()
    }

    fn item(name: &str, ts: Option<u32>) -> ContextItem {
        ContextItem::builder(name, 1)
            .timestamp_opt(ts.map(at))
            .build()
            .unwrap()
    }

    fn both(items: &[ContextItem]) -> Vec<f64> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        let batch = RecencyScorer.score_all(&refs);
        let single: Vec<f64> = (0..refs.len())
            .map(|i| RecencyScorer.score(i, &refs))
            .collect();
        assert_eq!(batch, single);
        batch
    }

    // Edge-case table, row 1: item.timestamp is null -> 0.0.
    #[test]
    fn null_timestamp_scores_zero() {
        // Timestamped: 8h, 9h -> denominator 1; 9h has rank 1 -> 1.0; the
        // undated item is 0.0 whatever its peers.
        assert_eq!(
            both(&[item("a", Some(8)), item("b", None), item("c", Some(9))]),
            vec![0.0, 0.0, 1.0]
        );
    }

    // Row 2: all items have null timestamps -> all 0.0.
    #[test]
    fn all_null_scores_zero() {
        assert_eq!(both(&[item("a", None), item("b", None)]), vec![0.0, 0.0]);
    }

    // Row 3: only one item has a timestamp -> that item scores 1.0.
    #[test]
    fn lone_timestamp_scores_one() {
        assert_eq!(
            both(&[item("a", None), item("b", Some(5)), item("c", None)]),
            vec![0.0, 1.0, 0.0]
        );
        // A single item overall (the "single-item recency" optional vector).
        assert_eq!(both(&[item("solo", Some(5))]), vec![1.0]);
    }

    // Row 4: all share a timestamp -> all 0.0 (nobody is strictly older).
    #[test]
    fn all_tied_score_zero() {
        assert_eq!(
            both(&[item("a", Some(3)), item("b", Some(3)), item("c", Some(3))]),
            vec![0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn distinct_timestamps_are_evenly_spaced_and_ties_share() {
        // Timestamps 10, 8, 9, 9, 12 -> count 5, denominator 4.
        // ranks: 10 -> 3 (8, 9, 9 older); 8 -> 0; 9 -> 1 (8); 12 -> 4.
        assert_eq!(
            both(&[
                item("a", Some(10)),
                item("b", Some(8)),
                item("c", Some(9)),
                item("d", Some(9)),
                item("e", Some(12)),
            ]),
            vec![0.75, 0.0, 0.25, 0.25, 1.0]
        );
    }

    #[test]
    fn comparison_is_by_instant_not_by_offset_spelling() {
        // 2025-01-01T10:00:00+02:00 is 08:00Z: older than 09:00Z.
        let plus2 = DateTime::parse_from_rfc3339("2025-01-01T10:00:00+02:00")
            .unwrap()
            .with_timezone(&Utc);
        let a = ContextItem::builder("a", 1)
            .timestamp(plus2)
            .build()
            .unwrap();
        // Scores: a rank 0 -> 0.0, b rank 1 -> 1.0 (denominator 1).
        assert_eq!(both(&[a, item("b", Some(9))]), vec![0.0, 1.0]);
    }

    #[test]
    fn whole_seconds_and_sub_seconds_rank_alike() {
        let stamp = |s: &str| {
            ContextItem::builder("x", 1)
                .timestamp(DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc))
                .build()
                .unwrap()
        };
        let undated = ContextItem::builder("x", 1).build().unwrap();
        // All whole seconds (ranked by seconds): 10:00:01 twice, 10:00:00,
        // one undated. Three timestamped -> denominator 2; 10:00:00 has rank
        // 0 -> 0.0; both 10:00:01 have rank 1 -> 0.5; undated 0.0.
        let whole = [
            stamp("2025-01-01T10:00:01Z"),
            stamp("2025-01-01T10:00:00Z"),
            stamp("2025-01-01T10:00:01Z"),
            undated.clone(),
        ];
        assert_eq!(both(&whole), vec![0.5, 0.0, 0.5, 0.0]);
        // Before 1970 (negative seconds) still orders first: 0.0 and 1.0.
        let old = [stamp("2025-01-01T00:00:00Z"), stamp("1960-06-01T00:00:00Z")];
        assert_eq!(both(&old), vec![1.0, 0.0]);
        // One sub-second timestamp sends the whole pass to nanoseconds:
        // 10:00:00.5 lies between 10:00:00 and 10:00:01 -> ranks 0, 1, 2 of
        // denominator 2 -> 0.0, 0.5, 1.0.
        let mixed = [
            stamp("2025-01-01T10:00:01Z"),
            stamp("2025-01-01T10:00:00.5Z"),
            stamp("2025-01-01T10:00:00Z"),
        ];
        assert_eq!(both(&mixed), vec![1.0, 0.5, 0.0]);
    }

    #[test]
    fn far_timestamps_and_leap_seconds_take_the_exact_path() {
        use chrono::NaiveDate;
        // Year 1500 is outside the i64-nanosecond range: the DateTime path
        // ranks it. Order: 1500 < 2025-01-01T08 < 2025-01-01T09 -> 0, 0.5, 1.
        let old = ContextItem::builder("old", 1)
            .timestamp(Utc.with_ymd_and_hms(1500, 1, 1, 0, 0, 0).unwrap())
            .build()
            .unwrap();
        assert_eq!(
            both(&[item("b", Some(9)), old, item("a", Some(8))]),
            vec![1.0, 0.0, 0.5]
        );
        // A leap second (23:59:60.5) sorts after 23:59:59.9 and before the
        // next midnight.
        let day = NaiveDate::from_ymd_opt(2016, 12, 31).unwrap();
        let stamp = |h, m, s, ms| {
            let t = day.and_hms_milli_opt(h, m, s, ms).unwrap().and_utc();
            ContextItem::builder("t", 1).timestamp(t).build().unwrap()
        };
        let next = ContextItem::builder("next", 1)
            .timestamp(Utc.with_ymd_and_hms(2017, 1, 1, 0, 0, 0).unwrap())
            .build()
            .unwrap();
        // Ranks: next 2, leap 1, 23:59:59.900 0 -> 1.0, 0.5, 0.0.
        assert_eq!(
            both(&[next, stamp(23, 59, 59, 1_500), stamp(23, 59, 59, 900)]),
            vec![1.0, 0.5, 0.0]
        );
    }

    #[test]
    fn empty_input_and_bad_index() {
        assert!(RecencyScorer.score_all(&[]).is_empty());
        assert!(RecencyScorer.score(3, &[]).is_nan());
    }
}
