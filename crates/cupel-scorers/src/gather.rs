//! Reading every item's tags into local buffers before a whole-pass scorer
//! works on them — once per pass, shared by the tag-reading children of a
//! [`CompositeScorer`](crate::CompositeScorer).
//!
//! Items live behind `Arc`s and their tags behind two more pointers (the tag
//! list, then each tag's text), scattered over the heap. A loop that follows
//! those pointers *and* branches on what it reads (hash probes, comparisons)
//! makes the CPU wait for each read in turn. So the gather reads level by
//! level, each level in a loop that does nothing else, so that the reads of
//! many items overlap: the lists, then (a block of items at a time) each
//! tag's text; each block's texts are then numbered by their exact bytes
//! while they are still in cache ([`TagArena::interned`]), keeping each
//! distinct tag's bytes once. Reading the tags is still the largest cost of
//! [`TagScorer`](crate::TagScorer) and
//! [`FrequencyScorer`](crate::FrequencyScorer) passes, so a composite opens a
//! [`TagScope`] and its children share one gathered numbering: each tag
//! occurrence is hashed once per pass, not once per scorer.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use cupel_core::{ContextItem, Tag};

/// How many items' tags [`TagArena::gather`] reads, then numbers, at a time.
const BLOCK: usize = 512;

/// Every tag of every item, numbered by its exact bytes.
pub(crate) struct TagArena {
    /// The bytes [`tag`](Self::tag) reads: each *distinct* tag's once, by
    /// id, when the tags are numbered (the usual case); every occurrence's,
    /// item after item, tag after tag, when they are not.
    raw: Vec<u8>,
    /// `ends[k]`: end of entry `k` of `raw` (it starts at `ends[k - 1]`, or 0).
    ends: Vec<usize>,
    /// `offsets[i]..offsets[i + 1]`: the tags of item `i` (`n + 1` entries).
    pub(crate) offsets: Vec<usize>,
    /// The tags numbered by their exact bytes (`None`: too many distinct
    /// tags for 32-bit ids).
    interned: Option<Interned>,
    /// The interned tags' ASCII-folded ids, made on first use.
    folded_ids: OnceCell<Option<FoldedIds>>,
}

/// The hasher of the whole pass's maps: foldhash's fast hasher, seeded per
/// process from random keys, so bucket layouts are not predictable from tag
/// names alone. Hash order never reaches an output: the maps are only
/// probed, never iterated.
pub(crate) type PassState = foldhash::fast::RandomState;

/// A map with the pass's hasher.
pub(crate) type PassMap<K, V> = HashMap<K, V, PassState>;

/// Every tag occurrence as a dense id of its exact bytes: equal bytes, equal
/// ids, numbered in order of first appearance.
pub(crate) struct Interned {
    /// `ids[t]`: the id of tag occurrence `t`.
    pub(crate) ids: Vec<u32>,
    /// `first[id]`: the first occurrence of `id` (to read its bytes).
    pub(crate) first: Vec<usize>,
}

/// The ids of [`Interned`] mapped to ids of their ASCII-folded bytes.
pub(crate) struct FoldedIds {
    /// `of[id]`: the folded id of exact id `id`.
    pub(crate) of: Vec<u32>,
    /// The number of distinct folded tags.
    pub(crate) distinct: usize,
}

/// Dense ids for byte strings, in order of first appearance: strings of at
/// most 7 bytes keyed by their packed `u64` (no byte comparison), longer
/// ones by their bytes. `None` once the ids would not fit in a `u32`.
struct Interner<'b> {
    short: PassMap<u64, u32>,
    long: PassMap<&'b [u8], u32>,
    distinct: usize,
    /// The number of ids that may be handed out (`u32::MAX`; lower in tests).
    limit: u32,
}

impl<'b> Interner<'b> {
    fn new() -> Self {
        Self::with_limit(u32::MAX)
    }

    fn with_limit(limit: u32) -> Self {
        let state = PassState::default();
        Self {
            short: HashMap::with_hasher(state.clone()),
            long: HashMap::with_hasher(state),
            distinct: 0,
            limit,
        }
    }

    /// The id of `bytes`, and whether it is new.
    fn id(&mut self, bytes: &'b [u8]) -> Option<(u32, bool)> {
        // `limit` itself is never handed out, so `next` never collides.
        let next = u32::try_from(self.distinct)
            .ok()
            .filter(|&id| id < self.limit)?;
        let id = match pack(bytes) {
            Some(packed) => *self.short.entry(packed).or_insert(next),
            None => *self.long.entry(bytes).or_insert(next),
        };
        if id == next {
            self.distinct += 1;
        }
        Some((id, id == next))
    }
}

impl TagArena {
    /// Gathers and numbers the tags of `items`.
    pub(crate) fn gather(items: &[&ContextItem]) -> Self {
        let lists: Vec<&[Tag]> = items.iter().map(|item| item.tags()).collect();
        Self::from_lists(&lists, Interner::new())
    }

    /// Numbers the tags of every list (one list per item, in item order).
    fn from_lists<'b>(lists: &[&'b [Tag]], mut interner: Interner<'b>) -> Self {
        let n = lists.len();
        // The offsets first, from the list lengths alone: they give the exact
        // tag count, so `ids` is allocated once at its final size.
        let mut offsets: Vec<usize> = Vec::with_capacity(n + 1);
        offsets.push(0);
        let mut count = 0usize;
        for list in lists {
            count += list.len();
            offsets.push(count);
        }
        // Then, a block of lists at a time, each tag's text (its address and
        // length: a read of the tag, one cache miss per item on a large
        // input, in a loop that does nothing else so that many are in
        // flight at once), then each text numbered while the block's tags
        // are still in cache. Only a tag's first occurrence is copied.
        let mut texts: Vec<&'b str> = Vec::with_capacity(count.min(BLOCK * 4));
        let mut ids: Vec<u32> = Vec::with_capacity(count);
        let mut first: Vec<usize> = Vec::new();
        let mut raw: Vec<u8> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        for block in lists.chunks(BLOCK) {
            texts.clear();
            for list in block {
                texts.extend(list.iter().map(Tag::as_str));
            }
            for text in &texts {
                let Some((id, new)) = interner.id(text.as_bytes()) else {
                    // Four billion distinct tags: keep every occurrence.
                    return Self::unnumbered(lists, offsets);
                };
                if new {
                    first.push(ids.len());
                    raw.extend_from_slice(text.as_bytes());
                    ends.push(raw.len());
                }
                ids.push(id);
            }
        }
        Self {
            raw,
            ends,
            offsets,
            interned: Some(Interned { ids, first }),
            folded_ids: OnceCell::new(),
        }
    }

    /// Every occurrence's bytes in one buffer, not numbered.
    fn unnumbered(lists: &[&[Tag]], offsets: Vec<usize>) -> Self {
        let mut raw: Vec<u8> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        for tag in lists.iter().flat_map(|list| list.iter()) {
            raw.extend_from_slice(tag.as_bytes());
            ends.push(raw.len());
        }
        Self {
            raw,
            ends,
            offsets,
            interned: None,
            folded_ids: OnceCell::new(),
        }
    }

    /// The tags numbered by their exact bytes (once per arena, shared by the
    /// scorers that read it); `None` for four billion distinct tags.
    pub(crate) fn interned(&self) -> Option<&Interned> {
        self.interned.as_ref()
    }

    /// The ASCII-folded id of every exact id of [`interned`](Self::interned):
    /// one fold and one probe per *distinct* tag, not per occurrence.
    pub(crate) fn folded_ids(&self) -> Option<&FoldedIds> {
        self.folded_ids
            .get_or_init(|| {
                let interned = self.interned()?;
                // The distinct tags folded into one small buffer.
                let mut folded: Vec<u8> = Vec::new();
                let mut ends: Vec<usize> = Vec::with_capacity(interned.first.len());
                for &t in &interned.first {
                    let tag = self.tag(t);
                    folded.extend(tag.iter().map(u8::to_ascii_lowercase));
                    ends.push(folded.len());
                }
                let mut interner = Interner::new();
                let mut start = 0;
                let of = ends
                    .iter()
                    .map(|&end| {
                        let id = interner.id(&folded[start..end]).map(|(id, _)| id);
                        start = end;
                        id
                    })
                    .collect::<Option<Vec<u32>>>()?;
                Some(FoldedIds {
                    of,
                    distinct: interner.distinct,
                })
            })
            .as_ref()
    }

    /// The number of items.
    #[cfg(test)]
    pub(crate) fn item_count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The number of tags in total.
    #[cfg(test)]
    pub(crate) fn tag_count(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// The bytes of tag occurrence `t` (`t < tag_count()`).
    pub(crate) fn tag(&self, t: usize) -> &[u8] {
        let k = match &self.interned {
            Some(interned) => interned.ids[t] as usize,
            None => t,
        };
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.raw[start..self.ends[k]]
    }
}

/// Packs up to 7 bytes and their length into a `u64`: the bytes in the low 7
/// bytes, the length in the top byte, so equal packs mean equal byte strings.
/// `None` for longer strings.
pub(crate) fn pack(bytes: &[u8]) -> Option<u64> {
    let len = bytes.len();
    // Whole-word reads (no byte stores into a buffer read back as a word,
    // which stalls store forwarding).
    let body = match (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        _ if len > 7 => return None,
        (Some(first), Some(last)) => {
            // 4..=7 bytes: two overlapping 4-byte reads; the overlap agrees.
            u64::from(u32::from_le_bytes(*first))
                | (u64::from(u32::from_le_bytes(*last)) << (8 * (len - 4)))
        }
        _ => bytes
            .iter()
            .enumerate()
            .fold(0u64, |w, (i, b)| w | (u64::from(*b) << (8 * i))),
    };
    Some(body | ((len as u64) << 56))
}

/// One open scope: the item slice it is for (address and length) and, once
/// a child asked, its gathered tags.
struct Scope {
    slice: (usize, usize),
    tags: Option<Rc<TagArena>>,
}

thread_local! {
    static SCOPES: RefCell<Vec<Scope>> = const { RefCell::new(Vec::new()) };
}

fn slice_key(items: &[&ContextItem]) -> (usize, usize) {
    (items.as_ptr() as usize, items.len())
}

/// While alive, whole-pass tag scorers on this thread scoring exactly the
/// slice the scope was opened for share one [`TagArena`].
///
/// Sound because the slice is borrowed for the scope's whole life (the
/// composite holds it while calling its children): the same address and
/// length mean the same items, and items are immutable. The scope is
/// thread-local, closed on drop (also when a child panics), and a nested
/// scope for the same slice reuses the outer one.
pub(crate) struct TagScope {
    opened: bool,
}

impl TagScope {
    /// Opens a scope for `items` (a no-op if the innermost open scope is for
    /// the same slice, or if `items` is empty).
    pub(crate) fn open(items: &[&ContextItem]) -> Self {
        if items.is_empty() {
            return Self { opened: false };
        }
        let slice = slice_key(items);
        let opened = SCOPES.with(|scopes| {
            let mut scopes = scopes.borrow_mut();
            if scopes.last().is_some_and(|s| s.slice == slice) {
                false
            } else {
                scopes.push(Scope { slice, tags: None });
                true
            }
        });
        Self { opened }
    }
}

impl Drop for TagScope {
    fn drop(&mut self) {
        if self.opened {
            SCOPES.with(|scopes| {
                scopes.borrow_mut().pop();
            });
        }
    }
}

/// The gathered tags of `items`: shared with the innermost open scope when
/// it is for this very slice, gathered afresh otherwise.
pub(crate) fn tags_of(items: &[&ContextItem]) -> Rc<TagArena> {
    let slice = slice_key(items);
    let shared = SCOPES.with(|scopes| {
        let mut scopes = scopes.borrow_mut();
        let scope = scopes.last_mut().filter(|s| s.slice == slice)?;
        Some(
            scope
                .tags
                .get_or_insert_with(|| Rc::new(TagArena::gather(items)))
                .clone(),
        )
    });
    shared.unwrap_or_else(|| Rc::new(TagArena::gather(items)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(tags: &[&str]) -> ContextItem {
        ContextItem::builder("x", 1)
            .tags(tags.iter().copied())
            .build()
            .unwrap()
    }

    #[test]
    fn arena_layout() {
        let a = item(&["Ab", "É"]);
        let b = item(&[]);
        let c = item(&["cD"]);
        let arena = TagArena::gather(&[&a, &b, &c]);
        assert_eq!(arena.item_count(), 3);
        assert_eq!(arena.offsets, vec![0, 2, 2, 3]);
        assert_eq!(arena.tag(0), b"Ab");
        assert_eq!(arena.tag(1), "É".as_bytes());
        assert_eq!(arena.tag(2), b"cD");
    }

    #[test]
    fn tags_are_numbered_by_exact_bytes_then_folded() {
        let a = item(&["Ab", "É", "ab"]);
        let b = item(&[]);
        let c = item(&["cD", "Ab", "long-tag", "LONG-TAG"]);
        let arena = TagArena::gather(&[&a, &b, &c]);
        let interned = arena.interned().unwrap();
        // Occurrences in order: Ab, É, ab (item a), cD, Ab, long-tag,
        // LONG-TAG (item c). Exact bytes, numbered by first appearance: Ab 0,
        // É 1, ab 2, cD 3, Ab again 0, long-tag 4 (8 bytes: keyed by its
        // bytes, not packed), LONG-TAG 5.
        assert_eq!(interned.ids, vec![0, 1, 2, 3, 0, 4, 5]);
        assert_eq!(interned.ids.len(), arena.tag_count());
        // Each id's first occurrence: 0, 1, 2, 3, then 5 and 6.
        assert_eq!(interned.first, vec![0, 1, 2, 3, 5, 6]);
        // Folded: ab 0 (Ab and ab), É 1 (not ASCII: unchanged), cd 2,
        // long-tag 3 (both spellings).
        let folded = arena.folded_ids().unwrap();
        assert_eq!(folded.of, vec![0, 1, 0, 2, 3, 3]);
        assert_eq!(folded.distinct, 4);
    }

    #[test]
    fn numbering_matches_first_appearance_across_blocks() {
        // 2,000 items (four blocks), three of 300 distinct tags each in a
        // shuffled order, some longer than 7 bytes: every id must be the
        // tag's rank of first appearance, as a plain ordered map numbers
        // them, and every occurrence must read back its own bytes.
        let mut items = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2_000 {
            let mut tags = Vec::new();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let t = x % 300;
                tags.push(if t >= 250 {
                    format!("a-long-tag-{t}")
                } else {
                    format!("t{t}")
                });
            }
            items.push(ContextItem::builder("x", 1).tags(tags).build().unwrap());
        }
        let refs: Vec<&ContextItem> = items.iter().collect();
        let arena = TagArena::gather(&refs);
        let interned = arena.interned().unwrap();
        let mut expected: std::collections::BTreeMap<&str, u32> = Default::default();
        let mut t = 0;
        for item in &items {
            for tag in item.tags() {
                let next = expected.len() as u32;
                let id = *expected.entry(tag.as_str()).or_insert(next);
                assert_eq!(interned.ids[t], id, "occurrence {t} ({tag})");
                assert_eq!(arena.tag(t), tag.as_bytes());
                t += 1;
            }
        }
        assert_eq!(t, arena.tag_count());
        assert_eq!(interned.first.len(), expected.len());
    }

    #[test]
    fn too_many_distinct_tags_keep_every_occurrence() {
        // With room for two ids only, the third distinct tag stops the
        // numbering: the arena keeps each occurrence's bytes instead, and
        // the scorers count pair by pair.
        let a = item(&["x", "y"]);
        let b = item(&["x", "z", "a-tag-longer-than-seven"]);
        let lists = [a.tags(), b.tags()];
        let arena = TagArena::from_lists(&lists, Interner::with_limit(2));
        assert!(arena.interned().is_none());
        assert!(arena.folded_ids().is_none());
        assert_eq!(arena.offsets, vec![0, 2, 5]);
        let all: Vec<&[u8]> = (0..arena.tag_count()).map(|t| arena.tag(t)).collect();
        assert_eq!(
            all,
            [&b"x"[..], b"y", b"x", b"z", b"a-tag-longer-than-seven"]
        );
    }

    #[test]
    fn pack_is_the_little_endian_bytes_plus_length() {
        for len in 0..=7usize {
            let bytes: Vec<u8> = (0..len as u8).map(|i| 0xA0 + i).collect();
            let mut word = [0u8; 8];
            word[..len].copy_from_slice(&bytes);
            word[7] = len as u8;
            assert_eq!(pack(&bytes), Some(u64::from_le_bytes(word)), "len {len}");
        }
    }

    #[test]
    fn pack_distinguishes_length_and_bytes() {
        assert_eq!(pack(b"a"), pack(b"a"));
        assert_ne!(pack(b"a"), pack(b"a\0"));
        assert_ne!(pack(b""), pack(b"\0"));
        assert!(pack(b"1234567").is_some());
        assert!(pack(b"12345678").is_none());
    }

    #[test]
    fn scopes_share_for_the_same_slice_only() {
        let a = item(&["x"]);
        let b = item(&["y"]);
        let items = [&a, &b];
        let other = [&b];
        {
            let _outer = TagScope::open(&items);
            let first = tags_of(&items);
            let second = tags_of(&items);
            assert!(Rc::ptr_eq(&first, &second));
            {
                // Nested scope for the same slice: reuses the outer one.
                let _inner = TagScope::open(&items);
                assert!(Rc::ptr_eq(&first, &tags_of(&items)));
            }
            assert!(Rc::ptr_eq(&first, &tags_of(&items)));
            // A different slice is gathered on its own.
            let elsewhere = tags_of(&other);
            assert!(!Rc::ptr_eq(&first, &elsewhere));
            assert_eq!(elsewhere.item_count(), 1);
            {
                // A scope for another slice shadows, then restores.
                let _other = TagScope::open(&other);
                assert!(!Rc::ptr_eq(&first, &tags_of(&items)));
            }
            assert!(Rc::ptr_eq(&first, &tags_of(&items)));
        }
        // Closed: nothing shared any more.
        assert!(!Rc::ptr_eq(&tags_of(&items), &tags_of(&items)));
        SCOPES.with(|s| assert!(s.borrow().is_empty()));
    }
}
