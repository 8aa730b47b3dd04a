//! `cupel marginal INPUT --slack N`: the items a budget N tokens smaller would
//! lose (`cupel_analytics::get_marginal_items`), with scores and reasons.

use std::fmt::Write as _;

use clap::Args;
use cupel_analytics::get_marginal_items;
use cupel_core::{ContextBudget, ContextItem, CupelError};

use crate::InputArgs;
use crate::error::CliError;
use crate::input::Prepared;
use crate::render;
use crate::whatif::{self, Run};

pub(crate) const MARGINAL_AFTER_HELP: &str = "\
Two runs: INPUT's budget, and the same budget with max_tokens and
target_tokens both N smaller (output_reserve, reserved slots and safety
margin kept). The items in the first window and not in the second are the
ones that enter between target_tokens - N and target_tokens; each is shown
with its score and why the smaller budget leaves it out. Items are told apart
by position, not by content. A quota slicer is refused with the
specification's message: its percentage allocations shift with the budget.

Example:
  cupel demo --print-input > chat.toml
  cupel marginal chat.toml --slack 200
  cupel marginal chat.toml --slack 100 --target-tokens 800";

/// `cupel marginal ...`
#[derive(Debug, Args)]
pub(crate) struct MarginalArgs {
    #[command(flatten)]
    input: InputArgs,

    /// How many tokens smaller the second budget is
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    slack: i64,
}

/// The budget `slack` tokens smaller, or an error naming the flag.
fn reduced(b: &ContextBudget, slack: i64) -> Result<ContextBudget, CliError> {
    let (max, target, reserve) = (b.max_tokens(), b.target_tokens(), b.output_reserve());
    if slack < 0 {
        return Err(
            CliError::input(format!("--slack must be >= 0 (got {slack})"))
                .hint("--slack N compares the budget with one N tokens smaller"),
        );
    }
    if slack > target {
        return Err(CliError::input(format!(
            "--slack {slack} is larger than target_tokens {target}"
        ))
        .hint(format!("use at most --slack {target}")));
    }
    if max - slack < reserve {
        return Err(CliError::input(format!(
            "--slack {slack} leaves max_tokens {} below output_reserve {reserve}",
            max - slack
        ))
        .hint(format!(
            "use at most --slack {} (max_tokens - output_reserve)",
            max - reserve
        )));
    }
    b.to_builder()
        .max_tokens(max - slack)
        .target_tokens(target - slack)
        .build()
        .map_err(|e| CliError::input(format!("the reduced budget is invalid: {e}")))
}

/// Runs `cupel marginal`.
pub(crate) fn run(a: &MarginalArgs) -> Result<String, CliError> {
    let p = a.input.load()?;
    let small_budget = reduced(&p.budget, a.slack)?;
    let full = whatif::run_input(&p)?;
    let marginal = get_marginal_items(&whatif::pipeline(&p), &p.items, &p.budget, a.slack)
        .map_err(|e| whatif::refusal(&e, "").unwrap_or_else(|| at_reduced(&e, &small_budget)))?;
    let small = whatif::run(&p.policy, &small_budget, &p.items)
        .map_err(|e| at_reduced(&e, &small_budget))?;
    Ok(text(&p, a.slack, &small_budget, &full, &small, &marginal))
}

/// A run error of the smaller budget, saying so.
fn at_reduced(e: &CupelError, b: &ContextBudget) -> CliError {
    let mut err = CliError::from_run(e);
    err.message = format!(
        "at the reduced budget (max_tokens {}, target_tokens {}): {}",
        b.max_tokens(),
        b.target_tokens(),
        err.message
    );
    if let CupelError::PinnedBudgetExceeded { .. } = e {
        err.hint = Some(
            "the pinned items must fit the reduced budget's max_tokens - output_reserve: \
             use a smaller --slack"
                .into(),
        );
    }
    err
}

fn text(
    p: &Prepared,
    slack: i64,
    small_budget: &ContextBudget,
    full: &Run,
    small: &Run,
    marginal: &[usize],
) -> String {
    let mut out = render::header(p);
    whatif::line(
        &mut out,
        "slack   ",
        &format!(
            "{slack} tokens: the reduced budget has max_tokens {}, target_tokens {}",
            small_budget.max_tokens(),
            small_budget.target_tokens()
        ),
    );
    out.push('\n');
    let (lo, hi) = (small_budget.target_tokens(), p.budget.target_tokens());
    // As the full window holds them: a variant's tokens for an item that went
    // in as one.
    let held = |i: usize| held(p, full, i);
    let tokens: i128 = marginal
        .iter()
        .filter_map(|&i| held(i))
        .map(i128::from)
        .sum();
    let _ = writeln!(
        out,
        "{} ({} tokens) enter between target_tokens {lo} and {hi} (in window order):",
        whatif::count(marginal.len(), "item"),
        tokens
    );
    if marginal.is_empty() {
        let _ = writeln!(out, "  (none: both budgets select the same items)");
    } else {
        marginal_table(&mut out, p, (full, small), marginal, lo);
    }
    out.push('\n');
    for (label, run, b) in [
        ("full     ", full, &p.budget),
        ("reduced  ", small, small_budget),
    ] {
        let _ = writeln!(
            out,
            "{label}{} {:>6} tokens  (max_tokens {}, target_tokens {})",
            pad(&whatif::count(run.placed.len(), "item"), 9),
            run.tokens,
            b.max_tokens(),
            b.target_tokens()
        );
    }
    // Items only the smaller budget selects: the monotonic assumption broke.
    let extra: Vec<String> = small
        .placed
        .iter()
        .filter(|&&i| !full.includes(i))
        .map(|i| format!("#{i}"))
        .collect();
    if !extra.is_empty() {
        whatif::line(
            &mut out,
            "note     ",
            &format!(
                "the reduced budget also selects {} that the full one leaves out ({}): \
                 inclusion is not monotonic here",
                whatif::count(extra.len(), "item"),
                extra.join(", ")
            ),
        );
    }
    out
}

fn pad(s: &str, w: usize) -> String {
    format!("{s:<w$}")
}

/// As the full window holds item `i`: a variant's tokens for an item that
/// went in as one.
fn held(p: &Prepared, full: &Run, i: usize) -> Option<i64> {
    full.outcomes
        .get(i)
        .and_then(Option::as_ref)
        .map(|o| o.tokens)
        .or_else(|| p.items.get(i).map(ContextItem::tokens))
}

/// The items that enter between the two budgets: kind, tokens, score, and
/// why the reduced budget (`lo` target tokens) left each out.
fn marginal_table(
    out: &mut String,
    p: &Prepared,
    (full, small): (&Run, &Run),
    marginal: &[usize],
    lo: i64,
) {
    let held = |i: usize| held(p, full, i);
    let rows: Vec<[String; 4]> = marginal
        .iter()
        .map(|&i| {
            let item = p.items.get(i);
            let score = full
                .outcomes
                .get(i)
                .and_then(Option::as_ref)
                .map_or_else(|| "?".into(), |o| render::fmt_score(o.score));
            [
                i.to_string(),
                item.map(|x| x.kind().to_string()).unwrap_or_default(),
                held(i).map(|t| t.to_string()).unwrap_or_default(),
                score,
            ]
        })
        .collect();
    let w = render::widths(&rows, ["item", "kind", "tokens", "score"], [6, 14, 12, 9]);
    let used: usize = w.iter().map(|x| x + 2).sum();
    let rw = render::WIDTH.saturating_sub(used).max(20);
    render::item_table_head(out, &w, &format!("why out at {lo}"));
    for (row, &i) in rows.iter().zip(marginal) {
        let why = small
            .outcomes
            .get(i)
            .and_then(Option::as_ref)
            .map_or_else(|| "?".into(), |o| o.reason.clone());
        let _ = writeln!(
            out,
            "{:>w0$}  {}  {:>w2$}  {:>w3$}  {}",
            row[0],
            render::pad(&render::clip(&row[1], w[1]), w[1]),
            row[2],
            row[3],
            render::clip(&why, rw),
            w0 = w[0],
            w2 = w[2],
            w3 = w[3]
        );
        if let Some(item) = p.items.get(i) {
            whatif::content_line(out, w[0] + 2, item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reduced_budget_keeps_the_reserve_and_names_the_limits() {
        let b = ContextBudget::builder(1_000, 800)
            .output_reserve(300)
            .build()
            .unwrap();
        let r = reduced(&b, 200).unwrap();
        assert_eq!(
            (r.max_tokens(), r.target_tokens(), r.output_reserve()),
            (800, 600, 300)
        );
        let msg = |s| reduced(&b, s).map_err(|e| (e.message, e.hint)).unwrap_err();
        assert_eq!(msg(-1).0, "--slack must be >= 0 (got -1)");
        assert_eq!(msg(801).0, "--slack 801 is larger than target_tokens 800");
        // 1000 - 701 = 299 < 300; the most that keeps the reserve is 700.
        let (m, h) = msg(701);
        assert_eq!(
            m,
            "--slack 701 leaves max_tokens 299 below output_reserve 300"
        );
        assert_eq!(
            h.as_deref(),
            Some("use at most --slack 700 (max_tokens - output_reserve)")
        );
    }
}
