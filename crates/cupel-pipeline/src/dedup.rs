//! Deduplication's decision (D-3), apart from the stage that reports it:
//! given each candidate's content hash, content and score, which candidates
//! survive. The Deduplicate stage of the engine ([`crate::run`]) gathers the
//! candidates, calls [`survivors`], and reports the losers.

use std::collections::hash_map::Entry;

use cupel_core::score_cmp_desc;
use rustc_hash::FxHashMap;

/// Deduplication's decision (D-3): which of `len` candidates survive, in
/// input order. `hash(k)` is `None` when candidate `k` is not compared (a
/// multi-member group), else its content's hash; `content(k)` and
/// `score(k)` are its content and score. Among byte-identical contents the
/// best score survives, ties keep the earlier one.
///
/// Only looked up, never iterated: hash order cannot reach the output.
/// Candidates are keyed by the content hash each item carries, and the map
/// holds only the first candidate with that hash (16 bytes an entry), so a
/// content's bytes and a score are read only when another candidate has the
/// same hash. Three passes, each reading before it decides (on a large input
/// every probe of the map and every content is a cache miss, and a loop
/// that branches on each as it arrives waits them out one by one):
/// 1. by blocks of candidates, every hash looked up, then every candidate
///    entered: the first of its hash, or paired with that first one;
/// 2. both contents of every pair read;
/// 3. the pairs in input order: equal contents contest the best so far of
///    their group; a content that differs from its hash's first one goes to
///    `spill`, keyed by its bytes, and contests there.
pub(crate) fn survivors<'c>(
    len: usize,
    hash: impl Fn(usize) -> Option<u64>,
    content: impl Fn(usize) -> &'c str,
    score: impl Fn(usize) -> f64,
) -> Vec<bool> {
    survivors_from(len, hash, content, score, PARTITION_FROM)
}

/// [`survivors`], partitioning from `partition_from` candidates (a
/// parameter so that tests take both paths on small inputs).
///
/// On a large input one map of every hash is larger than the caches: each
/// probe is a miss, and the map's pages are faulted in afresh on every
/// run. So from `partition_from` candidates, they are first laid out by
/// the top byte of their hash, each with its hash, in candidate order
/// (one sequential pass), and each of the 256 partitions is decided alone
/// with a map sized for the largest, which stays in cache. Equal hashes
/// share a partition, and each partition is in candidate order, so every
/// decision is the same as with one map.
fn survivors_from<'c>(
    len: usize,
    hash: impl Fn(usize) -> Option<u64>,
    content: impl Fn(usize) -> &'c str,
    score: impl Fn(usize) -> f64,
    partition_from: usize,
) -> Vec<bool> {
    let mut survivor = vec![true; len];
    if len < partition_from || u32::try_from(len).is_err() {
        let mut first = FxHashMap::with_capacity_and_hasher(len, Default::default());
        let candidate = |k: usize| hash(k).map(|h| (k, h));
        decide(len, candidate, &content, &score, &mut first, &mut survivor);
        return survivor;
    }
    let part = |h: u64| (h >> 56) as usize;
    // Where each partition starts, then every compared candidate's (hash,
    // index) in its partition, in candidate order.
    let mut starts = vec![0usize; PARTITIONS + 1];
    for h in (0..len).filter_map(&hash) {
        starts[part(h) + 1] += 1;
    }
    for p in 0..PARTITIONS {
        starts[p + 1] += starts[p];
    }
    let mut fill = starts.clone();
    let mut laid: Vec<(u64, u32)> = vec![(0, 0); starts[PARTITIONS]];
    for k in 0..len {
        if let Some(h) = hash(k) {
            let slot = &mut fill[part(h)];
            // (k fits in u32: checked above.)
            laid[*slot] = (h, k as u32);
            *slot += 1;
        }
    }
    let largest = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut first = FxHashMap::with_capacity_and_hasher(largest, Default::default());
    for p in 0..PARTITIONS {
        let cands = &laid[starts[p]..starts[p + 1]];
        let candidate = |j: usize| cands.get(j).map(|&(h, k)| (k as usize, h));
        decide(
            cands.len(),
            candidate,
            &content,
            &score,
            &mut first,
            &mut survivor,
        );
        first.clear();
    }
    survivor
}

/// How many candidates [`survivors`] takes in one map; from this many on,
/// it partitions them by hash.
const PARTITION_FROM: usize = 1 << 16;

/// The partitions of [`survivors_from`]: one per value of a hash's top byte.
const PARTITIONS: usize = 256;

/// Decides `n` candidates, given in candidate order by `candidate(j)` as
/// (candidate index, hash), or `None` when not compared, with `first` (an
/// empty map) for the first candidate of each hash; marks the losers in
/// `survivor`. The three passes of [`survivors`].
fn decide<'c>(
    n: usize,
    candidate: impl Fn(usize) -> Option<(usize, u64)>,
    content: &impl Fn(usize) -> &'c str,
    score: &impl Fn(usize) -> f64,
    first: &mut FxHashMap<u64, usize>,
    survivor: &mut [bool],
) {
    // (candidate, the first candidate with its hash), in candidate order.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < n {
        let end = n.min(start + PROBE_AHEAD);
        let seen = (start..end)
            .filter_map(&candidate)
            .filter(|(_, h)| first.contains_key(h))
            .count();
        std::hint::black_box(seen);
        for (k, h) in (start..end).filter_map(&candidate) {
            match first.entry(h) {
                Entry::Vacant(v) => {
                    v.insert(k);
                }
                Entry::Occupied(o) => pairs.push((k, *o.get())),
            }
        }
        start = end;
    }
    if pairs.is_empty() {
        return;
    }
    let texts: Vec<(&str, &str)> = pairs
        .iter()
        .map(|&(k, head)| (content(k), content(head)))
        .collect();
    // Strictly better replaces; equal keeps the earlier one. Returns the
    // index that holds the content from now on.
    let contest = |held: usize, k: usize, survivor: &mut [bool]| {
        if score_cmp_desc(score(k), score(held)).is_lt() {
            survivor[held] = false;
            k
        } else {
            survivor[k] = false;
            held
        }
    };
    // The best so far of each group, by its first candidate.
    let mut best: FxHashMap<usize, usize> = FxHashMap::default();
    let mut spill: FxHashMap<&'c str, usize> = FxHashMap::default();
    for (&(k, head), &(mine, theirs)) in pairs.iter().zip(&texts) {
        let slot = if mine == theirs {
            best.entry(head).or_insert(head)
        } else {
            match spill.entry(mine) {
                Entry::Vacant(v) => {
                    v.insert(k);
                    continue;
                }
                Entry::Occupied(s) => s.into_mut(),
            }
        };
        *slot = contest(*slot, k, survivor);
    }
}

/// How many candidates [`survivors`] looks up before entering them.
const PROBE_AHEAD: usize = 64;

#[cfg(test)]
mod tests {
    use super::survivors_from;
    use cupel_core::score_cmp_desc;

    /// The decision with one map and with partitions (which must agree).
    fn run_survivors(candidates: &[Option<(u64, &str, f64)>]) -> Vec<bool> {
        let run = |partition_from| {
            survivors_from(
                candidates.len(),
                |k| candidates[k].map(|c| c.0),
                |k| candidates[k].map_or("", |c| c.1),
                |k| candidates[k].map_or(f64::NAN, |c| c.2),
                partition_from,
            )
        };
        let one_map = run(usize::MAX);
        assert_eq!(run(0), one_map, "partitioned and one-map decisions differ");
        one_map
    }

    #[test]
    fn contents_under_one_hash_are_told_apart_by_their_bytes() {
        // A forced collision: "a" and "b" both hash to 7. #4 is a group
        // member, never compared.
        let candidates = [
            Some((7, "a", 0.5)),
            Some((7, "b", 0.9)),
            Some((7, "a", 0.7)), // beats #0 (0.7 > 0.5)
            Some((7, "b", 0.9)), // ties #1: the earlier one stays
            None,
            Some((9, "c", 0.1)),
        ];
        let s = run_survivors(&candidates);
        assert_eq!(s, [false, true, true, false, true, true]);
    }

    #[test]
    fn a_spilled_content_keeps_its_own_best() {
        // "x" holds hash 3; "y" collides and spills; its second copy scores
        // higher and replaces the first, and "x" is untouched.
        let candidates = [
            Some((3, "x", 0.2)),
            Some((3, "y", 0.4)),
            Some((3, "y", 0.6)),
            Some((3, "x", 0.1)),
        ];
        let s = run_survivors(&candidates);
        assert_eq!(s, [true, false, true, false]);
    }

    proptest::proptest! {
        /// Against the definition, candidate by candidate, with one map
        /// and with partitions: a compared candidate survives when no other
        /// compared candidate with the same bytes scores better, or as well
        /// and earlier. Hashes collide on purpose (a content's hash is its
        /// number mod 3, in the top byte too, so that the three hashes fall
        /// in three partitions), so contents that share a hash but not
        /// their bytes are exercised too.
        #[test]
        fn survivors_match_the_definition(
            candidates in proptest::collection::vec(
                proptest::option::of((0u8..7, proptest::sample::select(vec![0.0, 0.5, 1.0, f64::NAN]))),
                0..40,
            ),
            partition_from in proptest::sample::select(vec![0usize, usize::MAX]),
        ) {
            let texts: Vec<String> = (0..7).map(|c| format!("c{c}")).collect();
            let got = survivors_from(
                candidates.len(),
                |k| candidates[k].map(|(c, _)| (u64::from(c % 3) << 56) | u64::from(c % 3)),
                |k| candidates[k].map_or("", |(c, _)| texts[usize::from(c)].as_str()),
                |k| candidates[k].map_or(f64::NAN, |(_, s)| s),
                partition_from,
            );
            for (k, c) in candidates.iter().enumerate() {
                let expected = match c {
                    None => true,
                    Some((mine, s)) => !candidates.iter().enumerate().any(|(j, o)| match o {
                        Some((theirs, t)) if j != k && theirs == mine => {
                            let order = score_cmp_desc(*t, *s);
                            order.is_lt() || (order.is_eq() && j < k)
                        }
                        _ => false,
                    }),
                };
                proptest::prop_assert_eq!(got[k], expected, "candidate {}", k);
            }
        }
    }
}
