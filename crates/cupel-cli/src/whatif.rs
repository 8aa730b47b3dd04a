//! What the what-if commands (`sweep`, `marginal`, `min-budget`, `compare`)
//! share: per-position outcomes of a run, the probe description, the
//! specification's refusals as input errors, and the item column layout.

use std::collections::HashMap;
use std::fmt::Write as _;

use cupel_analytics::{MARGINAL_ITEMS_QUOTA_MESSAGE, MIN_BUDGET_MONOTONIC_MESSAGE};
use cupel_core::{
    ContextBudget, ContextItem, CupelError, ExclusionReason, ExclusionRecord, InclusionReason,
    InclusionRecord, StageTrace, TraceCollector,
};
use cupel_pipeline::{Pipeline, Policy, RunOptions};

use crate::error::CliError;
use crate::input::Prepared;
use crate::render::{self, WIDTH};

/// What one run did with one input item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// In the window.
    pub(crate) included: bool,
    /// The item's score in this run (1.0 for pinned items, 0.0 when it was
    /// excluded before scoring).
    pub(crate) score: f64,
    /// `Scored`, `Pinned`, `BudgetExceeded: 85 > 3 available`, ... (the
    /// explanation table's wording).
    pub(crate) reason: String,
    /// The tokens the window holds for an included item (a variant's when it
    /// went in as one); the item's own tokens otherwise.
    pub(crate) tokens: i64,
}

/// One run, by input position.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// `outcomes[i]` is what happened to `items[i]` (`None` only if the
    /// pipeline reported nothing for it).
    pub(crate) outcomes: Vec<Option<Outcome>>,
    /// Positions of the included items, in placed order.
    pub(crate) placed: Vec<usize>,
    /// Sum of the included items' tokens.
    pub(crate) tokens: i128,
}

impl Run {
    /// Whether `items[i]` is in the window.
    pub(crate) fn includes(&self, i: usize) -> bool {
        self.outcomes
            .get(i)
            .and_then(Option::as_ref)
            .is_some_and(|o| o.included)
    }
}

/// Records every item's fate by input position (the pipeline hands each
/// record its index), so identity never depends on content (D-1).
#[derive(Debug, Default)]
struct Positions {
    raw: Vec<Option<(f64, Fate)>>,
    placed: Vec<usize>,
}

#[derive(Debug, Clone)]
enum Fate {
    /// Included, holding this many tokens.
    In(InclusionReason, i64),
    Out(ExclusionReason),
}

impl TraceCollector for Positions {
    fn is_enabled(&self) -> bool {
        true
    }

    fn on_run_started(&mut self, items: &[ContextItem], _budget: &ContextBudget) {
        self.raw = vec![None; items.len()];
        self.placed.clear();
    }

    fn on_stage_completed(&mut self, _trace: &StageTrace) {}

    fn on_item_excluded(&mut self, r: ExclusionRecord<'_>) {
        if let Some(slot) = self.raw.get_mut(r.index) {
            *slot = Some((r.score, Fate::Out(r.reason)));
        }
    }

    fn on_item_included(&mut self, r: InclusionRecord<'_>) {
        if let Some(slot) = self.raw.get_mut(r.index) {
            *slot = Some((r.score, Fate::In(r.reason, r.item.tokens())));
        }
        self.placed.push(r.index);
    }
}

/// Runs `policy` on `items` under `budget` (a dry run: no side effects) and
/// returns every item's outcome. O(N) beyond the run itself: duplicates and
/// displacing pinned items are found through one content map each.
pub(crate) fn run(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
) -> Result<Run, CupelError> {
    let mut rec = Positions::default();
    Pipeline::new(policy.clone(), budget.clone())
        .run_with(items, RunOptions::new().collector(&mut rec))?;
    // The item a duplicate lost to: the first of its content that was not
    // itself deduplicated. The pinned item a displaced one names: the first
    // pinned item with that content.
    let mut kept: HashMap<&str, usize> = HashMap::new();
    let mut pinned: HashMap<&str, usize> = HashMap::new();
    for (i, (item, raw)) in items.iter().zip(&rec.raw).enumerate() {
        let deduplicated = matches!(
            raw,
            Some((_, Fate::Out(ExclusionReason::Deduplicated { .. })))
        );
        if !deduplicated {
            kept.entry(item.content()).or_insert(i);
        }
        if item.pinned() {
            pinned.entry(item.content()).or_insert(i);
        }
    }
    let outcomes: Vec<Option<Outcome>> = rec
        .raw
        .into_iter()
        .zip(items)
        .map(|(raw, item)| {
            raw.map(|(score, fate)| match fate {
                Fate::In(reason, tokens) => Outcome {
                    included: true,
                    score,
                    reason: reason.to_string(),
                    tokens,
                },
                Fate::Out(reason) => Outcome {
                    included: false,
                    score,
                    tokens: item.tokens(),
                    reason: render::exclusion_text(
                        &reason,
                        |c| kept.get(c).copied(),
                        |c| pinned.get(c).copied(),
                    ),
                },
            })
        })
        .collect();
    let tokens = rec
        .placed
        .iter()
        .filter_map(|&i| outcomes.get(i).and_then(Option::as_ref))
        .map(|o| i128::from(o.tokens))
        .sum();
    Ok(Run {
        outcomes,
        placed: rec.placed,
        tokens,
    })
}

/// The run INPUT asks for (what `cupel select` does), by position.
pub(crate) fn run_input(p: &Prepared) -> Result<Run, CliError> {
    run(&p.policy, &p.budget, &p.items).map_err(|e| CliError::from_run(&e))
}

/// The pipeline of `p` (its policy with its budget).
pub(crate) fn pipeline(p: &Prepared) -> Pipeline {
    Pipeline::new(p.policy.clone(), p.budget.clone())
}

/// The specification's refusal of a non-monotonic slicer as an input error
/// (exit code 2: the policy does not suit the command); `None` for any other
/// error.
pub(crate) fn refusal(e: &CupelError, alternative: &str) -> Option<CliError> {
    match e {
        CupelError::PipelineConfig(m)
            if m == MARGINAL_ITEMS_QUOTA_MESSAGE || m == MIN_BUDGET_MONOTONIC_MESSAGE =>
        {
            Some(CliError::input(m.clone()).hint(format!(
                "use a policy with a greedy or knapsack slicer (--policy recent-dense, --policy FILE){alternative}"
            )))
        }
        _ => None,
    }
}

/// How every probe budget of `sweep` and `min-budget` is formed (S-3).
pub(crate) fn probe_note(b: &ContextBudget) -> String {
    let mut kept = format!("output_reserve {}", b.output_reserve());
    if !b.reserved_slots().is_empty() {
        kept.push_str(", reserved slots");
    }
    if b.estimation_safety_margin_percent() > 0.0 {
        kept.push_str(", safety margin");
    }
    format!("each probe b sets max_tokens = target_tokens = b and keeps {kept}")
}

/// `#7 Document, 85 tokens`.
pub(crate) fn item_head(i: usize, item: &ContextItem) -> String {
    format!(
        "#{i} {}, {} tokens",
        render::clip(item.kind().as_str(), 24),
        item.tokens()
    )
}

/// Appends `label` + `text` wrapped to 80 columns (continuation lines
/// indented under the text).
pub(crate) fn line(out: &mut String, label: &str, text: &str) {
    let w = render::width(label);
    render::labelled(out, label, w, text);
}

/// Appends an item's content, flattened and clipped, indented by `indent`.
pub(crate) fn content_line(out: &mut String, indent: usize, item: &ContextItem) {
    let _ = writeln!(
        out,
        "{:indent$}{}",
        "",
        render::clip(item.content(), WIDTH.saturating_sub(indent))
    );
}

/// `1 item` / `3 items`.
pub(crate) fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_pipeline::PolicyConfig;

    fn policy() -> Policy {
        let cfg: PolicyConfig = toml::from_str(
            "slicer = \"greedy\"\nplacer = \"chronological\"\ndeduplication = true\n\
             [[scorers]]\ntype = \"reflexive\"\n",
        )
        .unwrap();
        cfg.build().unwrap()
    }

    #[test]
    fn outcomes_are_by_position_and_name_the_kept_duplicate() {
        // Reflexive scores: a 0.9, b 0.5, a' (copy of a) 0.2, pinned p 1.0.
        // Budget 100: p (10) pinned; dedup drops a' (lower score than a);
        // greedy takes a (40) then b (40): 90 of 90 available.
        let item = |c: &str, t: i64, h: f64| {
            ContextItem::builder(c, t)
                .future_relevance_hint(h)
                .build()
                .unwrap()
        };
        let items = vec![
            item("a", 40, 0.9),
            item("b", 40, 0.5),
            item("a", 40, 0.2),
            ContextItem::builder("p", 10).pinned(true).build().unwrap(),
        ];
        let budget = ContextBudget::new(100, 100).unwrap();
        let r = run(&policy(), &budget, &items).unwrap();
        let got: Vec<(bool, String)> = r
            .outcomes
            .iter()
            .map(|o| {
                o.as_ref()
                    .map_or((false, "?".into()), |o| (o.included, o.reason.clone()))
            })
            .collect();
        assert_eq!(
            got,
            [
                (true, "Scored".to_string()),
                (true, "Scored".to_string()),
                (false, "Deduplicated: duplicate of #0".to_string()),
                (true, "Pinned".to_string()),
            ]
        );
        assert_eq!(r.tokens, 90);
        assert!(r.includes(3) && !r.includes(2) && !r.includes(9));
    }
}
