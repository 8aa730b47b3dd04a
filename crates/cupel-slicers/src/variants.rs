//! What the variant-aware slicers share (an extension: `spec/22-variants.md`):
//! the tokens and value of each form of an item, and the one rule for why
//! a variant was taken.

use cupel_core::{ContextItem, ScoredItem, VariantOutcome, VariantReason};

/// The tokens of form `form` of `item` (0: the item itself). Callers only
/// pass forms that exist; a missing one counts as the whole item.
pub(crate) fn form_tokens(item: &ContextItem, form: usize) -> i64 {
    item.variant_tokens(form).unwrap_or_else(|| item.tokens())
}

/// The number of forms of `item`: 1 + its variants.
pub(crate) fn form_count(item: &ContextItem) -> usize {
    item.variants().len() + 1
}

/// Whether form `form` (>= 1) of `item` declares its own value. Undeclared
/// forms are exactly as dense as the whole item (see `ItemVariant::value`),
/// so slicers give them the whole item's density, bit for bit.
pub(crate) fn declares_value(item: &ContextItem, form: usize) -> bool {
    form > 0
        && item
            .variants()
            .get(form - 1)
            .is_some_and(|v| v.declared_value().is_some())
}

/// Why form `form` (>= 1) was taken when the slicer had `room` tokens left
/// for the item: `DidNotFit` when the next more complete form is larger than
/// the room (then every more complete form is: forms shrink), else `Denser`.
pub(crate) fn reason(item: &ContextItem, form: usize, room: i64) -> VariantReason {
    if form_tokens(item, form - 1) > room {
        VariantReason::DidNotFit
    } else {
        VariantReason::Denser
    }
}

/// The tokens of the selected items of `out` in their chosen forms
/// (saturating; indices already validated or skipped).
pub(crate) fn chosen_tokens(items: &[ScoredItem<'_>], out: &VariantOutcome) -> i64 {
    let mut form_of = vec![0usize; if out.picks.is_empty() { 0 } else { items.len() }];
    for p in &out.picks {
        if let Some(slot) = form_of.get_mut(p.index) {
            *slot = p.variant;
        }
    }
    out.outcome
        .selected
        .iter()
        .filter_map(|&i| items.get(i).map(|s| (i, s)))
        .fold(0i64, |acc, (i, s)| {
            let form = form_of.get(i).copied().unwrap_or(0);
            acc.saturating_add(form_tokens(s.item, form))
        })
}
