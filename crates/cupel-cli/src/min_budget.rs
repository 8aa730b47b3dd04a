//! `cupel min-budget INPUT (--item I | --content TEXT)`: the smallest budget
//! at which an item is selected — the specification's binary search
//! (`find_min_budget_for`) and, with `--exact`, the exhaustive scan
//! (`find_min_budget_for_exact`), with the reason when they disagree.

use std::fmt::Write as _;

use clap::{ArgGroup, Args};
use cupel_analytics::{budget_sweep, find_min_budget_for, find_min_budget_for_exact};
use cupel_core::{ContextItem, CupelError};
use cupel_pipeline::Pipeline;

use crate::InputArgs;
use crate::error::CliError;
use crate::input::Prepared;
use crate::render;
use crate::whatif;

pub(crate) const MIN_BUDGET_AFTER_HELP: &str = "\
Each probe b is INPUT's budget with max_tokens = target_tokens = b
(output_reserve, reserved slots and safety margin kept); a b at which no
window exists counts as \"not selected\". The binary search is the
specification's FindMinBudgetFor: it searches (tokens, ceiling], assumes that
an item selected at b stays selected at every larger budget, and never probes
its lower bound. --exact also probes every b from the item's tokens up to the
ceiling and reports the first that selects it; when the two differ the output
says why (greedy and knapsack inclusion is not monotonic: a denser item that
only fits at a larger budget can take the room). Quota, count-quota and
count-constrained knapsack slicers are refused by the binary search with the
specification's message; --exact alone works with any slicer.

--content picks the item whose content is exactly TEXT, else the one item
whose content contains TEXT.

Example:
  cupel demo --print-input > chat.toml
  cupel min-budget chat.toml --item 7
  cupel min-budget chat.toml --content \"KB-0412\" --ceiling 4096 --exact";

/// The most budgets `--exact` may scan (it stops at the first that works).
const MAX_EXACT: i128 = 100_000;

/// `cupel min-budget ...`
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["item", "content"])))]
pub(crate) struct MinBudgetArgs {
    #[command(flatten)]
    input: InputArgs,

    /// The item's position in INPUT (from 0, as `cupel explain` numbers them)
    #[arg(long, value_name = "INDEX")]
    item: Option<usize>,

    /// The item whose content is TEXT (or the one containing it)
    #[arg(long, value_name = "TEXT")]
    content: Option<String>,

    /// Largest budget to try [default: the budget's max_tokens]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    ceiling: Option<i64>,

    /// Also scan every budget for the true minimum (any slicer)
    #[arg(long)]
    exact: bool,
}

/// The position of the item `--item` or `--content` names.
fn target(items: &[ContextItem], a: &MinBudgetArgs) -> Result<usize, CliError> {
    if let Some(i) = a.item {
        if i >= items.len() {
            return Err(CliError::input(match items.len() {
                0 => format!("--item {i} is out of range: INPUT has no items"),
                n => format!(
                    "--item {i} is out of range: INPUT has {n} items (0..={})",
                    n - 1
                ),
            })
            .hint("items are numbered from 0 in input order (`cupel explain` shows the numbers)"));
        }
        return Ok(i);
    }
    let text = a.content.as_deref().unwrap_or_default();
    if text.is_empty() {
        return Err(CliError::input("--content must not be empty")
            .hint("give some of the item's text, or pass --item INDEX"));
    }
    if let Some(i) = items.iter().position(|it| it.content() == text) {
        return Ok(i);
    }
    let hits: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.content().contains(text))
        .map(|(i, _)| i)
        .take(4)
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(
            CliError::input(format!("no item's content contains {:?}", render::clip(text, 40)))
                .hint("--content matches the exact content or a part of it, case-sensitively; or pass --item INDEX"),
        ),
        many => {
            let list: Vec<String> = many.iter().take(3).map(|i| format!("#{i}")).collect();
            let more = if many.len() > 3 { " and more" } else { "" };
            Err(CliError::input(format!(
                "{:?} is part of several items' contents: {}{more}",
                render::clip(text, 40),
                list.join(", ")
            ))
            .hint("give more of the content, or pass --item INDEX"))
        }
    }
}

/// The checks both searches make, worded for the flags.
fn check(item: &ContextItem, i: usize, ceiling: i64, from_flag: bool) -> Result<(), CliError> {
    let tokens = item.tokens();
    if tokens < 0 {
        return Err(CliError::input(format!(
            "item #{i} has negative tokens ({tokens}): no budget selects it"
        ))
        .hint("fix the item's `tokens` count"));
    }
    if ceiling < tokens {
        let what = if from_flag {
            format!("--ceiling {ceiling}")
        } else {
            format!("the ceiling (max_tokens {ceiling})")
        };
        return Err(
            CliError::input(format!("{what} is below the {tokens} tokens of item #{i}"))
                .hint(format!("pass --ceiling {tokens} or more")),
        );
    }
    Ok(())
}

/// Maps a search error: refusals and argument errors are input errors.
fn search_error(e: &CupelError, exact_hint: bool) -> CliError {
    let alt = if exact_hint {
        ", or pass --exact (the exhaustive scan works with any slicer)"
    } else {
        ""
    };
    if let Some(r) = whatif::refusal(e, alt) {
        return r;
    }
    match e {
        CupelError::InvalidArgument(m) => CliError::input(m.clone()),
        other => CliError::from_run(other),
    }
}

/// The binary search's answer, or why it gave none.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binary {
    Found(Option<i64>),
    Refused(String),
}

/// Runs `cupel min-budget`.
pub(crate) fn run(a: &MinBudgetArgs) -> Result<String, CliError> {
    let p = a.input.load()?;
    let i = target(&p.items, a)?;
    let ceiling = a.ceiling.unwrap_or(p.budget.max_tokens());
    let Some(item) = p.items.get(i) else {
        return Err(CliError::input(format!("--item {i} is out of range")));
    };
    check(item, i, ceiling, a.ceiling.is_some())?;
    let span = i128::from(ceiling) - i128::from(item.tokens()) + 1;
    if a.exact && span > MAX_EXACT {
        return Err(CliError::input(format!(
            "--exact would probe up to {span} budgets ({}..={ceiling}); at most {MAX_EXACT} are allowed",
            item.tokens()
        ))
        .hint("lower --ceiling, or leave out --exact for the binary search alone"));
    }
    let here = whatif::run_input(&p)?;
    let pipeline = whatif::pipeline(&p);
    let binary = match find_min_budget_for(&pipeline, &p.items, i, ceiling) {
        Ok(b) => Binary::Found(b),
        Err(CupelError::PipelineConfig(m))
            if a.exact && whatif::refusal(&CupelError::PipelineConfig(m.clone()), "").is_some() =>
        {
            Binary::Refused(m)
        }
        Err(e) => return Err(search_error(&e, true)),
    };
    let exact = if a.exact {
        Some(
            find_min_budget_for_exact(&pipeline, &p.items, i, ceiling)
                .map_err(|e| search_error(&e, false))?,
        )
    } else {
        None
    };
    let gap = match (&binary, exact) {
        (Binary::Found(b), Some(Some(e))) if *b != Some(e) => {
            first_gap(&pipeline, &p.items, i, e, b.unwrap_or(ceiling))?
        }
        _ => None,
    };
    Ok(text(&p, i, ceiling, &here, &binary, exact, gap))
}

/// The first budget above `from` (up to `to`) that does not select item `i`.
fn first_gap(
    pipeline: &Pipeline,
    items: &[ContextItem],
    i: usize,
    from: i64,
    to: i64,
) -> Result<Option<i64>, CliError> {
    // At most MAX_POINTS probes: the gap is only an illustration.
    let to =
        to.min(from.saturating_add(i64::try_from(crate::sweep::MAX_POINTS).unwrap_or(i64::MAX)));
    let budgets: Vec<i64> = (from.saturating_add(1)..=to).collect();
    // One sweep: the probes share one scoring pass.
    let sweep = budget_sweep(pipeline, items, &budgets).map_err(|e| CliError::from_run(&e))?;
    Ok(sweep
        .rows
        .iter()
        .find(|r| r.included.binary_search(&i).is_err())
        .map(|r| r.budget))
}

fn answer(b: Option<i64>) -> String {
    b.map_or_else(
        || "none: not selected at any budget tried".into(),
        |b| b.to_string(),
    )
}

fn text(
    p: &Prepared,
    i: usize,
    ceiling: i64,
    here: &whatif::Run,
    binary: &Binary,
    exact: Option<Option<i64>>,
    gap: Option<i64>,
) -> String {
    let mut out = render::header(p);
    let Some(item) = p.items.get(i) else {
        return out;
    };
    let status = match here.outcomes.get(i).and_then(Option::as_ref) {
        Some(o) if o.included => format!("included at INPUT's budget ({})", o.reason),
        Some(o) => format!("excluded at INPUT's budget ({})", o.reason),
        None => "not reported at INPUT's budget".into(),
    };
    whatif::line(
        &mut out,
        "item    ",
        &format!("{}; {status}", whatif::item_head(i, item)),
    );
    whatif::content_line(&mut out, 8, item);
    whatif::line(
        &mut out,
        "search  ",
        &format!(
            "budgets {}..={ceiling}; {}",
            item.tokens(),
            whatif::probe_note(&p.budget)
        ),
    );
    out.push('\n');
    match binary {
        Binary::Found(b) => {
            let _ = writeln!(out, "binary search  {}", answer(*b));
        }
        Binary::Refused(m) => {
            whatif::line(&mut out, "binary search  ", &format!("refused: {m}"));
        }
    }
    if let Some(e) = exact {
        let _ = writeln!(out, "exact scan     {}", answer(e));
    }
    let note = match (binary, exact) {
        (Binary::Found(b), Some(e)) if *b == e => Some("The two agree.".to_string()),
        (Binary::Found(Some(b)), Some(Some(e)))
            if e == item.tokens() && *b == e + 1 && gap.is_none() =>
        {
            Some(format!(
                "They disagree only because the binary search never probes its lower \
             bound: the item is selected at exactly its own {e} tokens, and the \
             search can only answer {b} (spec clarification S-2)."
            ))
        }
        (Binary::Found(b), Some(Some(e))) => {
            let slicer = p.config.slicer.slicer_type().to_string();
            let gap_text =
                gap.map_or_else(String::new, |g| format!(" (selected at {e}, not at {g})"));
            let found = b.map_or_else(|| "finds no budget".to_string(), |b| format!("answers {b}"));
            Some(format!(
                "They disagree: {slicer} inclusion is not monotonic{gap_text}. A denser \
                 item that only fits at a larger budget takes the room, so a probe in \
                 such a gap sent the binary search past {e}: it {found}, while the true \
                 minimum is {e}."
            ))
        }
        (Binary::Found(_), None) => Some(
            "The binary search assumes monotonic inclusion, which greedy and knapsack \
             slicing do not guarantee; --exact scans every budget for the true minimum."
                .to_string(),
        ),
        _ => None,
    };
    if let Some(n) = note {
        out.push('\n');
        whatif::line(&mut out, "", &n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<ContextItem> {
        ["alpha one", "beta", "alpha two", "alpha one"]
            .iter()
            .map(|c| ContextItem::new(*c, 5).unwrap())
            .collect()
    }

    fn args(item: Option<usize>, content: Option<&str>) -> MinBudgetArgs {
        MinBudgetArgs {
            input: InputArgs {
                input: String::new(),
                policy: None,
                source: crate::SourceArgs {
                    max_tokens: None,
                    target_tokens: None,
                    output_reserve: None,
                    input_format: None,
                    encoding: None,
                    header: None,
                },
            },
            item,
            content: content.map(String::from),
            ceiling: None,
            exact: false,
        }
    }

    #[test]
    fn content_prefers_an_exact_match_then_a_unique_part() {
        let it = items();
        let t = |c| target(&it, &args(None, Some(c))).map_err(|e| e.message);
        // Exact content of #0 (and #3): the first.
        assert_eq!(t("alpha one"), Ok(0));
        assert_eq!(t("eta"), Ok(1));
        assert_eq!(t("two"), Ok(2));
        assert_eq!(
            t("alpha"),
            Err("\"alpha\" is part of several items' contents: #0, #2, #3".into())
        );
        assert_eq!(
            t("gamma"),
            Err("no item's content contains \"gamma\"".into())
        );
    }

    #[test]
    fn empty_content_is_refused() {
        let e = target(&items(), &args(None, Some(""))).unwrap_err();
        assert_eq!(e.message, "--content must not be empty");
    }

    #[test]
    fn item_out_of_range_names_the_valid_range() {
        let e = target(&items(), &args(Some(4), None)).unwrap_err();
        assert_eq!(
            e.message,
            "--item 4 is out of range: INPUT has 4 items (0..=3)"
        );
        assert_eq!(e.code, 2);
    }

    #[test]
    fn ceiling_and_negative_tokens_are_input_errors() {
        let big = ContextItem::new("big", 300).unwrap();
        let e = check(&big, 2, 200, true).unwrap_err();
        assert_eq!(
            e.message,
            "--ceiling 200 is below the 300 tokens of item #2"
        );
        assert_eq!(e.hint.as_deref(), Some("pass --ceiling 300 or more"));
        let e = check(&big, 2, 200, false).unwrap_err();
        assert!(e.message.starts_with("the ceiling (max_tokens 200)"));
        let neg = ContextItem::new("neg", -1).unwrap();
        assert!(
            check(&neg, 0, 10, true)
                .unwrap_err()
                .message
                .contains("negative tokens (-1)")
        );
    }
}
