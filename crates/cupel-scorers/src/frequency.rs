//! [`FrequencyScorer`]: the share of peers that share a tag.

use std::collections::HashMap;

use cupel_core::{ContextItem, Scorer, Tag};

use crate::gather::{PassMap, PassState, tags_of};

/// Inclusion–exclusion enumerates `2^k - 1` subsets per group of `k` tags; it
/// is only considered when no group has more than this many tags.
const MAX_INCLUSION_EXCLUSION_TAGS: usize = 8;

/// Estimated cost units of the two counting methods (see [`choose_method`]):
/// one 64-bit word of a bitset OR/popcount, one item of a tag's item list
/// (a random access), one subset of inclusion–exclusion (two hash-map
/// operations on a table that may not fit in cache).
const WORD_COST: u64 = 1;
const LIST_COST: u64 = 4;
const SUBSET_COST: u64 = 128;

/// Scores an item by the fraction of the *other* items that share at least one
/// tag with it.
///
/// `score = matching / (N - 1)`, where `N` is the number of items and
/// `matching` the number of other items (identified by index: an identical copy
/// at another index is a peer) with at least one tag equal to one of the
/// item's tags under ASCII case folding (`"Urgent"` matches `"urgent"`).
/// Items without tags score 0.0 and never match; a single item scores 0.0. The
/// denominator is always `N - 1`, tagless peers included.
///
/// # Performance
/// [`score`](Scorer::score) is the specification's reference algorithm: it
/// compares the item's tags with every peer's, O(N · T²) per item, O(N² · T²)
/// for a pass.
///
/// [`score_all`](Scorer::score_all) never compares item pairs. It
/// 1. copies all tags into one buffer and interns them by their bytes
///    (short tags as packed integers), then maps each distinct tag to the id
///    of its ASCII-lowercased form, turning each item into its sorted set of
///    tag ids — O(T) for `T` tags in total. (Inside a
///    [`CompositeScorer`](crate::CompositeScorer) the copy and the ids are
///    shared with the other tag-reading children.)
/// 2. drops tags that only one item carries (they cannot make an overlap) and
///    groups the items by their remaining tag set: `G` groups `A` of `s_A`
///    items and `k_A` tags each;
/// 3. counts, for every group `A`, the items that share a tag with it,
///    `Σ_B s_B · [A ∩ B ≠ ∅]`. When no group has more than three tags (the
///    usual case) this is inclusion–exclusion written out, `Σ c(t) −
///    Σ c(s,t) + c(A)`, from per-tag item counts, per-pair counts and the
///    group sizes — O(G). Otherwise it takes the cheaper (by an estimate
///    made from the tag counts, before any work) of two exact methods:
///    * **inclusion–exclusion**: `Σ_{∅≠S⊆A} (-1)^{|S|+1} c(S)`, where `c(S)`
///      is the number of items whose tag set contains `S`, filled by
///      enumerating every group's non-empty subsets — O(Σ_A 2^{k_A}), for
///      sets of at most 8 tags;
///    * **union counting**: the size of the union of the item lists of `A`'s
///      tags, counted with a stamp array — or, for tags carried by at least
///      1/32 of the items, with item bitsets OR-ed 64 items at a time and
///      popcounted — O(Σ_A Σ_{t∈A} min(|items(t)|, N/64)).
///
/// Total: **O(T + G)** for sets of at most three tags, **O(T +
/// min(Σ_A 2^{k_A}, Σ_A Σ_{t∈A} min(|items(t)|, N/64)))** otherwise.
/// That is linear in the number of items when items share few tags (in the
/// benchmark workload — 20 tags, 1–3 per item — G ≤ 1,350 whatever N is), and
/// at worst O(G · k · N / 64) for many distinct, large, overlapping tag sets
/// (deciding even whether two sets are disjoint is believed to need quadratic
/// time in general). Bitsets take at most 4 bytes per tag occurrence. The
/// counts are exact integers, so the scores equal [`score`](Scorer::score)'s
/// bit for bit.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::FrequencyScorer;
///
/// let a = ContextItem::builder("a", 1).tags(["rust"]).build()?;
/// let b = ContextItem::builder("b", 1).tags(["RUST", "async"]).build()?;
/// let c = ContextItem::builder("c", 1).tags(["python"]).build()?;
/// // a and b share "rust" (case-folded); c shares nothing. Denominator 3 - 1 = 2.
/// assert_eq!(FrequencyScorer.score_all(&[&a, &b, &c]), vec![0.5, 0.5, 0.0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FrequencyScorer;

impl FrequencyScorer {
    /// The scorer (it has no configuration).
    pub fn new() -> Self {
        Self
    }
}

fn shares_any_tag(a: &[Tag], b: &[Tag]) -> bool {
    a.iter()
        .any(|x| b.iter().any(|y| x.eq_ignore_ascii_case(y)))
}

impl Scorer for FrequencyScorer {
    /// The reference algorithm; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        let Some(item) = items.get(index) else {
            return f64::NAN;
        };
        let n = items.len();
        if item.tags().is_empty() || n <= 1 {
            return 0.0;
        }
        let mut matching: u64 = 0;
        for (j, other) in items.iter().enumerate() {
            if j == index || other.tags().is_empty() {
                continue;
            }
            if shares_any_tag(item.tags(), other.tags()) {
                matching += 1;
            }
        }
        matching as f64 / (n - 1) as f64
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        let n = items.len();
        if n <= 1 {
            return vec![0.0; n];
        }
        let denominator = (n - 1) as f64;
        peer_overlap_counts(items)
            .into_iter()
            .map(|matching| matching.map_or(0.0, |m| m as f64 / denominator))
            .collect()
    }
}

/// How step 3 counts overlaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// Inclusion–exclusion written out for sets of at most three tags, per
    /// item from dense tables of few distinct tags. (Taken by default before
    /// any grouping, so only tests name it, to force it.)
    #[cfg_attr(not(test), allow(dead_code))]
    DenseSmallSets,
    /// Inclusion–exclusion written out for sets of at most three tags, per
    /// group.
    SmallSets,
    InclusionExclusion,
    Union,
}

/// For every item, the number of *other* items sharing at least one tag with
/// it (ASCII-folded); `None` for tagless items.
fn peer_overlap_counts(items: &[&ContextItem]) -> Vec<Option<u64>> {
    peer_overlap_counts_with(items, None)
}

/// Each item's ids (`sets`, item `i` at `offsets[i]..offsets[i + 1]`)
/// sorted and deduplicated, compacted in place; the new offsets.
fn sorted_sets(mut sets: Vec<u32>, offsets: &[usize]) -> (Vec<u32>, Vec<usize>) {
    let n = offsets.len() - 1;
    let mut offsets = offsets.to_vec();
    let mut write = 0;
    for i in 0..n {
        let (from, to) = (offsets[i], offsets[i + 1]);
        let kept = sort_dedup(&mut sets[from..to]);
        // Element by element: a `copy_within` per item is a `memmove` call
        // for one to three ids.
        for k in 0..kept {
            sets[write + k] = sets[from + k];
        }
        offsets[i] = write;
        write += kept;
    }
    sets.truncate(write);
    offsets[n] = write;
    (sets, offsets)
}

/// How many items carry each of the `distinct` tags, and each item's set
/// reduced to the tags two or more items carry (with its offsets).
fn shared_sets(
    sets: &[u32],
    offsets: &[usize],
    distinct: usize,
) -> (Vec<u32>, Vec<u32>, Vec<usize>) {
    let mut carriers = vec![0u32; distinct];
    for &t in sets {
        carriers[t as usize] = carriers[t as usize].saturating_add(1);
    }
    let mut shared: Vec<u32> = Vec::with_capacity(sets.len());
    let mut shared_offsets: Vec<usize> = Vec::with_capacity(offsets.len());
    shared_offsets.push(0);
    for w in offsets.windows(2) {
        shared.extend(
            sets[w[0]..w[1]]
                .iter()
                .filter(|&&t| carriers[t as usize] > 1),
        );
        shared_offsets.push(shared.len());
    }
    (carriers, shared, shared_offsets)
}

/// [`peer_overlap_counts`], with the counting method forced (for tests).
fn peer_overlap_counts_with(items: &[&ContextItem], force: Option<Method>) -> Vec<Option<u64>> {
    let n = items.len();
    if u32::try_from(n).is_err() {
        // Item ids are 32-bit below; four billion items: count pair by pair.
        return reference_counts(items);
    }
    let state = PassState::default();

    // 1. All tags in one buffer, interned by their exact bytes and then
    //    ASCII-folded (see `gather`; shared with the other children of a
    //    composite), so each tag occurrence is a dense id.
    let arena = tags_of(items);
    let (Some(interned), Some(folded)) = (arena.interned(), arena.folded_ids()) else {
        // Four billion distinct tags: ids would collide. Count pair by pair.
        return reference_counts(items);
    };
    let distinct = folded.distinct;
    // Items of at most three tags each and few distinct tags: count per
    // item in dense tables, with no grouping at all.
    if matches!(force, None | Some(Method::DenseSmallSets))
        && let Some(count) =
            dense_small_set_counts(&interned.ids, &folded.of, &arena.offsets, distinct)
    {
        return count
            .into_iter()
            .zip(arena.offsets.windows(2))
            .map(|(count, own)| (own[0] != own[1]).then(|| count.saturating_sub(1)))
            .collect();
    }

    let sets: Vec<u32> = interned
        .ids
        .iter()
        .map(|&id| folded.of[id as usize])
        .collect();
    let (sets, offsets) = sorted_sets(sets, &arena.offsets);

    // 2. Keep only tags carried by two or more items, and group the items by
    //    the set that remains. An item whose set becomes empty shares no tag
    //    with anybody.
    let (carriers, shared, shared_offsets) = shared_sets(&sets, &offsets, distinct);
    let largest = shared_offsets
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(0);

    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut group_sets: Vec<&[u32]> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    {
        // Sets of at most three ids below 2^21 are keyed by the ids packed
        // into one integer (hashed and compared as a word); longer ones by
        // their slice. A set's length decides its map, so groups are still
        // numbered in order of first appearance.
        let capacity = n.min(GROUP_MAP_CAPACITY);
        let mut packed_index: PassMap<u64, usize> =
            HashMap::with_capacity_and_hasher(capacity, state.clone());
        let mut index: PassMap<&[u32], usize> = HashMap::with_hasher(state.clone());
        for (i, w) in shared_offsets.windows(2).enumerate() {
            let set = &shared[w[0]..w[1]];
            if set.is_empty() {
                continue;
            }
            let mut new_group = || {
                group_sets.push(set);
                sizes.push(0);
                group_sets.len() - 1
            };
            let g = match pack_set(set) {
                Some(key) => *packed_index.entry(key).or_insert_with(&mut new_group),
                None => *index.entry(set).or_insert_with(&mut new_group),
            };
            sizes[g] += 1;
            group_of[i] = Some(g);
        }
    }

    // 3. Per group, the number of items (its own included) sharing a tag with it.
    let heavy = |t: u32| carriers[t as usize] as usize * 32 >= n;
    let method = match force {
        Some(Method::DenseSmallSets) => Method::SmallSets,
        Some(method) => method,
        // A few operations per group, below the floor of either general
        // method (see `small_set_counts`).
        None if largest <= SMALL_SET_TAGS => Method::SmallSets,
        None => choose_method(&group_sets, n, &carriers, heavy),
    };
    // Each method only for the set sizes it handles, even when forced (or
    // when saturated estimates tie).
    let count = match method {
        Method::SmallSets if largest <= SMALL_SET_TAGS => {
            small_set_counts(&group_sets, &sizes, &carriers, state)
        }
        Method::SmallSets | Method::InclusionExclusion
            if largest <= MAX_INCLUSION_EXCLUSION_TAGS =>
        {
            inclusion_exclusion(&group_sets, &sizes, state)
        }
        _ => union_counts(&group_sets, &group_of, distinct, heavy),
    };

    group_of
        .iter()
        .zip(arena.offsets.windows(2))
        .map(|(g, own)| {
            if own[0] == own[1] {
                None
            } else {
                // The group's own count includes the item itself.
                Some(g.map_or(0, |g| count[g].saturating_sub(1)))
            }
        })
        .collect()
}

/// Sorts `ids` and moves its distinct values to the front; returns their
/// number. Sets of two or three ids (most items) take a compare-exchange
/// network instead of a call into the general sort.
fn sort_dedup(ids: &mut [u32]) -> usize {
    let swap_if = |ids: &mut [u32], a: usize, b: usize| {
        let (lo, hi) = (ids[a].min(ids[b]), ids[a].max(ids[b]));
        ids[a] = lo;
        ids[b] = hi;
    };
    match ids.len() {
        0 | 1 => return ids.len(),
        2 => swap_if(ids, 0, 1),
        3 => {
            swap_if(ids, 0, 1);
            swap_if(ids, 1, 2);
            swap_if(ids, 0, 1);
        }
        _ => ids.sort_unstable(),
    }
    let mut kept = 1;
    for read in 1..ids.len() {
        if ids[read] != ids[kept - 1] {
            ids[kept] = ids[read];
            kept += 1;
        }
    }
    kept
}

/// The initial capacity of the map from tag sets to groups (at most one
/// group per item; the benchmark workload has at most 1,350), so the map
/// does not rehash its way up on every pass.
const GROUP_MAP_CAPACITY: usize = 2_048;

/// A sorted set of at most three tag ids, each below 2^21, packed into one
/// integer: `(id + 1)` in 21-bit fields, empty fields zero, so distinct sets
/// get distinct keys. `None` for longer sets or larger ids.
fn pack_set(set: &[u32]) -> Option<u64> {
    const BITS: u32 = 21;
    if set.len() > 3 {
        return None;
    }
    let mut key: u64 = 0;
    for &id in set {
        if id >= (1 << BITS) - 1 {
            return None;
        }
        key = key << BITS | u64::from(id + 1);
    }
    Some(key)
}

/// The pairwise count, for inputs too large to index.
#[cold]
fn reference_counts(items: &[&ContextItem]) -> Vec<Option<u64>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if item.tags().is_empty() {
                return None;
            }
            let matching = items
                .iter()
                .enumerate()
                .filter(|(j, other)| *j != i && shares_any_tag(item.tags(), other.tags()))
                .count();
            Some(matching as u64)
        })
        .collect()
}

/// The method with the lower estimated cost (inclusion–exclusion only when
/// every group has at most [`MAX_INCLUSION_EXCLUSION_TAGS`] tags).
fn choose_method(
    group_sets: &[&[u32]],
    n: usize,
    carriers: &[u32],
    heavy: impl Fn(u32) -> bool,
) -> Method {
    let words = n.div_ceil(64) as u64;
    let mut subsets: u64 = 0;
    let mut union: u64 = 0;
    for set in group_sets {
        subsets = match set.len() {
            k if k <= MAX_INCLUSION_EXCLUSION_TAGS => {
                subsets.saturating_add(((1u64 << k) - 1) * 2 * SUBSET_COST)
            }
            _ => u64::MAX,
        };
        let mut any_heavy = false;
        for &t in *set {
            let cost = if heavy(t) {
                any_heavy = true;
                words * WORD_COST
            } else {
                u64::from(carriers[t as usize]) * LIST_COST
            };
            union = union.saturating_add(cost);
        }
        if any_heavy {
            union = union.saturating_add(words * WORD_COST);
        }
    }
    if subsets <= union {
        Method::InclusionExclusion
    } else {
        Method::Union
    }
}

/// The largest tag set [`small_set_counts`] handles.
const SMALL_SET_TAGS: usize = 3;

/// The pair table of [`small_set_counts`] is a dense `D × D` array (`D`
/// shared tags) when it has at most this many cells per group plus
/// [`DENSE_PAIR_BASE`] (so zeroing it costs no more than the counting), a
/// hash map otherwise.
const DENSE_PAIR_CELLS_PER_GROUP: usize = 16;
const DENSE_PAIR_BASE: usize = 1_024;

/// [`dense_small_set_counts`] runs when its triple table has at most this
/// many cells per item plus [`DENSE_TRIPLE_BASE`].
const DENSE_TRIPLE_CELLS_PER_ITEM: usize = 8;
const DENSE_TRIPLE_BASE: usize = 8_192;

/// For every item, the number of items (itself included) sharing a tag with
/// it (0 for an item that shares none), when no item has more than three
/// tag occurrences and the `D` distinct shared tags are few enough for a
/// `(D + 1)³` table; `None` otherwise. Item `i`'s tags are
/// `of[occurrences[k]]` for `k` in `offsets[i]..offsets[i + 1]`, folded ids
/// below `distinct`.
///
/// The same written-out inclusion–exclusion as [`small_set_counts`],
/// `Σ c(t) − Σ c(s,t) + c(A)`, counted per item in dense tables: no
/// grouping and no hashing. Every set is held in three slots, sorted, with
/// an empty slot as one more tag `P` (numbered after every real one, so it
/// sorts last) that no item carries. Every item adds to the cells of all
/// three of its slot pairs and of its triple; a cell that names `P` is never
/// read for a set that fills that slot, because each term is weighted by
/// whether its slots are filled. So no step branches on a set's length,
/// which is random from item to item.
fn dense_small_set_counts(
    occurrences: &[u32],
    of: &[u32],
    offsets: &[usize],
    distinct: usize,
) -> Option<Vec<u64>> {
    let n = offsets.len().saturating_sub(1);
    let empty = u32::try_from(distinct).ok()?;
    let sort3 = |s: [u32; 3]| {
        let (a, b) = (s[0].min(s[1]), s[0].max(s[1]));
        let (b, c) = (b.min(s[2]), b.max(s[2]));
        [a.min(b), a.max(b), c]
    };
    // 1. Each item's folded ids, sorted, repeats emptied; carrier counts
    //    (the empty slot's cell counts nothing that is read).
    let mut slots: Vec<[u32; 3]> = Vec::with_capacity(n);
    let mut carriers = vec![0u32; distinct + 1];
    for w in offsets.windows(2) {
        let (from, len) = (w[0], w[1] - w[0]);
        if len > SMALL_SET_TAGS {
            return None;
        }
        let slot = |k: usize| {
            let t = occurrences
                .get(from + k.min(len.saturating_sub(1)))
                .and_then(|&id| of.get(id as usize))
                .copied()
                .unwrap_or(empty);
            if k < len { t } else { empty }
        };
        let [a, b, c] = sort3([slot(0), slot(1), slot(2)]);
        // Sorted, so a repeat follows its twin; emptying it and moving
        // the empty slot last keeps the slots sorted.
        let c = if c == b { empty } else { c };
        let b = if b == a { empty } else { b };
        let (b, c) = (b.min(c), b.max(c));
        for t in [a, b, c] {
            carriers[t as usize] = carriers[t as usize].saturating_add(1);
        }
        slots.push([a, b, c]);
    }
    // 2. The shared tags (carried by two or more items) numbered 0..d in
    //    id order; every other tag and the empty slot become `P` = d.
    let mut dense = vec![0u32; distinct + 1];
    let mut d = 0usize;
    for (t, &count) in carriers.iter().enumerate().take(distinct) {
        if count > 1 {
            dense[t] = d as u32;
            d += 1;
        }
    }
    let side = d + 1;
    let limit = n
        .saturating_mul(DENSE_TRIPLE_CELLS_PER_ITEM)
        .saturating_add(DENSE_TRIPLE_BASE);
    if side.saturating_mul(side).saturating_mul(side) > limit {
        return None;
    }
    let pad = d as u32;
    for (t, &count) in carriers.iter().enumerate() {
        if count <= 1 || t == distinct {
            dense[t] = pad;
        }
    }
    // c(t) per dense tag; c(P) = 0.
    let mut single = vec![0u64; side];
    for (t, &count) in carriers.iter().enumerate().take(distinct) {
        single[dense[t] as usize] += u64::from(count);
    }
    single[d] = 0;
    // 3. Pair and triple counts, unconditionally (see above).
    let mut pairs = vec![0u32; side * side];
    let mut triples = vec![0u32; side * side * side];
    for s in &mut slots {
        let [a, b, c] = sort3([
            dense[s[0] as usize],
            dense[s[1] as usize],
            dense[s[2] as usize],
        ]);
        *s = [a, b, c];
        let (a, b, c) = (a as usize, b as usize, c as usize);
        pairs[a * side + b] += 1;
        pairs[a * side + c] += 1;
        pairs[b * side + c] += 1;
        triples[(a * side + b) * side + c] += 1;
    }
    // 4. Per item: c(a) + c(b) + c(c) − c(a,b) − c(a,c) − c(b,c) + c(a,b,c),
    //    each pair and triple term only when its slots are filled. Never
    //    negative (the union holds the item itself), and no sum overflows:
    //    n < 2^32.
    Some(
        slots
            .iter()
            .map(|s| {
                let (a, b, c) = (s[0] as usize, s[1] as usize, s[2] as usize);
                let two = u64::from(b != d);
                let three = u64::from(c != d);
                let add = single[a]
                    + single[b]
                    + single[c]
                    + three * u64::from(triples[(a * side + b) * side + c]);
                let sub = two * u64::from(pairs[a * side + b])
                    + three * (u64::from(pairs[a * side + c]) + u64::from(pairs[b * side + c]));
                add.saturating_sub(sub)
            })
            .collect(),
    )
}

/// Whether [`small_set_counts`] counts pairs in a dense table, for `shared`
/// distinct tags over `groups` groups.
fn dense_pairs(shared: usize, groups: usize) -> bool {
    shared.saturating_mul(shared)
        <= groups
            .saturating_mul(DENSE_PAIR_CELLS_PER_GROUP)
            .saturating_add(DENSE_PAIR_BASE)
}

/// `count[A]` for every group `A` when no group has more than three tags:
/// inclusion–exclusion written out,
///
/// `|⋃_{t∈A} items(t)| = Σ_{t∈A} c(t) − Σ_{{s,t}⊆A} c(s,t) + [|A| = 3] c(A)`,
///
/// where `c(S)` is the number of items whose set contains `S`:
/// * `c(t) = carriers[t]` (every carrier of a shared tag is in a group);
/// * `c(s,t)` is the sum of the sizes of the groups containing both, counted
///   in one pass over the groups (a dense table for few distinct tags, a map
///   keyed by the packed pair otherwise);
/// * `c(A)` for a three-tag `A` is the size of `A`'s own group: a group that
///   contains `A` has at least three tags, so it *is* `A`.
///
/// O(G) table operations for `G` groups, against `2 · (2^k − 1)` hash
/// operations per group for the general inclusion–exclusion and at least
/// one item list or bitset per tag for union counting.
fn small_set_counts(
    group_sets: &[&[u32]],
    sizes: &[u64],
    carriers: &[u32],
    state: PassState,
) -> Vec<u64> {
    // Dense ids for the tags that occur in some group.
    let mut dense: Vec<u32> = vec![u32::MAX; carriers.len()];
    let mut shared = 0usize;
    for &t in group_sets.iter().flat_map(|set| set.iter()) {
        if dense[t as usize] == u32::MAX {
            dense[t as usize] = shared as u32;
            shared += 1;
        }
    }
    let pairs_of = |set: &[u32]| -> [Option<(u32, u32)>; 3] {
        match *set {
            [a, b] => [Some((a, b)), None, None],
            [a, b, c] => [Some((a, b)), Some((a, c)), Some((b, c))],
            _ => [None; 3],
        }
    };
    // `c(s,t)` per pair: a dense table for few distinct tags, else a map
    // keyed by the packed pair.
    enum PairTable {
        Dense(Vec<u64>),
        Map(PassMap<u64, u64>),
    }
    let cell =
        |(a, b): (u32, u32)| dense[a as usize] as usize * shared + dense[b as usize] as usize;
    let key = |(a, b): (u32, u32)| u64::from(a) << 32 | u64::from(b);
    let mut table = if dense_pairs(shared, group_sets.len()) {
        PairTable::Dense(vec![0; shared.saturating_mul(shared)])
    } else {
        let pair_count = group_sets
            .iter()
            .map(|set| pairs_of(set).iter().flatten().count())
            .sum();
        PairTable::Map(HashMap::with_capacity_and_hasher(pair_count, state))
    };
    for (set, &size) in group_sets.iter().zip(sizes) {
        for pair in pairs_of(set).into_iter().flatten() {
            match &mut table {
                PairTable::Dense(t) => t[cell(pair)] += size,
                PairTable::Map(m) => *m.entry(key(pair)).or_insert(0) += size,
            }
        }
    }
    // Per group, the sum of `c(s,t)` over its pairs.
    let pair_sums = group_sets.iter().map(|set| -> u64 {
        pairs_of(set)
            .into_iter()
            .flatten()
            .map(|pair| match &table {
                PairTable::Dense(t) => t[cell(pair)],
                PairTable::Map(m) => m.get(&key(pair)).copied().unwrap_or(0),
            })
            .sum()
    });
    group_sets
        .iter()
        .zip(sizes)
        .zip(pair_sums)
        .map(|((set, &size), pairs)| {
            let singles: u64 = set.iter().map(|&t| u64::from(carriers[t as usize])).sum();
            let triple = if set.len() == 3 { size } else { 0 };
            // Exact and never negative: n < 2^32 keeps every sum far from
            // overflow, and the union is at least the group itself.
            (singles + triple).saturating_sub(pairs)
        })
        .collect()
}

/// The subset of the sorted tag-id `set` selected by the bits of `mask`, as
/// its ids plus one (so no id is 0) followed by zeros: equal keys are equal
/// subsets, with no allocation. `set` has at most
/// [`MAX_INCLUSION_EXCLUSION_TAGS`] ids.
fn subset_key(set: &[u32], mask: u32) -> [u32; MAX_INCLUSION_EXCLUSION_TAGS] {
    let mut key = [0u32; MAX_INCLUSION_EXCLUSION_TAGS];
    let chosen = set
        .iter()
        .enumerate()
        .filter(|(bit, _)| mask & (1u32 << bit) != 0);
    for (slot, (_, &t)) in key.iter_mut().zip(chosen) {
        *slot = t.saturating_add(1);
    }
    key
}

/// `count[A] = Σ_{∅≠S⊆A} (-1)^{|S|+1} c(S)` for every group `A`, with `c(S)`
/// the number of items whose set contains `S`. Every group has at most
/// [`MAX_INCLUSION_EXCLUSION_TAGS`] tags.
fn inclusion_exclusion(group_sets: &[&[u32]], sizes: &[u64], state: PassState) -> Vec<u64> {
    let mut containing: PassMap<[u32; MAX_INCLUSION_EXCLUSION_TAGS], u64> =
        HashMap::with_hasher(state);
    for (set, size) in group_sets.iter().zip(sizes) {
        for mask in 1u32..(1u32 << set.len()) {
            *containing.entry(subset_key(set, mask)).or_insert(0) += size;
        }
    }
    group_sets
        .iter()
        .map(|set| {
            let mut total: i128 = 0;
            for mask in 1u32..(1u32 << set.len()) {
                let c = i128::from(containing.get(&subset_key(set, mask)).copied().unwrap_or(0));
                if mask.count_ones() % 2 == 1 {
                    total += c;
                } else {
                    total -= c;
                }
            }
            u64::try_from(total).unwrap_or(0)
        })
        .collect()
}

/// `count[A] = |⋃_{t∈A} items(t)|` for every group `A`: item lists for most
/// tags, item bitsets for `heavy` ones (carried by at least 1/32 of the items).
fn union_counts(
    group_sets: &[&[u32]],
    group_of: &[Option<usize>],
    tags: usize,
    heavy: impl Fn(u32) -> bool,
) -> Vec<u64> {
    let n = group_of.len();
    let words = n.div_ceil(64);

    // items(t) for every tag, as one index (item ids fit in u32: checked).
    let mut list_offsets = vec![0usize; tags + 1];
    for g in group_of.iter().flatten() {
        for &t in group_sets[*g] {
            list_offsets[t as usize + 1] += 1;
        }
    }
    for t in 0..tags {
        list_offsets[t + 1] += list_offsets[t];
    }
    let mut cursor = list_offsets.clone();
    let mut lists = vec![0u32; list_offsets[tags]];
    for (i, g) in group_of.iter().enumerate() {
        if let Some(g) = g {
            for &t in group_sets[*g] {
                lists[cursor[t as usize]] = i as u32;
                cursor[t as usize] += 1;
            }
        }
    }
    let items_of = |t: u32| &lists[list_offsets[t as usize]..list_offsets[t as usize + 1]];

    // Bitsets of the heavy tags.
    let mut slot_of: Vec<Option<usize>> = vec![None; tags];
    let mut bits: Vec<u64> = Vec::new();
    for (t, slot) in slot_of.iter_mut().enumerate() {
        let t32 = t as u32;
        if heavy(t32) && !items_of(t32).is_empty() {
            *slot = Some(bits.len() / words.max(1));
            let start = bits.len();
            bits.resize(start + words, 0);
            for &i in items_of(t32) {
                bits[start + (i as usize >> 6)] |= 1u64 << (i & 63);
            }
        }
    }
    let bitset = |slot: usize| &bits[slot * words..(slot + 1) * words];

    let mut scratch = vec![0u64; words];
    let mut stamp: Vec<usize> = vec![usize::MAX; n];
    group_sets
        .iter()
        .enumerate()
        .map(|(g, set)| {
            let mut heavy_slots = set.iter().filter_map(|&t| slot_of[t as usize]);
            match heavy_slots.next() {
                Some(first) => {
                    scratch.copy_from_slice(bitset(first));
                    for slot in heavy_slots {
                        for (acc, word) in scratch.iter_mut().zip(bitset(slot)) {
                            *acc |= word;
                        }
                    }
                    for &t in set.iter().filter(|&&t| slot_of[t as usize].is_none()) {
                        for &i in items_of(t) {
                            scratch[i as usize >> 6] |= 1u64 << (i & 63);
                        }
                    }
                    scratch.iter().map(|w| u64::from(w.count_ones())).sum()
                }
                None => {
                    let mut count = 0u64;
                    for &t in *set {
                        for &i in items_of(t) {
                            if stamp[i as usize] != g {
                                stamp[i as usize] = g;
                                count += 1;
                            }
                        }
                    }
                    count
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, tags: &[&str]) -> ContextItem {
        ContextItem::builder(name, 1)
            .tags(tags.iter().copied())
            .build()
            .unwrap()
    }

    /// Every counting method, forced (each falls back where it does not
    /// apply: the dense tables to per-group counting, small sets and
    /// inclusion–exclusion to the next method that takes the set sizes).
    const METHODS: [Method; 4] = [
        Method::DenseSmallSets,
        Method::SmallSets,
        Method::InclusionExclusion,
        Method::Union,
    ];

    /// The pairwise reference, every forced method and the default choice
    /// all count `expected`.
    fn assert_counts(refs: &[&ContextItem], expected: &[Option<u64>]) {
        assert_eq!(reference_counts(refs), expected, "reference");
        for method in METHODS {
            assert_eq!(
                peer_overlap_counts_with(refs, Some(method)),
                expected,
                "{method:?}"
            );
        }
        assert_eq!(peer_overlap_counts(refs), expected, "default");
    }

    fn both(items: &[ContextItem]) -> Vec<f64> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        let batch = FrequencyScorer.score_all(&refs);
        let single: Vec<f64> = (0..refs.len())
            .map(|i| FrequencyScorer.score(i, &refs))
            .collect();
        assert_eq!(batch, single);
        batch
    }

    // Edge-case table row 1: item has no tags -> 0.0.
    #[test]
    fn tagless_item_scores_zero() {
        // b has no tags: 0.0. a and c share "x": each 1 match / (3 - 1) = 0.5.
        assert_eq!(
            both(&[item("a", &["x"]), item("b", &[]), item("c", &["x"])]),
            vec![0.5, 0.0, 0.5]
        );
    }

    // Row 2: only one item -> 0.0.
    #[test]
    fn single_item_scores_zero() {
        assert_eq!(both(&[item("a", &["x"])]), vec![0.0]);
        assert!(FrequencyScorer.score_all(&[]).is_empty());
    }

    // Row 3: no peer shares a tag -> 0.0.
    #[test]
    fn no_overlap_scores_zero() {
        assert_eq!(
            both(&[item("a", &["x"]), item("b", &["y"]), item("c", &["z"])]),
            vec![0.0, 0.0, 0.0]
        );
    }

    // Row 4: every peer shares a tag -> 1.0.
    #[test]
    fn full_overlap_scores_one() {
        // a shares x with b and y with c: 2 / 2 = 1.0. b shares x with a only
        // (b = {x, q}, c = {y}): 1 / 2. c shares y with a only: 1 / 2.
        assert_eq!(
            both(&[
                item("a", &["x", "y"]),
                item("b", &["x", "q"]),
                item("c", &["y"])
            ]),
            vec![1.0, 0.5, 0.5]
        );
    }

    // Row 5: a tagless peer never matches but stays in the denominator.
    #[test]
    fn tagless_peer_counts_in_denominator_only() {
        // a, b share "x"; c, d tagless. a: 1 / (4 - 1) = 1/3.
        let s = both(&[
            item("a", &["x"]),
            item("b", &["x"]),
            item("c", &[]),
            item("d", &[]),
        ]);
        assert_eq!(s, vec![1.0 / 3.0, 1.0 / 3.0, 0.0, 0.0]);
    }

    #[test]
    fn tags_compare_with_ascii_folding_only() {
        // "Important" == "important"; "É" != "é" (not ASCII).
        // a-b match (1/3 each); c and d do not match each other.
        assert_eq!(
            both(&[
                item("a", &["Important"]),
                item("b", &["important"]),
                item("c", &["É"]),
                item("d", &["é"]),
            ]),
            vec![1.0 / 3.0, 1.0 / 3.0, 0.0, 0.0]
        );
    }

    #[test]
    fn identical_copies_are_peers_self_excluded_by_index() {
        // The same item twice at different indices: each counts the other.
        // Denominator 2 - 1 = 1 -> 1.0 each.
        let a = item("same", &["x"]);
        let items = [a.clone(), a];
        assert_eq!(both(&items), vec![1.0, 1.0]);
        // The same allocation twice (identical references): still two peers.
        let refs = [&items[0], &items[0]];
        assert_eq!(FrequencyScorer.score(0, &refs), 1.0);
        assert_eq!(FrequencyScorer.score_all(&refs), vec![1.0, 1.0]);
    }

    #[test]
    fn duplicate_tags_on_one_item_count_once() {
        // a = {x, X, x} folds to {x}; b = {x}; c = {y}. a: 1/2, b: 1/2, c: 0.
        assert_eq!(
            both(&[
                item("a", &["x", "X", "x"]),
                item("b", &["x"]),
                item("c", &["y"])
            ]),
            vec![0.5, 0.5, 0.0]
        );
    }

    #[test]
    fn large_tag_sets_agree() {
        // a has 10 shared tags t0..t9 (over the inclusion-exclusion cap);
        // b has t0, c has t9 and u, d has u, e has nothing shared.
        // a: b, c -> 2/4; b: a -> 1/4; c: a, d -> 2/4; d: c -> 1/4; e: 0.
        let many: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let s = both(&[
            item("a", &many),
            item("b", &["t0"]),
            item("c", &["T9", "u"]),
            item("d", &["u"]),
            item("e", &["lonely"]),
        ]);
        assert_eq!(s, vec![0.5, 0.25, 0.5, 0.25, 0.0]);
        // Two large groups overlapping each other and a small one.
        let mut other: Vec<&str> = many.clone();
        other.push("extra");
        let s = both(&[item("a", &many), item("f", &other), item("b", &["t3"])]);
        // a: f, b -> 2/2; f: a, b -> 2/2; b: a, f -> 2/2.
        assert_eq!(s, vec![1.0, 1.0, 1.0]);
    }

    fn mixed_items() -> Vec<ContextItem> {
        // Set sizes 0..=10 (some above the inclusion-exclusion cap), case
        // variants, a tag carried by most items (heavy: a bitset), tagless items.
        let names: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
        (0..90usize)
            .map(|i| {
                let mut tags: Vec<String> = (0..(i % 11))
                    .map(|k| {
                        let name = &names[(i * 7 + k * 5) % names.len()];
                        if (i + k) % 3 == 0 {
                            name.to_uppercase()
                        } else {
                            name.clone()
                        }
                    })
                    .collect();
                if i % 4 == 1 {
                    tags.push("Common".into());
                }
                if i % 9 == 0 {
                    tags.push(format!("lonely-{i}"));
                }
                ContextItem::builder(format!("i{i}"), 1)
                    .tags(tags)
                    .build()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn both_counting_methods_agree_with_the_reference() {
        let items = mixed_items();
        let refs: Vec<&ContextItem> = items.iter().collect();
        assert_counts(&refs, &reference_counts(&refs));
        // Inclusion-exclusion needs sets of at most 8 tags.
        let small: Vec<ContextItem> = items.into_iter().filter(|i| i.tags().len() <= 8).collect();
        let refs: Vec<&ContextItem> = small.iter().collect();
        assert_counts(&refs, &reference_counts(&refs));
    }

    #[test]
    fn sort_dedup_orders_and_compacts_every_small_shape() {
        let run = |ids: &[u32]| {
            let mut ids = ids.to_vec();
            let kept = sort_dedup(&mut ids);
            ids.truncate(kept);
            ids
        };
        assert_eq!(run(&[]), Vec::<u32>::new());
        assert_eq!(run(&[7]), vec![7]);
        assert_eq!(run(&[9, 2]), vec![2, 9]);
        assert_eq!(run(&[4, 4]), vec![4]);
        // All six orders of three distinct ids, and the duplicate shapes.
        for order in [
            [1, 2, 3],
            [1, 3, 2],
            [2, 1, 3],
            [2, 3, 1],
            [3, 1, 2],
            [3, 2, 1],
        ] {
            assert_eq!(run(&order), vec![1, 2, 3], "{order:?}");
        }
        assert_eq!(run(&[5, 1, 5]), vec![1, 5]);
        assert_eq!(run(&[1, 1, 1]), vec![1]);
        assert_eq!(run(&[8, 3, 8, 3, 1]), vec![1, 3, 8]);
    }

    #[test]
    fn packed_set_keys_tell_sets_apart() {
        // (id + 1) per 21-bit field: {0} = 1; {0, 1} = 1 << 21 | 2;
        // {1} = 2 differs from {0, 1}; {0, 1, 2} = (1 << 42) | (2 << 21) | 3.
        assert_eq!(pack_set(&[0]), Some(1));
        assert_eq!(pack_set(&[1]), Some(2));
        assert_eq!(pack_set(&[0, 1]), Some((1 << 21) | 2));
        assert_eq!(pack_set(&[0, 1, 2]), Some((1 << 42) | (2 << 21) | 3));
        // The largest id that fits is 2^21 - 2 (its field holds 2^21 - 1).
        assert_eq!(pack_set(&[(1 << 21) - 2]), Some((1 << 21) - 1));
        assert_eq!(pack_set(&[(1 << 21) - 1]), None);
        assert_eq!(pack_set(&[0, 1, 2, 3]), None);
        // Mixed lengths in one pass: two-id sets take the packed map, the
        // four-id set the slice map; every count still matches the reference.
        let items = [
            item("a", &["p", "q"]),
            item("b", &["p", "q"]),
            item("c", &["p", "q", "r", "s"]),
            item("d", &["r", "s", "p", "q"]),
            item("e", &["s"]),
        ];
        let refs: Vec<&ContextItem> = items.iter().collect();
        // a, b share p/q with each other and with c, d: 3 peers each; c, d
        // share with a, b, each other and e (s): 4; e with c, d: 2.
        assert_counts(&refs, &[Some(3), Some(3), Some(4), Some(4), Some(2)]);
    }

    #[test]
    fn inclusion_exclusion_handles_tag_ids_beyond_16_bits() {
        // 70,000 tags only `a` carries come first, so the shared tags get ids
        // 70,000 and up. (The old test of this case let the cost estimate pick
        // union counting, so the wide-id keys were never exercised.)
        // Shared sets: a {x, z}, b {x}, c {x, y}, e {y, z}; d tagless.
        // a: b, c, e -> 3/4; b: a, c -> 2/4; c: a, b, e -> 3/4; d: 0; e: a, c -> 2/4.
        let mut many: Vec<String> = (0..70_000).map(|i| format!("u{i}")).collect();
        many.extend(["x".into(), "z".into()]);
        let a = ContextItem::builder("a", 1).tags(many).build().unwrap();
        let items = [
            a,
            item("b", &["X"]),
            item("c", &["x", "y"]),
            item("d", &[]),
            item("e", &["Y", "z"]),
        ];
        let refs: Vec<&ContextItem> = items.iter().collect();
        assert_counts(&refs, &[Some(3), Some(2), Some(3), None, Some(2)]);
        assert_eq!(
            FrequencyScorer.score_all(&refs),
            vec![0.75, 0.5, 0.75, 0.0, 0.5]
        );
        assert_eq!(FrequencyScorer.score(0, &refs), 0.75);
    }

    #[test]
    fn forced_inclusion_exclusion_falls_back_for_large_sets() {
        // a has 10 shared tags (over the cap of 8); forcing inclusion-exclusion
        // must still count exactly: a shares with b and c -> 2; b, c with a -> 1.
        let many: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let items = [item("a", &many), item("b", &["t0"]), item("c", &["t9"])];
        let refs: Vec<&ContextItem> = items.iter().collect();
        assert_eq!(
            peer_overlap_counts_with(&refs, Some(Method::InclusionExclusion)),
            vec![Some(2), Some(1), Some(1)]
        );
    }

    #[test]
    fn small_sets_are_counted_by_written_out_inclusion_exclusion() {
        // Shared sets: a {x}, b {x, y}, c {x, y, z}, d {y, z}, e {z}, f {x, y, z}.
        // Singles: c(x) = a, b, c, f = 4; c(y) = b, c, d, f = 4; c(z) = c, d, e, f = 4.
        // Pairs: c(x,y) = b, c, f = 3; c(x,z) = c, f = 2; c(y,z) = c, d, f = 3.
        // Triple: c(x,y,z) = c, f = 2 (the group {x, y, z} itself).
        // a {x}:     4                          = 4 -> 3 peers (b, c, f)
        // b {x,y}:   4 + 4 - 3                  = 5 -> 4 peers (a, c, d, f)
        // c {x,y,z}: 4 + 4 + 4 - 3 - 2 - 3 + 2  = 6 -> 5 peers (all)
        // d {y,z}:   4 + 4 - 3                  = 5 -> 4 peers (b, c, e, f)
        // e {z}:     4                          = 4 -> 3 peers (c, d, f)
        let items = [
            item("a", &["x"]),
            item("b", &["x", "y"]),
            item("c", &["x", "y", "z"]),
            item("d", &["y", "z"]),
            item("e", &["z"]),
            item("f", &["Z", "y", "x"]),
        ];
        let refs: Vec<&ContextItem> = items.iter().collect();
        assert_counts(
            &refs,
            &[Some(3), Some(4), Some(5), Some(4), Some(3), Some(5)],
        );
        // The dense tables themselves, on the same sets as ids (x 0, y 1,
        // z 2; f's tags in its own order): the counts above plus the item
        // itself.
        let ids = [0, 0, 1, 0, 1, 2, 1, 2, 2, 2, 1, 0];
        let offsets = [0, 1, 3, 6, 8, 9, 12];
        assert_eq!(
            dense_small_set_counts(&ids, &[0, 1, 2], &offsets, 3),
            Some(vec![4, 5, 6, 5, 4, 6])
        );
    }

    #[test]
    fn dense_tables_empty_repeats_and_unshared_tags() {
        // Folded ids: a {0, 0, 1}, b {1, 2}, c {3}, d {} (no tags), e {1, 0}.
        // Repeats count once: a's set is {0, 1}. Carriers: 0 -> a, e (2);
        // 1 -> a, b, e (3); 2 -> b (1, unshared); 3 -> c (1, unshared).
        // Shared pairs: c(0,1) = a, e = 2.
        // a {0,1}: 2 + 3 - 2 = 3 (a, b, e)
        // b {1}:   3             (a, b, e; tag 2 is b's alone)
        // c {}:    0             (shares nothing)
        // d {}:    0
        // e {0,1}: 2 + 3 - 2 = 3
        let ids = [0, 0, 1, 1, 2, 3, 1, 0];
        let offsets = [0, 3, 5, 6, 6, 8];
        assert_eq!(
            dense_small_set_counts(&ids, &[0, 1, 2, 3], &offsets, 4),
            Some(vec![3, 3, 0, 0, 3])
        );
        // Four occurrences on one item: not this path.
        assert_eq!(
            dense_small_set_counts(&[0, 1, 0, 1], &[0, 1], &[0, 4], 2),
            None
        );
    }

    #[test]
    fn dense_small_set_tables_are_bounded_by_the_item_count() {
        // n items allow n * 8 + 8,192 cells in the (D + 1)^3 triple table
        // (D shared tags plus the empty slot). Items 2k and 2k + 1 both carry
        // tag k, so every tag is shared and each item's union is 2.
        let pairs = |d: u32| -> (Vec<u32>, Vec<usize>) {
            (
                (0..2 * d).map(|i| i / 2).collect(),
                (0..=2 * d as usize).collect(),
            )
        };
        // 20 tags over 40 items: 21^3 = 9,261 > 40 * 8 + 8,192 = 8,512.
        let (ids, offsets) = pairs(20);
        let of: Vec<u32> = (0..20).collect();
        assert_eq!(dense_small_set_counts(&ids, &of, &offsets, 20), None);
        // 19 tags over 38 items: 20^3 = 8,000 <= 38 * 8 + 8,192 = 8,496.
        let (ids, offsets) = pairs(19);
        assert_eq!(
            dense_small_set_counts(&ids, &of[..19], &offsets, 19),
            Some(vec![2; 38])
        );
    }

    #[test]
    fn small_sets_count_pairs_in_a_map_when_a_table_would_be_sparse() {
        // 20 shared tags over 1 group: 400 cells <= 16 + 1,024 -> dense.
        assert!(dense_pairs(20, 1));
        // 1,350 groups (the benchmark workload's most): 20 tags stay dense.
        assert!(dense_pairs(20, 1_350));
        // 101 tags over 100 groups: 10,201 > 1,600 + 1,024 -> map.
        assert!(!dense_pairs(101, 100));
        // A chain of 101 items, item i tagged {t_i, t_(i+1)}: 102 tags, the
        // two ends carried once, so 100 shared tags in 101 groups (the end
        // items keep one tag each). Item i shares with i - 1 and i + 1.
        let names: Vec<String> = (0..=101).map(|t| format!("t{t:03}")).collect();
        let items: Vec<ContextItem> = (0..=100)
            .map(|i| item(&format!("i{i}"), &[&names[i], &names[i + 1]]))
            .collect();
        let refs: Vec<&ContextItem> = items.iter().collect();
        let expected: Vec<Option<u64>> = (0..=100)
            .map(|i| Some(if i == 0 || i == 100 { 1 } else { 2 }))
            .collect();
        assert!(!dense_pairs(100, 101));
        // (100^3 triple cells > 8 * 101 + 8,192: no dense tables either.)
        assert_counts(&refs, &expected);
    }

    proptest::proptest! {
        #[test]
        fn every_method_matches_the_reference_on_random_sets(
            tag_lists in proptest::collection::vec(
                proptest::collection::vec(0usize..12, 0..9), 0..50),
        ) {
            const POOL: [&str; 12] = ["a", "A", "b", "B", "c", "d", "e", "f", "É", "é", "long-tag-x", "LONG-TAG-X"];
            let items: Vec<ContextItem> = tag_lists
                .iter()
                .enumerate()
                .map(|(i, tags)| {
                    ContextItem::builder(format!("i{i}"), 1)
                        .tags(tags.iter().map(|&t| POOL[t]))
                        .build()
                        .unwrap()
                })
                .collect();
            let refs: Vec<&ContextItem> = items.iter().collect();
            let reference = reference_counts(&refs);
            for method in METHODS {
                proptest::prop_assert_eq!(&peer_overlap_counts_with(&refs, Some(method)), &reference);
            }
        }

        #[test]
        fn small_sets_match_the_reference_on_random_sets(
            tag_lists in proptest::collection::vec(
                proptest::collection::vec(0usize..40, 0..4), 0..80),
        ) {
            // Up to 40 tags (some case variants of others), at most three per
            // item: every pass takes the small-set method, dense or not.
            let items: Vec<ContextItem> = tag_lists
                .iter()
                .enumerate()
                .map(|(i, tags)| {
                    ContextItem::builder(format!("i{i}"), 1)
                        .tags(tags.iter().map(|&t| if t % 7 == 0 { format!("T{}", t / 2) } else { format!("t{}", t / 2) }))
                        .build()
                        .unwrap()
                })
                .collect();
            let refs: Vec<&ContextItem> = items.iter().collect();
            let reference = reference_counts(&refs);
            proptest::prop_assert_eq!(&peer_overlap_counts(&refs), &reference);
            for method in METHODS {
                proptest::prop_assert_eq!(&peer_overlap_counts_with(&refs, Some(method)), &reference);
            }
        }
    }

    #[test]
    fn the_method_follows_the_estimated_work() {
        // Few distinct small sets over many items: 20 * 3 subsets * 256 =
        // 15,360 against 20 * 3 bitsets * 1,563 words -> inclusion-exclusion.
        let sets: Vec<Vec<u32>> = (0..20).map(|i| vec![i, i + 1]).collect();
        let refs: Vec<&[u32]> = sets.iter().map(Vec::as_slice).collect();
        let carriers = vec![10_000u32; 21];
        assert_eq!(
            choose_method(&refs, 100_000, &carriers, |_| true),
            Method::InclusionExclusion
        );
        // Any set above the cap: union counting.
        let big = [vec![0u32, 1, 2, 3, 4, 5, 6, 7, 8]];
        let refs: Vec<&[u32]> = big.iter().map(Vec::as_slice).collect();
        assert_eq!(choose_method(&refs, 100, &[2; 9], |_| false), Method::Union);
        // Many 8-tag sets over short item lists: 255 subsets each cost more
        // than walking 8 short lists.
        let sets: Vec<Vec<u32>> = (0..100).map(|i| (i..i + 8).collect()).collect();
        let refs: Vec<&[u32]> = sets.iter().map(Vec::as_slice).collect();
        assert_eq!(
            choose_method(&refs, 1_000, &[8; 108], |_| false),
            Method::Union
        );
    }

    #[test]
    fn inclusion_exclusion_counts_each_peer_once() {
        // a = {x, y}; b = {x, y} (shares both: counted once); c = {y, z}; d = {z}.
        // a: b, c -> 2/3; b: a, c -> 2/3; c: a, b, d -> 3/3; d: c -> 1/3.
        assert_eq!(
            both(&[
                item("a", &["x", "y"]),
                item("b", &["y", "x"]),
                item("c", &["y", "z"]),
                item("d", &["z"]),
            ]),
            vec![2.0 / 3.0, 2.0 / 3.0, 1.0, 1.0 / 3.0]
        );
    }
}
