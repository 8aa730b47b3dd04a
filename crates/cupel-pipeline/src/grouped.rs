//! The unit table of a run whose input holds atomic groups (an extension to
//! the specification; see `spec/18-atomic-groups.md`).
//!
//! A group with two or more members is one *unit*: sliced and placed as a
//! synthetic item whose tokens are the sum of its members', whose kind and
//! source are its first member's (input order) and whose timestamp is the
//! earliest of its members'; the engine gives it the maximum of its
//! members' scores. An item without a group, or alone in its group, is a
//! unit of its own and goes through the stages exactly as in a plain run.
//! Building the table is O(N): one hash map of ids.

use std::collections::hash_map::Entry;

use cupel_core::{ContextItem, CupelError, ExclusionReason, ItemVariant};
use rustc_hash::FxHashMap;

use crate::run::Units;

/// A group of two or more members and what the stages need to know about it.
pub(crate) struct Group<'a> {
    id: &'a str,
    /// Where its members' input indices (ascending) sit in `Grouped::members`.
    start: usize,
    len: usize,
    pinned: bool,
    negative: bool,
    /// Sum of the non-negative members' tokens (fits: see `check_token_totals`).
    tokens: i64,
    /// The item the slicer and placer see (built once membership is known).
    item: Option<ContextItem>,
}

impl Group<'_> {
    /// The reason every member of the group gets when the group is left
    /// out with `available_tokens` of room.
    pub(crate) fn excluded(&self, available_tokens: i64) -> ExclusionReason {
        ExclusionReason::GroupExcluded {
            group: self.id.to_owned(),
            group_tokens: self.tokens,
            available_tokens: available_tokens.max(0),
        }
    }
}

/// One unit: an item of its own, or a group of two or more.
enum Unit {
    Single(usize),
    Group(usize),
}

/// The unit table of one run with groups.
pub(crate) struct Grouped<'a> {
    items: &'a [ContextItem],
    groups: Vec<Group<'a>>,
    /// Every group's members, group after group (one allocation for all).
    members: Vec<usize>,
    /// Units in the input order of their first member.
    units: Vec<Unit>,
}

impl<'a> Grouped<'a> {
    pub(crate) fn build(items: &'a [ContextItem]) -> Result<Self, CupelError> {
        let mut ids: FxHashMap<&str, usize> = FxHashMap::default();
        let mut groups: Vec<Group<'a>> = Vec::new();
        let mut units: Vec<Unit> = Vec::with_capacity(items.len());
        // Pass 1: the groups, their sizes and totals; each grouped item's group.
        let mut group_of: Vec<(usize, usize)> = Vec::new(); // (item, group)
        for (i, item) in items.iter().enumerate() {
            let Some(id) = item.group() else {
                units.push(Unit::Single(i));
                continue;
            };
            let g = match ids.entry(id) {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => {
                    v.insert(groups.len());
                    units.push(Unit::Group(groups.len()));
                    groups.push(Group {
                        id,
                        start: 0,
                        len: 0,
                        pinned: false,
                        negative: false,
                        tokens: 0,
                        item: None,
                    });
                    groups.len() - 1
                }
            };
            group_of.push((i, g));
            let group = &mut groups[g];
            group.len += 1;
            group.pinned |= item.pinned();
            if item.tokens() < 0 {
                group.negative = true;
            } else {
                // Non-negative counts of a checked input: the sum fits in i64.
                group.tokens = group.tokens.saturating_add(item.tokens());
            }
        }
        // Pass 2: the member lists, in input order, in one flat array.
        let mut next = 0;
        let mut fill: Vec<usize> = Vec::with_capacity(groups.len());
        for group in &mut groups {
            group.start = next;
            fill.push(next);
            next += group.len;
        }
        let mut members = vec![0; next];
        for (i, g) in group_of {
            members[fill[g]] = i;
            fill[g] += 1;
        }
        for unit in &mut units {
            if let Unit::Group(g) = *unit {
                let group = &mut groups[g];
                let own = &members[group.start..group.start + group.len];
                match own {
                    // Alone in its group: an item like any other.
                    [only] => *unit = Unit::Single(*only),
                    _ => group.item = Some(synthetic_item(items, group, own)?),
                }
            }
        }
        Ok(Grouped {
            items,
            groups,
            members,
            units,
        })
    }

    fn group_of(&self, u: usize) -> Option<&Group<'a>> {
        match self.units[u] {
            Unit::Single(_) => None,
            Unit::Group(g) => Some(&self.groups[g]),
        }
    }
}

impl Units for Grouped<'_> {
    type Members<'s>
        = std::iter::Copied<std::slice::Iter<'s, usize>>
    where
        Self: 's;
    const GROUPED: bool = true;
    fn count(&self) -> usize {
        self.units.len()
    }
    fn members(&self, u: usize) -> Self::Members<'_> {
        match &self.units[u] {
            Unit::Single(i) => std::slice::from_ref(i),
            Unit::Group(g) => {
                let group = &self.groups[*g];
                &self.members[group.start..group.start + group.len]
            }
        }
        .iter()
        .copied()
    }
    fn tokens(&self, u: usize) -> i64 {
        match self.units[u] {
            Unit::Single(i) => self.items[i].tokens(),
            Unit::Group(g) => self.groups[g].tokens,
        }
    }
    fn pinned(&self, u: usize) -> bool {
        match self.units[u] {
            Unit::Single(i) => self.items[i].pinned(),
            Unit::Group(g) => self.groups[g].pinned,
        }
    }
    fn negative(&self, u: usize) -> bool {
        match self.units[u] {
            Unit::Single(i) => self.items[i].tokens() < 0,
            Unit::Group(g) => self.groups[g].negative,
        }
    }
    fn item(&self, u: usize) -> &ContextItem {
        match self.units[u] {
            Unit::Single(i) => &self.items[i],
            Unit::Group(g) => {
                let group = &self.groups[g];
                // Every multi-member group has its item (see `build`).
                group
                    .item
                    .as_ref()
                    .unwrap_or(&self.items[self.members[group.start]])
            }
        }
    }
    fn group(&self, u: usize) -> Option<&Group<'_>> {
        self.group_of(u)
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
    members: &[usize],
) -> Result<ContextItem, CupelError> {
    let first = &items[members[0]];
    let timestamp = members.iter().filter_map(|&i| items[i].timestamp()).min();
    let levels = members
        .iter()
        .map(|&i| items[i].variants().len())
        .max()
        .unwrap_or(0);
    let mut builder = ContextItem::builder(g.id, g.tokens)
        .kind(first.kind().clone())
        .source(first.source().clone())
        .timestamp_opt(timestamp)
        .pinned(g.pinned);
    if !g.negative {
        for level in 1..=levels {
            let tokens = members.iter().fold(0i64, |acc, &i| {
                let form = member_form(&items[i], level);
                acc.saturating_add(items[i].variant_tokens(form).unwrap_or(0))
            });
            builder = builder.variant(ItemVariant::new(g.id, tokens));
        }
    }
    builder.build()
}

/// The form a member is in when its group is taken at `level` (0: whole).
pub(crate) fn member_form(item: &ContextItem, level: usize) -> usize {
    level.min(item.variants().len())
}
