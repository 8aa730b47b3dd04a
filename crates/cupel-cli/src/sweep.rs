//! `cupel sweep INPUT`: the window at each of many budget sizes
//! (`cupel_analytics::budget_sweep`), as a table, JSON, CSV or a chart.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use clap::{ArgGroup, Args, ValueEnum};
use cupel_analytics::{SweepRow, budget_sweep_rows};
use cupel_core::{ContextKind, CupelError};
use serde::Serialize;

use crate::InputArgs;
use crate::chart::{PALETTE, Panel, Series, StackedChart};
use crate::error::CliError;
use crate::input::Prepared;
use crate::render::{self, GLUE};
use crate::whatif;

/// The most budgets one sweep probes.
pub(crate) const MAX_POINTS: i128 = 10_000;

pub(crate) const SWEEP_AFTER_HELP: &str = "\
Each budget b is probed as INPUT's budget with max_tokens = target_tokens = b
(output_reserve, reserved slots and safety margin kept), so the last row is
not the same run as `cupel select` unless target_tokens = max_tokens there.
Utilisation is selected tokens / b. A budget at which no window exists (b
below the output reserve, pinned items that do not fit, an overflow under
overflow_strategy = \"throw\") is a row that says why. Items that are in at
some budget and out at a larger one are listed at the end: greedy and
knapsack inclusion is not monotonic (spec/09-analytics.md).

Example:
  cupel demo --print-input > chat.toml
  cupel sweep chat.toml --from 512 --to 1536 --points 9
  cupel sweep chat.toml --from 0 --to 1536 --step 64 --plot sweep.svg
  cupel sweep chat.toml --from 400 --to 1200 --step 100 --format csv";

/// `--format` of `cupel sweep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SweepFormat {
    /// A table for 80 columns.
    Text,
    /// One JSON object: the rows, the kinds, the non-monotonic items.
    Json,
    /// One line per budget; per kind an items and a tokens column.
    Csv,
}

/// `cupel sweep ...`
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("spacing").required(true).args(["step", "points"])))]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    input: InputArgs,

    /// Smallest budget of the sweep
    #[arg(long, value_name = "A", allow_negative_numbers = true)]
    from: i64,

    /// Largest budget of the sweep (always probed)
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    to: i64,

    /// Budgets A, A+S, A+2S, ... and B
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    step: Option<i64>,

    /// N budgets spread evenly from A to B (both included)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    points: Option<i64>,

    /// text (default), json or csv
    #[arg(
        long,
        value_enum,
        default_value_t = SweepFormat::Text,
        hide_default_value = true,
        hide_possible_values = true
    )]
    format: SweepFormat,

    /// Also draw tokens and items per budget, stacked by kind, as SVG
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,
}

/// The budgets to probe, ascending and distinct, with the errors that say
/// which flag to change.
pub(crate) fn budgets(
    from: i64,
    to: i64,
    step: Option<i64>,
    points: Option<i64>,
) -> Result<Vec<i64>, CliError> {
    for (flag, v) in [("--from", from), ("--to", to)] {
        if v < 0 {
            return Err(CliError::input(format!("{flag} must be >= 0 (got {v})"))
                .hint("budgets are token counts"));
        }
    }
    if from > to {
        return Err(
            CliError::input(format!("--from {from} is larger than --to {to}"))
                .hint(format!("swap them: --from {to} --to {from}")),
        );
    }
    let span = i128::from(to) - i128::from(from);
    let too_many = |n: i128| {
        CliError::input(format!(
            "the sweep would probe {n} budgets; at most {MAX_POINTS} are allowed"
        ))
        .hint("raise --step, lower --points or narrow --from/--to")
    };
    match (step, points) {
        (Some(s), _) => {
            if s < 1 {
                return Err(
                    CliError::input(format!("--step must be at least 1 (got {s})"))
                        .hint("e.g. --step 64, or --points N for N evenly spaced budgets"),
                );
            }
            let s = i128::from(s);
            let n = span / s + 1 + i128::from(span % s != 0);
            if n > MAX_POINTS {
                return Err(too_many(n));
            }
            let mut out: Vec<i64> = (0..n)
                .filter_map(|k| i64::try_from(i128::from(from) + k * s).ok())
                .filter(|&b| b <= to)
                .collect();
            if out.last() != Some(&to) {
                out.push(to);
            }
            Ok(out)
        }
        (None, Some(n)) => {
            if n < 2 {
                return Err(
                    CliError::input(format!("--points must be at least 2 (got {n})")).hint(
                        "the sweep probes --from and --to; for one budget use --from B --to B --step 1",
                    ),
                );
            }
            let n = i128::from(n);
            if n > span + 1 {
                return Err(CliError::input(format!(
                    "--points {n} is more than the {} budgets from {from} to {to}",
                    span + 1
                ))
                .hint(format!(
                    "use at most --points {}, or widen --from/--to",
                    span + 1
                )));
            }
            if n > MAX_POINTS {
                return Err(too_many(n));
            }
            // k·span/(n−1) grows by at least 1 per k (span >= n − 1): distinct.
            Ok((0..n)
                .filter_map(|k| i64::try_from(i128::from(from) + k * span / (n - 1)).ok())
                .collect())
        }
        (None, None) => Err(CliError::input("the sweep needs --step S or --points N")),
    }
}

/// A kind's share of one row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
struct Mix {
    items: usize,
    tokens: i64,
}

/// One budget, summarised.
#[derive(Debug, Clone)]
struct Row {
    budget: i64,
    items: usize,
    tokens: i64,
    /// Per kind of [`Table::kinds`], same order.
    mix: Vec<Mix>,
    included: Vec<usize>,
    no_window: Option<String>,
}

/// The sweep as the outputs need it.
#[derive(Debug, Clone)]
struct Table {
    /// Kinds of the items selected at some budget, in order of first
    /// appearance in INPUT.
    kinds: Vec<String>,
    rows: Vec<Row>,
    /// `(item, in at, out at)`: included at a budget and excluded at a larger one.
    non_monotonic: Vec<(usize, i64, i64)>,
}

/// Why no window exists at a size, briefly.
fn no_window_text(e: &CupelError) -> String {
    match e {
        CupelError::OutputReserveExceedsMax {
            output_reserve,
            max_tokens,
        } => format!("no window: output_reserve {output_reserve} > {max_tokens}"),
        CupelError::PinnedBudgetExceeded {
            pinned_tokens,
            available_tokens,
        } => format!("no window: pinned items need {pinned_tokens}, {available_tokens} available"),
        CupelError::BudgetOverflow {
            selected_tokens,
            target_tokens,
        } => format!("no window: {selected_tokens} selected > {target_tokens} under throw"),
        other => format!("no window: {other}"),
    }
}

/// Tabulates a sweep as its rows arrive, keeping per row only what the
/// outputs print (counts, tokens, the mix by kind, and the included positions
/// only when `keep_included`, for JSON), and per item two budgets for the
/// non-monotonic list. Memory is O(N + R · kinds per row), not O(R · N)
/// (issue 31: 10,000 budgets over a 2 MB input took 1.37 GB); time is
/// O(R · N) at most.
///
/// Budgets are ascending (see [`budgets`]): an item drops out at the first
/// row that lacks it after a row that had it.
fn tabulate(
    p: &Prepared,
    rows: impl Iterator<Item = Result<SweepRow, CupelError>>,
    keep_included: bool,
) -> Result<Table, CupelError> {
    // Kind ids in order of first sight; renumbered at the end into order of
    // first appearance in INPUT among items selected somewhere.
    let mut kind_ids: BTreeMap<&ContextKind, usize> = BTreeMap::new();
    let mut kind_first_item: Vec<usize> = Vec::new();
    let mut first_in: Vec<Option<i64>> = vec![None; p.items.len()];
    let mut out_at: Vec<Option<i64>> = vec![None; p.items.len()];
    let mut previous: Vec<usize> = Vec::new();
    let mut sparse_rows: Vec<(Row, Vec<(usize, Mix)>)> = Vec::new();
    for row in rows {
        let r = row?;
        let mut mix: BTreeMap<usize, Mix> = BTreeMap::new();
        for (j, &i) in r.included.iter().enumerate() {
            let Some(item) = p.items.get(i) else { continue };
            // The tokens the window holds for it: a variant's, when it went in as one.
            let held = r.held_tokens.get(j).copied().unwrap_or(item.tokens());
            let next = kind_ids.len();
            let k = *kind_ids.entry(item.kind()).or_insert_with(|| {
                kind_first_item.push(i);
                next
            });
            if let Some(first) = kind_first_item.get_mut(k) {
                *first = (*first).min(i);
            }
            let m = mix.entry(k).or_default();
            m.items += 1;
            m.tokens = m.tokens.saturating_add(held);
            if let Some(f) = first_in.get_mut(i) {
                f.get_or_insert(r.budget);
            }
        }
        // Items of the previous row missing from this one (both ascending).
        let mut here = r.included.iter().peekable();
        for &i in &previous {
            while here.next_if(|&&j| j < i).is_some() {}
            if here.peek() != Some(&&i)
                && let Some(o) = out_at.get_mut(i)
            {
                o.get_or_insert(r.budget);
            }
        }
        previous.clone_from(&r.included);
        let summary = Row {
            budget: r.budget,
            items: r.included.len(),
            tokens: r.included_tokens,
            mix: Vec::new(),
            included: if keep_included {
                r.included
            } else {
                Vec::new()
            },
            no_window: r.no_window.as_ref().map(no_window_text),
        };
        sparse_rows.push((summary, mix.into_iter().collect()));
    }
    // Final kind order: by the first input position among selected items.
    let mut order: Vec<(usize, usize)> = kind_first_item
        .iter()
        .enumerate()
        .map(|(k, &first)| (first, k))
        .collect();
    order.sort_unstable();
    let mut rank = vec![0usize; order.len()];
    for (r, &(_, k)) in order.iter().enumerate() {
        rank[k] = r;
    }
    let mut names: Vec<(usize, String)> = kind_ids
        .iter()
        .map(|(kind, &k)| (rank[k], kind.to_string()))
        .collect();
    names.sort_unstable();
    let kinds: Vec<String> = names.into_iter().map(|(_, n)| n).collect();
    let rows = sparse_rows
        .into_iter()
        .map(|(mut row, sparse)| {
            let mut mix = vec![Mix::default(); kinds.len()];
            for (k, m) in sparse {
                if let Some(slot) = mix.get_mut(rank[k]) {
                    *slot = m;
                }
            }
            row.mix = mix;
            row
        })
        .collect();
    let non_monotonic = first_in
        .iter()
        .zip(&out_at)
        .enumerate()
        .filter_map(|(i, (first, out))| Some((i, (*first)?, (*out)?)))
        .collect();
    Ok(Table {
        kinds,
        rows,
        non_monotonic,
    })
}

/// Runs `cupel sweep`.
pub(crate) fn run(a: &SweepArgs) -> Result<String, CliError> {
    let budgets = budgets(a.from, a.to, a.step, a.points)?;
    let p = a.input.load()?;
    let pipeline = whatif::pipeline(&p);
    let table = budget_sweep_rows(&pipeline, &p.items, &budgets)
        .and_then(|rows| tabulate(&p, rows, matches!(a.format, SweepFormat::Json)))
        .map_err(|e| CliError::from_run(&e))?;
    if let Some(path) = &a.plot {
        chart(&p, &table).write_svg(path)?;
    }
    match a.format {
        SweepFormat::Text => Ok(text(&p, a, &table)),
        SweepFormat::Json => json(&p, &table),
        SweepFormat::Csv => csv(&table),
    }
}

fn text(p: &Prepared, a: &SweepArgs, t: &Table) -> String {
    let mut out = render::header(p);
    let spacing = match (a.step, a.points) {
        (Some(s), _) => format!("--step {s}"),
        (_, Some(n)) => format!("--points {n}"),
        _ => String::new(),
    };
    whatif::line(
        &mut out,
        "sweep   ",
        &format!(
            "{} from {} to {} ({spacing}); {}",
            whatif::count(t.rows.len(), "budget"),
            a.from,
            a.to,
            whatif::probe_note(&p.budget)
        ),
    );
    out.push('\n');
    let letters = render::assign_letters(&t.kinds);
    let cells: Vec<[String; 4]> = t
        .rows
        .iter()
        .map(|r| {
            [
                r.budget.to_string(),
                r.items.to_string(),
                r.tokens.to_string(),
                render::pct(i128::from(r.tokens), i128::from(r.budget)),
            ]
        })
        .collect();
    let w = render::widths(
        &cells,
        ["budget", "items", "tokens", "util"],
        [20, 20, 20, 6],
    );
    let head = format!(
        "{:>w0$}  {:>w1$}  {:>w2$}  {:>w3$}  ",
        "budget",
        "items",
        "tokens",
        "util",
        w0 = w[0],
        w1 = w[1],
        w2 = w[2],
        w3 = w[3]
    );
    let indent = render::width(&head);
    let _ = writeln!(out, "{head}tokens by kind");
    for (r, c) in t.rows.iter().zip(&cells) {
        if let Some(why) = &r.no_window {
            let lead = format!("{:>w0$}  ", c[0], w0 = w[0]);
            whatif::line(&mut out, &lead, why);
            continue;
        }
        let lead = format!(
            "{:>w0$}  {:>w1$}  {:>w2$}  {:>w3$}  ",
            c[0],
            c[1],
            c[2],
            c[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        );
        let mix: Vec<String> = r
            .mix
            .iter()
            .zip(&letters)
            .filter(|(m, _)| m.items > 0)
            .map(|(m, l)| format!("{l}{GLUE}{}", m.tokens))
            .collect();
        let mix = if mix.is_empty() {
            "(empty)".to_string()
        } else {
            mix.join(" ")
        };
        render::labelled(&mut out, &lead, indent, &mix);
    }
    out.push('\n');
    legend_and_gaps(&mut out, t, &letters);
    out
}

/// The kinds' legend, the utilisation note and the items that drop out as
/// the budget grows.
fn legend_and_gaps(out: &mut String, t: &Table, letters: &[char]) {
    let legend: Vec<String> = t
        .kinds
        .iter()
        .zip(letters)
        .map(|(k, l)| {
            format!(
                "{l}{GLUE}{}",
                render::clip(k, 24).replace(' ', &GLUE.to_string())
            )
        })
        .collect();
    if !legend.is_empty() {
        whatif::line(out, "kinds   ", &legend.join(", "));
    }
    whatif::line(out, "util    ", "selected tokens / b");
    if t.non_monotonic.is_empty() {
        whatif::line(
            out,
            "gaps    ",
            "none: no item drops out as the budget grows (within these budgets)",
        );
    } else {
        const SHOWN: usize = 10;
        let mut list: Vec<String> = t
            .non_monotonic
            .iter()
            .take(SHOWN)
            .map(|(i, b_in, b_out)| {
                format!("#{i}{GLUE}(in{GLUE}at{GLUE}{b_in},{GLUE}out{GLUE}at{GLUE}{b_out})")
            })
            .collect();
        if t.non_monotonic.len() > SHOWN {
            list.push(format!("and {} more", t.non_monotonic.len() - SHOWN));
        }
        let n = t.non_monotonic.len();
        whatif::line(
            out,
            "gaps    ",
            &format!(
                "{} in at one budget and out at a larger one (a denser item \
                 that only fits later takes the room): {}",
                if n == 1 {
                    "1 item is".to_string()
                } else {
                    format!("{n} items are")
                },
                list.join(", ")
            ),
        );
    }
}

#[derive(Serialize)]
struct JsonBudget {
    max_tokens: i64,
    target_tokens: i64,
    output_reserve: i64,
}

#[derive(Serialize)]
struct JsonKindMix<'a> {
    kind: &'a str,
    items: usize,
    tokens: i64,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    budget: i64,
    items: usize,
    tokens: i64,
    utilisation: f64,
    kinds: Vec<JsonKindMix<'a>>,
    included: &'a [usize],
    no_window: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonNonMonotonic {
    item: usize,
    included_at: i64,
    excluded_at: i64,
}

#[derive(Serialize)]
struct JsonSweep<'a> {
    input_budget: JsonBudget,
    probe: String,
    kinds: &'a [String],
    rows: Vec<JsonRow<'a>>,
    non_monotonic_items: Vec<JsonNonMonotonic>,
}

/// `tokens / budget`, four decimals; 0 when the budget is 0.
fn utilisation(tokens: i64, budget: i64) -> f64 {
    if budget <= 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
    let u = tokens as f64 / budget as f64;
    (u * 10_000.0).round() / 10_000.0
}

fn json(p: &Prepared, t: &Table) -> Result<String, CliError> {
    let doc = JsonSweep {
        input_budget: JsonBudget {
            max_tokens: p.budget.max_tokens(),
            target_tokens: p.budget.target_tokens(),
            output_reserve: p.budget.output_reserve(),
        },
        probe: whatif::probe_note(&p.budget),
        kinds: &t.kinds,
        rows: t
            .rows
            .iter()
            .map(|r| JsonRow {
                budget: r.budget,
                items: r.items,
                tokens: r.tokens,
                utilisation: utilisation(r.tokens, r.budget),
                kinds: t
                    .kinds
                    .iter()
                    .zip(&r.mix)
                    .map(|(k, m)| JsonKindMix {
                        kind: k,
                        items: m.items,
                        tokens: m.tokens,
                    })
                    .collect(),
                included: &r.included,
                no_window: r.no_window.as_deref(),
            })
            .collect(),
        non_monotonic_items: t
            .non_monotonic
            .iter()
            .map(|&(item, included_at, excluded_at)| JsonNonMonotonic {
                item,
                included_at,
                excluded_at,
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc)
        .map_err(|e| CliError::input(format!("cannot serialise the sweep: {e}")))?;
    s.push('\n');
    Ok(s)
}

fn csv(t: &Table) -> Result<String, CliError> {
    let fail = |e: &dyn std::fmt::Display| CliError::input(format!("cannot write the CSV: {e}"));
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["budget", "items", "tokens", "utilisation", "no_window"]
        .map(String::from)
        .to_vec();
    for k in &t.kinds {
        header.push(format!("{k} items"));
        header.push(format!("{k} tokens"));
    }
    w.write_record(&header).map_err(|e| fail(&e))?;
    for r in &t.rows {
        let mut rec = vec![
            r.budget.to_string(),
            r.items.to_string(),
            r.tokens.to_string(),
            utilisation(r.tokens, r.budget).to_string(),
            r.no_window.clone().unwrap_or_default(),
        ];
        for m in &r.mix {
            rec.push(m.items.to_string());
            rec.push(m.tokens.to_string());
        }
        w.write_record(&rec).map_err(|e| fail(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| fail(&e))?;
    String::from_utf8(bytes).map_err(|e| fail(&e))
}

/// Selected tokens (with the room the probe leaves) and items per budget,
/// stacked by kind. More kinds than colours: the rest share one band.
fn chart(p: &Prepared, t: &Table) -> StackedChart {
    let k = t.kinds.len();
    let shown = if k > PALETTE.len() {
        PALETTE.len() - 1
    } else {
        k
    };
    let mut bands: Vec<String> = t.kinds.iter().take(shown).cloned().collect();
    if k > shown {
        bands.push(format!("{} other kinds", k - shown));
    }
    let band = |i: usize| i.min(shown);
    let xs: Vec<i64> = t.rows.iter().map(|r| r.budget).collect();
    let mut tokens = vec![vec![0i64; xs.len()]; bands.len()];
    let mut items = vec![vec![0i64; xs.len()]; bands.len()];
    for (x, r) in t.rows.iter().enumerate() {
        for (i, m) in r.mix.iter().enumerate() {
            tokens[band(i)][x] = tokens[band(i)][x].saturating_add(m.tokens);
            items[band(i)][x] =
                items[band(i)][x].saturating_add(i64::try_from(m.items).unwrap_or(i64::MAX));
        }
    }
    let reserve = p.budget.output_reserve();
    let room = Series {
        name: if reserve > 0 {
            "room: b - output_reserve".into()
        } else {
            "budget b".into()
        },
        points: xs.iter().map(|&b| (b, (b - reserve).max(0))).collect(),
    };
    StackedChart {
        title: "Budget sweep: what is selected at each budget b".into(),
        x_label: "budget b (max_tokens = target_tokens = b)".into(),
        xs,
        bands,
        panels: vec![
            Panel {
                y_label: "selected tokens".into(),
                values: tokens,
                line: Some(room),
            },
            Panel {
                y_label: "selected items".into(),
                values: items,
                line: None,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_end_at_to_even_when_the_step_does_not_divide() {
        assert_eq!(budgets(0, 10, Some(4), None).unwrap(), [0, 4, 8, 10]);
        assert_eq!(budgets(0, 8, Some(4), None).unwrap(), [0, 4, 8]);
        assert_eq!(budgets(5, 5, Some(1), None).unwrap(), [5]);
    }

    #[test]
    fn points_spread_evenly_with_both_ends() {
        // span 10 over 4 intervals: 0, 2.5 -> 2, 5, 7.5 -> 7, 10.
        assert_eq!(budgets(0, 10, None, Some(5)).unwrap(), [0, 2, 5, 7, 10]);
        assert_eq!(budgets(3, 4, None, Some(2)).unwrap(), [3, 4]);
    }

    #[test]
    fn bad_ranges_say_which_flag_to_change() {
        let msg = |r: Result<Vec<i64>, CliError>| r.map_err(|e| e.message).unwrap_err();
        assert_eq!(
            msg(budgets(9, 3, Some(1), None)),
            "--from 9 is larger than --to 3"
        );
        assert_eq!(
            msg(budgets(0, 3, Some(0), None)),
            "--step must be at least 1 (got 0)"
        );
        assert_eq!(
            msg(budgets(0, 3, None, Some(1))),
            "--points must be at least 2 (got 1)"
        );
        assert_eq!(
            msg(budgets(0, 3, None, Some(5))),
            "--points 5 is more than the 4 budgets from 0 to 3"
        );
        assert_eq!(
            msg(budgets(-1, 3, Some(1), None)),
            "--from must be >= 0 (got -1)"
        );
        assert_eq!(
            msg(budgets(0, 100_000, Some(1), None)),
            "the sweep would probe 100001 budgets; at most 10000 are allowed"
        );
    }

    #[test]
    fn utilisation_has_four_decimals_and_zero_for_no_budget() {
        assert_eq!(utilisation(1, 3), 0.3333);
        assert_eq!(utilisation(5, 0), 0.0);
    }
}
