//! Pinned-override blame (clarification D-9): which exclusions the pinned
//! items are to blame for, computed once per traced run and shared by the
//! Slice stage and Truncate.

use cupel_core::{ContextBudget, ContextItem, ExclusionReason};

/// Decides which exclusions the pinned items are to blame for (clarification
/// D-9), keeping count of the tokens blamed on each pinned item so that no
/// pinned item is ever said to have displaced more tokens than it holds.
/// Never applied to a multi-member group (chapter 18).
pub(crate) struct PinnedBlame {
    /// Content of each pinned item, in input order.
    names: Vec<String>,
    /// Tokens of the pinned items `0..=k` together.
    cumulative: Vec<i64>,
    /// Effective target with the pinned items `0..=k` subtracted (non-increasing).
    targets: Vec<i64>,
    /// Effective target with no pinned tokens subtracted.
    target_without: i64,
    /// Tokens each pinned item can still be blamed for.
    unblamed: Vec<i64>,
}

impl PinnedBlame {
    pub(crate) fn new(budget: &ContextBudget, items: &[ContextItem], pinned: &[usize]) -> Self {
        let mut b = PinnedBlame {
            names: Vec::with_capacity(pinned.len()),
            cumulative: Vec::with_capacity(pinned.len()),
            targets: Vec::with_capacity(pinned.len()),
            target_without: budget.effective(0).target_tokens,
            unblamed: Vec::with_capacity(pinned.len()),
        };
        let mut sum: i64 = 0;
        for &i in pinned {
            let item = &items[i];
            // Pinned tokens were checked against the budget: the sum fits.
            sum = sum.saturating_add(item.tokens());
            b.names.push(item.content().to_owned());
            b.cumulative.push(sum);
            b.targets.push(budget.effective(sum).target_tokens);
            b.unblamed.push(item.tokens());
        }
        b
    }

    /// At Slice: the item alone is larger than the effective target computed
    /// with the pinned tokens yet fits the one computed without them. Names
    /// the first pinned item (input order) whose tokens, added to those before
    /// it, make the item too large.
    pub(crate) fn at_slice(&mut self, tokens: i64) -> Option<ExclusionReason> {
        let with_all = *self.targets.last()?;
        if tokens <= with_all || tokens > self.target_without {
            return None;
        }
        let k = self.targets.partition_point(|&t| tokens <= t);
        self.charge(k, tokens)
    }

    /// At Truncate: the item, dropped with `kept_unpinned` non-pinned tokens
    /// kept before it, would have been kept had the pinned tokens not counted.
    /// Names the first pinned item at which the pinned tokens so far push it
    /// over `target`.
    pub(crate) fn at_truncate(
        &mut self,
        tokens: i64,
        kept_unpinned: i64,
        target: i64,
    ) -> Option<ExclusionReason> {
        if self.names.is_empty() || kept_unpinned.saturating_add(tokens) > target {
            return None;
        }
        let k = self
            .cumulative
            .partition_point(|&p| kept_unpinned.saturating_add(p).saturating_add(tokens) <= target);
        self.charge(k, tokens)
    }

    /// Blames pinned item `k` for `tokens`, if it still holds that many.
    fn charge(&mut self, k: usize, tokens: i64) -> Option<ExclusionReason> {
        let left = self.unblamed.get_mut(k)?;
        if tokens > *left {
            return None;
        }
        *left -= tokens;
        Some(ExclusionReason::PinnedOverride {
            displaced_by: self.names[k].clone(),
        })
    }
}
