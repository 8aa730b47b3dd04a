//! The unit table of a run whose input holds atomic groups (an extension to
//! the specification; see `spec/18-atomic-groups.md`).
//!
//! A group with two or more members is one *unit*: sliced and placed as a
//! synthetic item whose tokens are the sum of its members', whose kind and
//! source are its first member's (input order) and whose timestamp is the
//! earliest of its members'; the engine gives it the maximum of its
//! members' scores. An item without a group, or alone in its group, is a
//! unit of its own and goes through the stages exactly as in a plain run.
//!
//! Building the table is one pass over the rows of the run's first pass
//! ([`first_pass`](crate::run::first_pass)), which listed the grouped items:
//! an ungrouped item becomes its own row without being read again; a
//! grouped item goes through one hash map of ids (a member next to the
//! previous grouped item skips it). The same pass turns Classify's rows by
//! item into rows by unit. When every group's members stand next to each
//! other in the input (a tool call and its results, the usual case), the
//! units are consecutive ranges of the input and no member list is built
//! at all; otherwise a second pass lists every unit's members in one flat
//! array.

use std::borrow::Cow;
use std::collections::hash_map::Entry;

use chrono::{DateTime, Utc};
use cupel_core::{ContextItem, CupelError, ExclusionReason, ItemVariant};
use rustc_hash::FxHashMap;

use crate::run::{Scan, Units};

/// A group as the build collects it; it gives way to its unit item
/// ([`Groups::unit_items`]) before the stages run.
struct Group<'a> {
    id: &'a str,
    /// Its unit's row.
    row: u32,
    /// Its first and its latest member so far (input order).
    first: u32,
    last: u32,
    pinned: bool,
    negative: bool,
    /// Sum of the non-negative members' tokens (fits: see `check_token_totals`).
    tokens: i64,
    /// The earliest member timestamp.
    timestamp: Option<DateTime<Utc>>,
    /// The most variants any member has.
    levels: u32,
    /// The item the slicer and placer see, for a group of two or more
    /// (built once membership is known).
    item: Option<ContextItem>,
}

/// The reason every member of a group of two or more gets when the group
/// is left out with `available_tokens` of room, read from the group's unit
/// item (see [`synthetic_item`]): its content is the group id, its tokens
/// the group's (the sum of its non-negative members').
pub(crate) fn group_excluded(unit: &ContextItem, available_tokens: i64) -> ExclusionReason {
    ExclusionReason::GroupExcluded {
        group: unit.content().to_owned(),
        group_tokens: unit.tokens(),
        available_tokens: available_tokens.max(0),
    }
}

/// One unit of a [`Groups`] table while it is built (16 bytes; aligned as a
/// [`Unit`], so that [`Groups::table`] turns the rows into units in place).
#[derive(Clone, Copy)]
#[repr(align(8))]
struct Row {
    /// Its first member's input index.
    first: u32,
    /// Its members: input indices `start..start + len` when the table is
    /// contiguous (then `start == first`), else `Groups::members[start..start + len]`.
    start: u32,
    len: u32,
    /// Its group: an index of the build's groups, then of `Groups::unit_items` ([`NO_GROUP`] for an ungrouped item).
    group: u32,
}

const NO_GROUP: u32 = u32::MAX;

/// How many grouped items [`Groups::build`] reads ahead of their use.
const READ_AHEAD: usize = 64;

/// The units of one run with groups: one row per unit, in the input order
/// of each unit's first member, and the items the groups of two or more
/// are sliced and placed as. The engine reads it through a [`Grouped`]
/// table.
pub(crate) struct Groups<'a> {
    items: &'a [ContextItem],
    /// By group (a row's `group`): the item a group of two or more is
    /// sliced and placed as; `None` for a group of one (its item stands
    /// for itself).
    unit_items: Vec<Option<ContextItem>>,
    /// Taken by [`Groups::table`].
    rows: Vec<Row>,
    /// Every unit's members, unit after unit; empty when `contiguous`
    /// (unit after unit, the members are then `0..items.len()`).
    members: Vec<u32>,
    /// Whether every group's members are adjacent in the input.
    contiguous: bool,
}

/// Reads the next grouped items ahead of their use (their id bytes,
/// timestamps, variants, and the kind and source a group's item copies
/// from its first member): see `run::touch`.
#[inline]
fn read_ahead(items: &[ContextItem], next: &[(usize, &str)]) {
    let sum = next.iter().fold(0usize, |acc, &(g, id)| {
        let item = &items[g];
        acc.wrapping_add(id.len())
            .wrapping_add(usize::from(item.timestamp().is_some()))
            .wrapping_add(item.variants().len())
            .wrapping_add(item.kind().as_str().len())
            .wrapping_add(item.source().as_str().len())
    });
    std::hint::black_box(sum);
}

/// The groups' counts and pins, now that every member was seen (a group
/// with a negative member is excluded: any negative count), in the rows'
/// `tokens` (cut to `rows` rows) and the sorted `pinned` rows.
fn counts_and_pins(
    groups: &[Group<'_>],
    rows: usize,
    tokens: &mut Vec<i64>,
    pinned: &mut Vec<usize>,
) {
    tokens.truncate(rows);
    for group in groups {
        tokens[group.row as usize] = if group.negative { -1 } else { group.tokens };
        if group.pinned {
            pinned.push(group.row as usize);
        }
    }
    pinned.sort_unstable();
}

impl<'a> Group<'a> {
    /// Group `g` (id `id`), first seen at item `i`, with its unit row
    /// appended to `rows`.
    #[inline]
    fn new(id: &'a str, i: usize, rows: &mut Vec<Row>, g: u32) -> Self {
        let row = rows.len() as u32;
        rows.push(Row {
            first: i as u32,
            start: i as u32,
            len: 0,
            group: g,
        });
        Group {
            id,
            row,
            first: i as u32,
            last: i as u32,
            pinned: false,
            negative: false,
            tokens: 0,
            timestamp: None,
            levels: 0,
            item: None,
        }
    }

    /// Adds item `i` (`item`, its `tokens`, whether pinned) as a member;
    /// whether it follows the previous member directly (else the members
    /// are not one range).
    #[inline]
    fn add(&mut self, i: usize, item: &ContextItem, tokens: i64, pinned: bool) -> bool {
        // A member after the group was closed (its members interleave
        // with other units): its item is made again at the end.
        self.item = None;
        let contiguous = self.last + 1 >= i as u32;
        self.last = i as u32;
        self.pinned |= pinned;
        if tokens < 0 {
            self.negative = true;
        } else {
            self.tokens = self.tokens.saturating_add(tokens);
        }
        self.timestamp = match (self.timestamp, item.timestamp()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.levels = self
            .levels
            .max(u32::try_from(item.variants().len()).unwrap_or(u32::MAX));
        contiguous
    }
}

impl<'a> Groups<'a> {
    /// The units of `items`, whose grouped items are `grouped` (input
    /// index and group id, ascending), and `scan` (the first pass's reads,
    /// by item) turned into rows by unit: each unit's tokens — a group's
    /// non-negative total, or a negative count when a member is negative —
    /// and the pinned units. The rows are rewritten in place: a unit's row
    /// is never after its first member's.
    pub(crate) fn build(
        items: &'a [ContextItem],
        grouped: &[(usize, &'a str)],
        scan: Scan,
    ) -> Result<(Self, Scan), CupelError> {
        if u32::try_from(items.len()).is_err() {
            return Err(CupelError::InvalidArgument(format!(
                "a run with atomic groups takes at most {} items; {} were given",
                u32::MAX,
                items.len()
            )));
        }
        // (Every index below fits in u32: checked above.)
        let Scan {
            mut tokens,
            pinned: pinned_items,
        } = scan;
        let mut pins = pinned_items.iter().copied().peekable();
        let mut pinned: Vec<usize> = Vec::with_capacity(pinned_items.len());
        let mut rows: Vec<Row> = Vec::with_capacity(items.len());
        // At most one group per grouped item: neither grows. (The room of
        // groups that are not made is never written, and the groups give
        // way to a list of their exact size before the stages run.)
        let mut ids: FxHashMap<&'a str, u32> =
            FxHashMap::with_capacity_and_hasher(grouped.len(), Default::default());
        let mut groups: Vec<Group<'a>> = Vec::with_capacity(grouped.len());
        let mut contiguous = true;
        // Members usually sit next to each other (a tool call and its
        // result): the previous grouped item's group is tried before the map.
        let mut last: Option<(&'a str, u32)> = None;
        // The group of the previous item: when another item follows it,
        // its unit item is made while its members are still in cache.
        let mut open: Option<u32> = None;
        // The first item not yet in a row.
        let mut next = 0;
        for (seen, &(i, id)) in grouped.iter().enumerate() {
            if next < i {
                // The ungrouped items before this one, a unit each: nothing
                // read from them.
                if let Some(g) = open.take() {
                    close(items, &mut groups, &rows, g);
                }
                singles(next..i, &mut rows, &mut tokens, &mut pins, &mut pinned);
            }
            next = i + 1;
            if seen % READ_AHEAD == 0 {
                read_ahead(items, &grouped[seen..grouped.len().min(seen + READ_AHEAD)]);
            }
            // Unit `rows.len()` <= `i`: its count goes where item `i`'s was
            // (already read) or before it.
            let item_tokens = tokens[i];
            let is_pinned = pins.next_if_eq(&i).is_some();
            let item = &items[i];
            let g = match last {
                Some((last_id, g)) if last_id == id => g,
                _ => match ids.entry(id) {
                    Entry::Occupied(o) => *o.get(),
                    Entry::Vacant(v) => {
                        let g = groups.len() as u32;
                        v.insert(g);
                        // (The group's count is written once it is known.)
                        tokens[rows.len()] = 0;
                        groups.push(Group::new(id, i, &mut rows, g));
                        g
                    }
                },
            };
            last = Some((id, g));
            if open != Some(g) {
                if let Some(open) = open {
                    close(items, &mut groups, &rows, open);
                }
                open = Some(g);
            }
            let group = &mut groups[g as usize];
            contiguous &= group.add(i, item, item_tokens, is_pinned);
            rows[group.row as usize].len += 1;
        }
        if let Some(g) = open {
            close(items, &mut groups, &rows, g);
        }
        singles(
            next..items.len(),
            &mut rows,
            &mut tokens,
            &mut pins,
            &mut pinned,
        );
        counts_and_pins(&groups, rows.len(), &mut tokens, &mut pinned);
        let members = if contiguous {
            Vec::new()
        } else {
            list_members(items, &groups, &ids, &mut rows)
        };
        drop(ids);
        // The groups give way to their unit items (what the stages read of
        // them; 8 bytes a group), each group of two or more with the item
        // `close` made, or made now (a group whose members have variants,
        // or interleave with other units). Their memory goes back before
        // the stages run.
        let mut unit_items = Vec::with_capacity(groups.len());
        for group in groups {
            let row = rows[group.row as usize];
            let item = match group.item {
                None if row.len > 1 => {
                    let members = Members::new(row.start, row.len, &members);
                    Some(synthetic_item(items, &group, members)?)
                }
                item => item,
            };
            unit_items.push(item);
        }
        let table = Groups {
            items,
            unit_items,
            rows,
            members,
            contiguous,
        };
        Ok((table, Scan { tokens, pinned }))
    }

    /// The table the engine reads. The rows become its units in place
    /// (`Row` and `Unit` have one size and alignment), so a run holds one
    /// table, not two.
    pub(crate) fn table(&mut self) -> Grouped<'_> {
        let rows = std::mem::take(&mut self.rows);
        let this = &*self;
        let rows = rows
            .into_iter()
            .map(|row| {
                let own = &this.items[row.first as usize];
                let item = if row.len > 1 {
                    // Every group of two or more has its item (see `build`).
                    this.unit_items[row.group as usize].as_ref().unwrap_or(own)
                } else {
                    own
                };
                Unit {
                    item,
                    start: row.start,
                    len: row.len,
                }
            })
            .collect();
        Grouped { units: this, rows }
    }
}

/// A unit as the engine reads it (16 bytes): the item the slicer and placer
/// see (its own, or its group's) and where its members are.
#[derive(Clone, Copy)]
struct Unit<'t> {
    item: &'t ContextItem,
    start: u32,
    len: u32,
}

/// The unit table of one run with groups: by unit, the item the slicer and
/// placer see and where its members are, so that reading a unit in score
/// order costs one lookup, as in a plain run; the [`Groups`] behind it
/// answer the rarer questions (which group, its members' list).
pub(crate) struct Grouped<'t> {
    units: &'t Groups<'t>,
    rows: Vec<Unit<'t>>,
}

impl Grouped<'_> {
    #[inline]
    fn members_of(&self, unit: Unit<'_>) -> Members<'_> {
        Members::new(unit.start, unit.len, &self.units.members)
    }
}

/// The members of one unit, in input order.
pub(crate) struct Members<'s> {
    next: usize,
    end: usize,
    /// Positions `next..end` of this list, or the positions themselves when
    /// it is empty (a contiguous table).
    map: &'s [u32],
}

impl<'s> Members<'s> {
    /// The `len` members from position `start` of `map` (of the input,
    /// when `map` is empty).
    #[inline]
    fn new(start: u32, len: u32, map: &'s [u32]) -> Self {
        Members {
            next: start as usize,
            end: start as usize + len as usize,
            map,
        }
    }
}

impl Iterator for Members<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.next >= self.end {
            return None;
        }
        let k = self.next;
        self.next += 1;
        Some(if self.map.is_empty() {
            k
        } else {
            self.map.get(k).map_or(k, |&i| i as usize)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
    fn count(self) -> usize {
        self.end - self.next
    }
}

impl ExactSizeIterator for Members<'_> {}

impl Units for Grouped<'_> {
    type Members<'s>
        = Members<'s>
    where
        Self: 's;
    const GROUPED: bool = true;
    fn count(&self) -> usize {
        self.rows.len()
    }
    #[inline]
    fn members(&self, u: usize) -> Members<'_> {
        self.members_of(self.rows[u])
    }
    fn member_items<'u>(&self, units: &'u [usize]) -> Cow<'u, [usize]> {
        let n = self.units.items.len();
        // Every item is in exactly one unit: all of them, in input order.
        if units.len() == self.rows.len() {
            return Cow::Owned((0..n).collect());
        }
        let rows = units.iter().map(|&u| self.rows[u]);
        if self.units.contiguous {
            // Ascending units are ascending ranges.
            let mut out = Vec::with_capacity(rows.clone().map(|r| r.len as usize).sum());
            for row in rows {
                out.extend(row.start as usize..(row.start + row.len) as usize);
            }
            return Cow::Owned(out);
        }
        // Members of different groups interleave: mark, then collect in
        // input order (O(N)).
        let mut marked = vec![false; n];
        for row in rows {
            for i in self.members_of(row) {
                marked[i] = true;
            }
        }
        Cow::Owned((0..n).filter(|&i| marked[i]).collect())
    }
    #[inline]
    fn multi(&self, u: usize) -> bool {
        self.rows[u].len > 1
    }
    #[inline]
    fn item(&self, u: usize) -> &ContextItem {
        self.rows[u].item
    }
}

/// Every unit's members, unit after unit, each unit's in input order (a
/// second pass, for groups whose members interleave with other units);
/// each row's `start` becomes its position in the list.
fn list_members(
    items: &[ContextItem],
    groups: &[Group<'_>],
    ids: &FxHashMap<&str, u32>,
    rows: &mut [Row],
) -> Vec<u32> {
    let mut next = 0u32;
    for row in rows.iter_mut() {
        row.start = next;
        next += row.len;
    }
    let mut fill: Vec<u32> = rows.iter().map(|r| r.start).collect();
    let mut members = vec![0u32; items.len()];
    // Rows were made in this same order: an ungrouped item, or a group's
    // first member, opens the next one.
    let mut opened = 0;
    for (i, item) in items.iter().enumerate() {
        let row = match item.group().and_then(|id| ids.get(id)) {
            Some(&g) => {
                let group = &groups[g as usize];
                if group.first as usize == i {
                    opened += 1;
                }
                group.row as usize
            }
            None => {
                opened += 1;
                opened - 1
            }
        };
        members[fill[row] as usize] = i as u32;
        fill[row] += 1;
    }
    members
}

/// Rows for the ungrouped items `range`, a unit each, after the rows so
/// far: their counts move down to their units' places (`tokens` is by item
/// from `range.start` on, by unit before it), and their pins, the next of
/// `pins` (item indices) below `range.end`, become unit ids.
fn singles(
    range: std::ops::Range<usize>,
    rows: &mut Vec<Row>,
    tokens: &mut [i64],
    pins: &mut std::iter::Peekable<impl Iterator<Item = usize>>,
    pinned: &mut Vec<usize>,
) {
    if range.is_empty() {
        return;
    }
    let first_row = rows.len();
    tokens.copy_within(range.clone(), first_row);
    while let Some(i) = pins.next_if(|&i| i < range.end) {
        pinned.push(first_row + (i - range.start));
    }
    // (Every index fits in u32: checked by `Groups::build`.)
    rows.extend(range.map(|i| Row {
        first: i as u32,
        start: i as u32,
        len: 1,
        group: NO_GROUP,
    }));
}

/// Makes the unit item of group `g` once no more members follow it
/// directly, when it has two or more members and needs nothing but its
/// totals (no member has variants, or the group is excluded anyway). The
/// rest are made after the pass, from their member lists.
fn close(items: &[ContextItem], groups: &mut [Group<'_>], rows: &[Row], g: u32) {
    let group = &mut groups[g as usize];
    if rows[group.row as usize].len > 1 && (group.levels == 0 || group.negative) {
        // Cannot fail: the first member has the group's id.
        group.item = ContextItem::group_unit(
            &items[group.first as usize],
            group.tokens,
            group.timestamp,
            group.pinned,
        )
        .ok();
    }
}

/// The item a group is sliced and placed as: the group id as content (never
/// empty: the builder rejects empty ids), the members' total tokens, the first
/// member's kind and source, the earliest member timestamp.
///
/// When a member has variants (chapter 22), the group has variants too, one
/// per *level*: at level `j` every member is in its form `min(j, its
/// variant count)`, so the group shrinks and stays whole
/// ([`member_form`]). Level tokens sum the members' forms and never grow
/// from one level to the next, since no member's forms do.
fn synthetic_item(
    items: &[ContextItem],
    g: &Group<'_>,
    members: Members<'_>,
) -> Result<ContextItem, CupelError> {
    let first = &items[g.first as usize];
    if g.levels == 0 || g.negative {
        return ContextItem::group_unit(first, g.tokens, g.timestamp, g.pinned);
    }
    let members: Vec<&ContextItem> = members.map(|i| &items[i]).collect();
    let mut builder = ContextItem::builder(g.id, g.tokens)
        .kind(first.kind().clone())
        .source(first.source().clone())
        .timestamp_opt(g.timestamp)
        .pinned(g.pinned);
    for level in 1..=g.levels as usize {
        let tokens = members.iter().fold(0i64, |acc, item| {
            let form = member_form(item, level);
            acc.saturating_add(item.variant_tokens(form).unwrap_or(0))
        });
        builder = builder.variant(ItemVariant::new(g.id, tokens));
    }
    builder.build()
}

/// The form a member is in when its group is taken at `level` (0: whole).
pub(crate) fn member_form(item: &ContextItem, level: usize) -> usize {
    level.min(item.variants().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::first_pass;

    fn item(content: &str, tokens: i64, group: Option<&str>) -> ContextItem {
        ContextItem::builder(content, tokens)
            .group_opt(group.map(str::to_owned))
            .build()
            .unwrap()
    }

    /// The table and Classify's rows, as a run builds them.
    fn build(items: &[ContextItem]) -> (Groups<'_>, Scan) {
        let pass = first_pass(items);
        Groups::build(items, &pass.grouped, pass.scan).unwrap()
    }

    fn members_of(table: &Grouped<'_>) -> Vec<Vec<usize>> {
        (0..table.count())
            .map(|u| table.members(u).collect())
            .collect()
    }

    #[test]
    fn adjacent_members_keep_input_order_and_a_lone_member_is_its_own_unit() {
        let items = [
            item("a", 1, Some("g1")),
            item("b", 2, Some("g1")),
            item("c", 3, None),
            item("d", 4, Some("g2")),
            item("e", 5, Some("g3")),
            item("f", 6, Some("g3")),
        ];
        let (mut groups, scan) = build(&items);
        let table = groups.table();
        // Units by first member: g1 = {0, 1}, c, d (alone in g2), g3 = {4, 5}.
        assert_eq!(
            members_of(&table),
            [vec![0, 1], vec![2], vec![3], vec![4, 5]]
        );
        assert!(table.units.contiguous);
        // Unit items: g1 stands as "g1" with 1 + 2 = 3 tokens, g3 as "g3"
        // with 5 + 6 = 11; d is itself, not a group (g2 has one member).
        let seen: Vec<(&str, i64)> = (0..4)
            .map(|u| (table.item(u).content(), table.item(u).tokens()))
            .collect();
        assert_eq!(seen, [("g1", 3), ("c", 3), ("d", 4), ("g3", 11)]);
        // Classify's counts, by unit, are the same.
        assert_eq!(scan.tokens, [3, 3, 4, 11]);
        assert!(!table.multi(2) && table.multi(3));
        // Units 0, 2, 3 hold items 0, 1 | 3 | 4, 5.
        assert_eq!(*table.member_items(&[0, 2, 3]), [0, 1, 3, 4, 5]);
    }

    #[test]
    fn the_rows_become_the_units_in_place() {
        let items = [
            item("a", 1, Some("g")),
            item("b", 2, Some("g")),
            item("c", 3, None),
        ];
        let (mut groups, _) = build(&items);
        let rows = groups.rows.as_ptr() as usize;
        let table = groups.table();
        // One allocation: the units are written over the rows.
        assert_eq!(table.rows.as_ptr() as usize, rows);
        assert!(table.units.rows.is_empty());
    }

    #[test]
    fn interleaved_groups_list_their_members_in_input_order() {
        let items = [
            item("g-call", 10, Some("g")),
            item("x", 10, None),
            item("G-call", 10, Some("G")),
            item("g-result", 10, Some("g")),
            item("G-result", 10, Some("G")),
        ];
        let (mut groups, _) = build(&items);
        let table = groups.table();
        // g = {0, 3}, x, G = {2, 4}: the members of g and G interleave.
        assert_eq!(members_of(&table), [vec![0, 3], vec![1], vec![2, 4]]);
        assert!(!table.units.contiguous);
        // Units g and G: items 0, 3 and 2, 4, listed by input index.
        assert_eq!(*table.member_items(&[0, 2]), [0, 2, 3, 4]);
        assert_eq!(*table.member_items(&[1]), [1]);
    }

    #[test]
    fn a_member_after_its_group_was_closed_remakes_the_group_item() {
        // g's item is first made when x follows its second member (3 + 4 =
        // 7 tokens); the third member, after x, makes it 3 + 4 + 6 = 13.
        let items = [
            item("g-call", 3, Some("g")),
            item("g-result", 4, Some("g")),
            item("x", 5, None),
            item("g-retry", 6, Some("g")),
        ];
        let (mut groups, scan) = build(&items);
        let table = groups.table();
        assert_eq!(members_of(&table), [vec![0, 1, 3], vec![2]]);
        assert!(!table.units.contiguous);
        assert_eq!((table.item(0).content(), table.item(0).tokens()), ("g", 13));
        assert_eq!(scan.tokens, [13, 5]);
    }

    #[test]
    fn a_group_with_variants_sums_its_members_level_by_level() {
        // Level 1: the call has no variant (whole, 5) + the result's first
        // form (20) = 25; level 2: 5 + the result's second form (2) = 7.
        let result = ContextItem::builder("result", 100)
            .group("g")
            .variant(ItemVariant::new("head…tail", 20))
            .variant(ItemVariant::new("[omitted]", 2))
            .build()
            .unwrap();
        let items = [item("call", 5, Some("g")), result, item("y", 1, None)];
        assert!(first_pass(&items).varied);
        let (mut groups, _) = build(&items);
        let table = groups.table();
        let unit = table.item(0);
        assert_eq!(unit.tokens(), 105);
        let forms: Vec<i64> = unit.variants().iter().map(ItemVariant::tokens).collect();
        assert_eq!(forms, [25, 7]);
    }

    #[test]
    fn a_negative_member_marks_its_group_and_is_left_out_of_the_total() {
        let items = [item("a", 7, Some("g")), item("b", -2, Some("g"))];
        let (mut groups, scan) = build(&items);
        let table = groups.table();
        // One unit, whose item has 7 tokens (the -2 is not summed); Classify
        // sees a negative count and excludes it.
        assert_eq!((table.count(), table.item(0).tokens()), (1, 7));
        assert_eq!(scan.tokens.len(), 1);
        assert!(scan.tokens[0] < 0);
    }

    #[test]
    fn pinned_units_are_listed_in_unit_order() {
        // Units: a (pinned), g = {1, 3} (pinned by its second member, after
        // c was listed), c (pinned), d. Unit ids: a 0, g 1, c 2, d 3.
        let pinned = |content: &str, group: Option<&str>| {
            ContextItem::builder(content, 1)
                .group_opt(group.map(str::to_owned))
                .pinned(true)
                .build()
                .unwrap()
        };
        let items = [
            pinned("a", None),
            item("g-call", 1, Some("g")),
            pinned("c", None),
            pinned("g-result", Some("g")),
            item("d", 1, None),
        ];
        let (mut groups, scan) = build(&items);
        assert_eq!(
            members_of(&groups.table()),
            [vec![0], vec![1, 3], vec![2], vec![4]]
        );
        assert_eq!(scan.pinned, [0, 1, 2]);
        assert_eq!(scan.tokens, [1, 2, 1, 1]);
    }

    proptest::proptest! {
        /// The table against a reference built the obvious way: units in the
        /// input order of their first member (an item without a group, or a
        /// group id's members), each unit's members ascending, a group's
        /// tokens the sum of its non-negative members' (Classify's row: a
        /// negative count when a member is negative), pinned when a member
        /// is, and every member list of a set of units in input order.
        #[test]
        fn the_table_matches_a_reference(
            spec in proptest::collection::vec(
                (proptest::option::of(0u8..6), -2i64..20, proptest::bool::weighted(0.2)),
                1..40,
            ),
            pick in proptest::collection::vec(proptest::bool::ANY, 40),
        ) {
            let items: Vec<ContextItem> = spec
                .iter()
                .enumerate()
                .map(|(i, &(g, t, pinned))| {
                    ContextItem::builder(format!("i{i}"), t)
                        .group_opt(g.map(|g| format!("g{g}")))
                        .pinned(pinned)
                        .build()
                        .unwrap()
                })
                .collect();
            let mut reference: Vec<(Option<String>, Vec<usize>)> = Vec::new();
            for (i, it) in items.iter().enumerate() {
                match it.group() {
                    Some(g) => match reference.iter_mut().find(|(id, _)| id.as_deref() == Some(g)) {
                        Some((_, m)) => m.push(i),
                        None => reference.push((Some(g.to_owned()), vec![i])),
                    },
                    None => reference.push((None, vec![i])),
                }
            }
            if items.iter().all(|i| i.group().is_none()) {
                return Ok(());
            }
            let (mut groups, scan) = build(&items);
            let table = groups.table();
            let expected: Vec<Vec<usize>> = reference.iter().map(|(_, m)| m.clone()).collect();
            proptest::prop_assert_eq!(scan.tokens.len(), expected.len());
            proptest::prop_assert_eq!(members_of(&table), expected.clone());
            for (u, m) in expected.iter().enumerate() {
                let sum: i64 = m.iter().map(|&i| items[i].tokens()).filter(|&t| t >= 0).sum();
                let negative = m.iter().any(|&i| items[i].tokens() < 0);
                if m.len() > 1 {
                    proptest::prop_assert_eq!(table.item(u).tokens(), sum);
                    proptest::prop_assert_eq!(table.item(u).content(), reference[u].0.as_deref().unwrap());
                } else {
                    proptest::prop_assert!(table.item(u).ptr_eq(&items[m[0]]));
                }
                // Classify's row: the sum, or a negative count.
                if negative {
                    proptest::prop_assert!(scan.tokens[u] < 0);
                } else {
                    proptest::prop_assert_eq!(scan.tokens[u], sum);
                }
                let pinned = m.iter().any(|&i| items[i].pinned());
                proptest::prop_assert_eq!(scan.pinned.contains(&u), pinned);
                proptest::prop_assert_eq!(table.multi(u), m.len() > 1);
                // A left-out group's reason comes from its unit item.
                if m.len() > 1 {
                    let expected = ExclusionReason::GroupExcluded {
                        group: reference[u].0.clone().unwrap_or_default(),
                        group_tokens: sum,
                        available_tokens: 5,
                    };
                    proptest::prop_assert_eq!(table.excluded_group(u, 5), Some(expected));
                } else {
                    proptest::prop_assert_eq!(table.excluded_group(u, 5), None);
                }
            }
            let chosen: Vec<usize> = (0..expected.len()).filter(|&u| pick[u]).collect();
            let mut listed: Vec<usize> = chosen.iter().flat_map(|&u| expected[u].clone()).collect();
            listed.sort_unstable();
            proptest::prop_assert_eq!(table.member_items(&chosen).into_owned(), listed);
            proptest::prop_assert!(scan.pinned.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
