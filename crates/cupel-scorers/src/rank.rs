//! The rank computation shared by [`RecencyScorer`](crate::RecencyScorer) and
//! [`PriorityScorer`](crate::PriorityScorer).
//!
//! Both scorers give an item with key `k` the score
//! `rank / (count - 1)`, where `count` is the number of items that have a key
//! and `rank` the number of those whose key is strictly smaller than `k`.
//! Items without a key score 0.0; when at most one item has a key, that item
//! scores 1.0.

/// The reference algorithm for one item: one scan over the peers, O(N).
pub(crate) fn rank_score_one<K, I>(key: Option<K>, keys: I) -> f64
where
    K: Ord,
    I: IntoIterator<Item = Option<K>>,
{
    let Some(key) = key else {
        return 0.0;
    };
    let mut count: u64 = 0;
    let mut rank: u64 = 0;
    for other in keys.into_iter().flatten() {
        count += 1;
        if other < key {
            rank += 1;
        }
    }
    if count <= 1 {
        return 1.0;
    }
    rank as f64 / (count - 1) as f64
}

/// The whole pass: one sort of the keyed items, O(N log N).
///
/// After sorting, every item of a run of equal keys gets the run's start
/// position as its rank — exactly the number of keys strictly smaller — so the
/// result equals [`rank_score_one`] bit for bit (same integers, same division).
pub(crate) fn rank_scores_all<K, I>(n: usize, keys: I) -> Vec<f64>
where
    K: Ord,
    I: IntoIterator<Item = Option<K>>,
{
    // At most `n` keyed items: allocated once (a collected `filter_map`
    // would grow the buffer by doubling, copying it each time).
    let mut keyed = Vec::with_capacity(n);
    keyed.extend(
        keys.into_iter()
            .enumerate()
            .filter_map(|(i, k)| k.map(|k| (k, i))),
    );
    rank_keyed(n, keyed)
}

/// Like [`rank_scores_all`], with the keys computed by `key`, giving up
/// (returning `None`) as soon as `key` returns `None`; used for fast keys that
/// exist for most inputs.
pub(crate) fn try_rank_scores_all<T, I, F>(n: usize, values: I, key: F) -> Option<Vec<f64>>
where
    I: IntoIterator<Item = Option<T>>,
    F: Fn(T) -> Option<i64>,
{
    let mut keyed: Vec<(u64, usize)> = Vec::with_capacity(n);
    for (i, v) in values.into_iter().enumerate() {
        if let Some(v) = v {
            keyed.push((unsigned(key(v)?), i));
        }
    }
    Some(rank_keyed_u64(n, keyed))
}

/// [`rank_scores_all`] for integer keys (priorities, timestamps in
/// nanoseconds): the same scores, bit for bit, with the keys ordered by a
/// radix sort ([`cupel_core::sort_by_key_stable`]).
pub(crate) fn rank_i64_scores_all<I>(n: usize, keys: I) -> Vec<f64>
where
    I: IntoIterator<Item = Option<i64>>,
{
    // Allocated once at its largest size, as in `rank_scores_all`.
    let mut keyed = Vec::with_capacity(n);
    keyed.extend(
        keys.into_iter()
            .enumerate()
            .filter_map(|(i, k)| k.map(|k| (unsigned(k), i))),
    );
    rank_keyed_u64(n, keyed)
}

/// `k` with its sign bit flipped: maps the order of `i64` onto `u64`.
fn unsigned(k: i64) -> u64 {
    (k as u64) ^ (1 << 63)
}

fn rank_keyed_u64(n: usize, mut keyed: Vec<(u64, usize)>) -> Vec<f64> {
    cupel_core::sort_by_key_stable(&mut keyed);
    ranks(n, &keyed)
}

/// Scores from `(key, item index)` pairs of the keyed items (indices `< n`).
fn rank_keyed<K: Ord>(n: usize, mut keyed: Vec<(K, usize)>) -> Vec<f64> {
    // Unstable is fine: ties get the same rank whatever their order.
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    ranks(n, &keyed)
}

/// The scores of `keyed` sorted by key (equal keys in any order): every item
/// of a run of equal keys gets the run's start position as its rank.
fn ranks<K: PartialEq>(n: usize, keyed: &[(K, usize)]) -> Vec<f64> {
    let mut out = vec![0.0; n];
    let count = keyed.len();
    if count <= 1 {
        for &(_, i) in keyed {
            if let Some(slot) = out.get_mut(i) {
                *slot = 1.0;
            }
        }
        return out;
    }
    let denominator = (count - 1) as f64;
    let mut run_start = 0usize;
    for pos in 0..count {
        if pos > 0 && keyed[pos].0 != keyed[pos - 1].0 {
            run_start = pos;
        }
        if let Some(slot) = out.get_mut(keyed[pos].1) {
            *slot = run_start as f64 / denominator;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_matches_reference_on_ties_and_nulls() {
        let keys = [Some(3), None, Some(1), Some(3), Some(2), None, Some(1)];
        let batch = rank_scores_all(keys.len(), keys);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(batch[i], rank_score_one(*k, keys), "index {i}");
        }
        // Keyed: 3,1,3,2,1 -> count 5, denominator 4.
        // key 3: two smaller-keyed items below (1,1) plus 2 -> rank 3 -> 0.75.
        // key 2: rank 2 (the two 1s) -> 0.5; key 1: rank 0 -> 0.0; null -> 0.0.
        assert_eq!(batch, vec![0.75, 0.0, 0.0, 0.75, 0.5, 0.0, 0.0]);
        assert_eq!(rank_i64_scores_all(keys.len(), keys), batch);
    }

    #[test]
    fn integer_path_orders_signed_keys_at_the_extremes() {
        // Keyed: MAX, -1, MIN, 0, -1 -> count 5, denominator 4. Ascending:
        // MIN (rank 0), -1 -1 (rank 1), 0 (rank 3), MAX (rank 4):
        // MAX 4/4 = 1.0, -1 1/4 = 0.25, MIN 0.0, 0 3/4 = 0.75.
        let keys = [
            Some(i64::MAX),
            Some(-1),
            None,
            Some(i64::MIN),
            Some(0),
            Some(-1),
        ];
        let expected = vec![1.0, 0.25, 0.0, 0.0, 0.75, 0.25];
        assert_eq!(rank_i64_scores_all(keys.len(), keys), expected);
        assert_eq!(rank_scores_all(keys.len(), keys), expected);
        let tried = try_rank_scores_all(keys.len(), keys, Some);
        assert_eq!(tried, Some(expected));
    }

    proptest::proptest! {
        #[test]
        fn integer_path_equals_the_reference(
            keys in proptest::collection::vec(
                proptest::option::of(proptest::prop_oneof![
                    -3i64..3,
                    proptest::num::i64::ANY,
                ]),
                0..300,
            ),
        ) {
            let fast = rank_i64_scores_all(keys.len(), keys.iter().copied());
            let generic = rank_scores_all(keys.len(), keys.iter().copied());
            proptest::prop_assert_eq!(&fast, &generic);
            for (i, k) in keys.iter().enumerate() {
                proptest::prop_assert_eq!(fast[i], rank_score_one(*k, keys.iter().copied()));
            }
        }
    }

    #[test]
    fn single_keyed_item_scores_one() {
        let keys = [None, Some(7), None];
        assert_eq!(rank_scores_all(3, keys), vec![0.0, 1.0, 0.0]);
        assert_eq!(rank_i64_scores_all(3, keys), vec![0.0, 1.0, 0.0]);
        assert_eq!(rank_score_one(Some(7), keys), 1.0);
    }
}
