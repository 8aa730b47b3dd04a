//! `cupel adaptive simulate` (the old name `cupel budget simulate` still
//! works, as a hidden alias): replays token usage through the adaptive budget
//! rule of `cupel_run::UsageRecorder` and prints the budget after each cycle
//! (spec chapter 16). With `--usage` the text output is exactly the seed's
//! lines (`step N: B` ..., `final budget: B`); the header line naming the
//! margin and the initial budget is printed only with `--verbose`.

use std::fmt::Write as _;

use clap::{Args, Subcommand};
use cupel_run::{AdaptiveSuggestion, Decimal, SuggestionRule, UsageError, UsageRecorder};
use rust_decimal::RoundingStrategy;
use serde::Serialize;

use crate::OutputFormat;
use crate::chart::{LineChart, Series};
use crate::error::CliError;
use crate::trace::{self, TraceCycle};

/// The agent name of `--usage` simulations.
const CONSTANT_AGENT: &str = "agent";

/// Default `--steps` with `--usage`.
const DEFAULT_STEPS: u64 = 10;

/// Upper bound of `--steps`.
const MAX_STEPS: u64 = 100_000;

const SIMULATE_AFTER_HELP: &str = "\
Text output: `step N: B` per cycle, then `final budget: B` (with --trace each
step also shows its candidates). --verbose opens it with a header line, the
margin and the initial budget: `margin 0.2, initial budget 50`.

After each cycle the budget for the next one is
  ceil(max(u, ū, a, ā) × (1 + margin))
u: the cycle's total usage; ū: the mean of the last ten non-zero totals;
a: the largest usage of one agent in the cycle; ā: the largest mean of one
agent over its last ten cycles (idle cycles count as 0). A negative margin
counts as 0. Before any usage the budget is kept; after ten idle cycles it
is 1; it is never below 1. See spec/16-adaptive-budget.md.

Trace CSV: the header `cycle,agent,tokens`, then one row per agent per
cycle, cycles ascending. An agent seen before with no row in a cycle was
idle (0 tokens).";

/// `cupel adaptive ...`
#[derive(Debug, Args)]
pub(crate) struct AdaptiveArgs {
    #[command(subcommand)]
    command: AdaptiveCommand,
}

#[derive(Debug, Subcommand)]
enum AdaptiveCommand {
    /// Simulate adaptive token budgets for constant usage or a recorded trace.
    #[command(after_help = crate::with_exit_pointer(SIMULATE_AFTER_HELP))]
    Simulate(SimulateArgs),
}

#[derive(Debug, Args)]
struct SimulateArgs {
    /// Tokens one agent uses in every cycle
    #[arg(
        long,
        value_name = "TOKENS",
        required_unless_present = "trace",
        value_parser = clap::value_parser!(i64).range(0..)
    )]
    usage: Option<i64>,

    /// Number of cycles with --usage [default: 10]
    #[arg(
        long,
        value_name = "N",
        requires = "usage",
        value_parser = clap::value_parser!(u64).range(1..=MAX_STEPS)
    )]
    steps: Option<u64>,

    /// CSV usage trace (cycle,agent,tokens); `-` is stdin
    #[arg(long, value_name = "FILE", conflicts_with_all = ["usage", "steps"])]
    trace: Option<String>,

    /// Safety margin, a decimal such as 0.2 (negative counts as 0)
    #[arg(
        long,
        value_name = "M",
        default_value = "0.1",
        allow_negative_numbers = true,
        value_parser = parse_margin
    )]
    margin: Decimal,

    /// Budget before the first cycle [default: --usage, or 1 for a trace]
    ///
    /// Kept while no usage has been seen.
    #[arg(
        long,
        value_name = "B",
        value_parser = clap::value_parser!(i64).range(1..),
        verbatim_doc_comment
    )]
    initial: Option<i64>,

    /// text (default) or json
    #[arg(
        long,
        value_enum,
        default_value_t = OutputFormat::Text,
        hide_default_value = true,
        hide_possible_values = true
    )]
    format: OutputFormat,

    /// Also draw usage and budget per cycle as an SVG chart
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,

    /// Open the text output with a header line: the margin and the initial budget
    #[arg(long)]
    verbose: bool,
}

fn parse_margin(s: &str) -> Result<Decimal, String> {
    s.parse::<Decimal>()
        .or_else(|_| Decimal::from_scientific(s))
        .map_err(|_| format!("`{s}` is not a decimal number (e.g. 0.1)"))
}

/// Runs `cupel adaptive <command>`.
pub(crate) fn run(a: &AdaptiveArgs) -> Result<String, CliError> {
    match &a.command {
        AdaptiveCommand::Simulate(s) => simulate(s),
    }
}

/// One simulated cycle.
#[derive(Debug, Clone)]
struct Step {
    /// 1-based position in the simulation.
    step: u64,
    /// The cycle number of the trace (the position with --usage).
    cycle: u64,
    /// The budget suggested after the cycle, with its candidates.
    suggestion: AdaptiveSuggestion,
}

fn simulate(a: &SimulateArgs) -> Result<String, CliError> {
    let (name, cycles, initial, explain) = match (&a.trace, a.usage) {
        (Some(path), _) => (
            path.as_str(),
            trace::read(path)?,
            a.initial.unwrap_or(1),
            true,
        ),
        (None, Some(usage)) => {
            let steps = a.steps.unwrap_or(DEFAULT_STEPS);
            let initial = a.initial.unwrap_or(usage.max(1));
            ("--usage", constant(usage, steps), initial, false)
        }
        (None, None) => {
            return Err(CliError::input("nothing to simulate")
                .hint("pass --usage TOKENS [--steps N] or --trace FILE"));
        }
    };
    let steps = replay(name, &cycles, initial, a.margin)?;
    if let Some(path) = &a.plot {
        chart(&steps, a.margin).write_svg(path)?;
    }
    let final_budget = steps.last().map_or(initial, |s| s.suggestion.budget);
    match a.format {
        OutputFormat::Json => json(&steps, a.margin, initial, final_budget),
        OutputFormat::Text => {
            let header = a.verbose.then(|| header(a.margin, initial));
            Ok(text(&steps, header.as_deref(), final_budget, explain))
        }
    }
}

/// `cupel adaptive simulate --trace --verbose` on a trace held in memory: the
/// explained text and the JSON, joined (the fuzz harness's entry).
pub(crate) fn simulate_trace_text(text: &str, margin: Decimal) -> Result<String, CliError> {
    let cycles = trace::parse("trace", text)?;
    let steps = replay("trace", &cycles, 1, margin)?;
    let final_budget = steps.last().map_or(1, |s| s.suggestion.budget);
    let mut out = self::text(&steps, Some(&header(margin, 1)), final_budget, true);
    out.push_str(&json(&steps, margin, 1, final_budget)?);
    // The chart is drawn in memory too: every number must plot.
    chart(&steps, margin)
        .to_svg()
        .map_err(|e| CliError::input(format!("cannot draw the chart: {e}")))?;
    Ok(out)
}

/// `steps` cycles in which one agent uses `usage` tokens.
fn constant(usage: i64, steps: u64) -> Vec<TraceCycle> {
    (1..=steps)
        .map(|n| TraceCycle {
            cycle: n,
            line: n,
            usage: vec![(CONSTANT_AGENT.to_string(), usage)],
        })
        .collect()
}

/// Records each cycle and asks for the next budget, feeding each suggestion
/// back as the current budget.
fn replay(
    name: &str,
    cycles: &[TraceCycle],
    initial: i64,
    margin: Decimal,
) -> Result<Vec<Step>, CliError> {
    let mut recorder = UsageRecorder::new();
    let mut budget = initial;
    let mut steps = Vec::with_capacity(cycles.len());
    for (i, c) in cycles.iter().enumerate() {
        recorder
            .record_cycle(c.usage.iter().map(|(agent, t)| (agent.as_str(), *t)))
            .map_err(|e| match e {
                UsageError::TotalOverflow { total, .. } => CliError::input(format!(
                    "{name}:{}: the tokens of cycle {} add up to {total}, beyond the 64-bit range",
                    c.line, c.cycle
                )),
                other => CliError::input(format!("{name}:{}: {other}", c.line)),
            })?;
        let suggestion = recorder.suggest(budget, margin);
        budget = suggestion.budget;
        steps.push(Step {
            step: i as u64 + 1,
            cycle: c.cycle,
            suggestion,
        });
    }
    Ok(steps)
}

/// A mean for people: two decimals, halves away from zero, no trailing zeros.
fn short(d: Decimal) -> String {
    d.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
        .normalize()
        .to_string()
}

/// The header line of the text output with `--verbose`: the margin as given
/// (and what a negative one counts as) and the budget before the first cycle.
fn header(margin: Decimal, initial: i64) -> String {
    let shown = margin.normalize();
    if margin.is_sign_negative() && !margin.is_zero() {
        format!("margin {shown} (counts as 0), initial budget {initial}")
    } else {
        format!("margin {shown}, initial budget {initial}")
    }
}

/// `header` on a line of its own if given (see [`header`]), then `step N: B`
/// per cycle and `final budget: B` — without `header` and `explain`, exactly
/// the seed's lines; with `explain`, the candidates u, ū, a, ā, the trace's
/// cycle number and a note when the NoUsage or Idle rule applied follow on
/// each line, in aligned columns.
fn text(steps: &[Step], header: Option<&str>, final_budget: i64, explain: bool) -> String {
    let mut out = String::new();
    if let Some(header) = header {
        let _ = writeln!(out, "{header}");
    }
    if !explain {
        for s in steps {
            let _ = writeln!(out, "step {}: {}", s.step, s.suggestion.budget);
        }
        let _ = writeln!(out, "final budget: {final_budget}");
        return out;
    }
    // Agent names come from the trace: escape line breaks and other control
    // characters so a name cannot forge a line of output.
    let who = |n: &Option<String>| {
        n.as_ref()
            .map(|n| format!(" ({})", cupel_gate::header_value(n)))
            .unwrap_or_default()
    };
    let rows: Vec<Vec<String>> = steps
        .iter()
        .map(|s| {
            let mut row = vec![format!("step {}: {}", s.step, s.suggestion.budget)];
            if let Some(c) = &s.suggestion.candidates {
                row.push(format!("u={}", c.total));
                row.push(format!("ū={}", short(c.mean_total)));
                row.push(format!("a={}{}", c.max_agent, who(&c.max_agent_name)));
                row.push(format!(
                    "ā={}{}",
                    short(c.max_agent_mean),
                    who(&c.max_agent_mean_name)
                ));
            }
            // The trace's own cycle number follows the candidates: it differs from the
            // step when the trace skips cycle numbers.
            row.push(format!("(cycle {})", s.cycle));
            match s.suggestion.rule {
                SuggestionRule::NoUsage => row.push("[no usage yet: budget kept]".into()),
                SuggestionRule::Idle => row.push("[ten idle cycles: budget 1]".into()),
                _ => {}
            }
            row
        })
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| crate::render::width(c))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = widths[i].saturating_sub(crate::render::width(cell));
            line.extend(std::iter::repeat_n(' ', pad));
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out, "final budget: {final_budget}");
    out
}

#[derive(Serialize)]
struct JsonReport<'a> {
    margin: f64,
    initial_budget: i64,
    steps: Vec<JsonStep<'a>>,
    final_budget: i64,
}

#[derive(Serialize)]
struct JsonStep<'a> {
    step: u64,
    cycle: u64,
    budget: i64,
    rule: &'static str,
    total: i64,
    mean_total: f64,
    max_agent: i64,
    max_agent_name: Option<&'a str>,
    max_agent_mean: f64,
    max_agent_mean_name: Option<&'a str>,
}

/// A decimal as a JSON number: six decimals, halves away from zero.
fn number(d: Decimal) -> f64 {
    d.round_dp_with_strategy(6, RoundingStrategy::MidpointAwayFromZero)
        .to_string()
        .parse()
        .unwrap_or(f64::MAX)
}

fn rule_name(rule: SuggestionRule) -> &'static str {
    match rule {
        SuggestionRule::NoUsage => "no_usage",
        SuggestionRule::Idle => "idle",
        _ => "usage",
    }
}

fn json(
    steps: &[Step],
    margin: Decimal,
    initial: i64,
    final_budget: i64,
) -> Result<String, CliError> {
    let report = JsonReport {
        // The margin as given (clamped), not rounded: `0.0000001` must not
        // read as 0 when the budget was computed with it.
        margin: margin
            .max(Decimal::ZERO)
            .normalize()
            .to_string()
            .parse()
            .unwrap_or(f64::MAX),
        initial_budget: initial,
        steps: steps
            .iter()
            .filter_map(|s| {
                let c = s.suggestion.candidates.as_ref()?;
                Some(JsonStep {
                    step: s.step,
                    cycle: s.cycle,
                    budget: s.suggestion.budget,
                    rule: rule_name(s.suggestion.rule),
                    total: c.total,
                    mean_total: number(c.mean_total),
                    max_agent: c.max_agent,
                    max_agent_name: c.max_agent_name.as_deref(),
                    max_agent_mean: number(c.max_agent_mean),
                    max_agent_mean_name: c.max_agent_mean_name.as_deref(),
                })
            })
            .collect(),
        final_budget,
    };
    let mut s = serde_json::to_string_pretty(&report)
        .map_err(|e| CliError::input(format!("cannot serialise the simulation: {e}")))?;
    s.push('\n');
    Ok(s)
}

/// Usage and suggested budget per step.
fn chart(steps: &[Step], margin: Decimal) -> LineChart {
    let step = |s: &Step| i64::try_from(s.step).unwrap_or(i64::MAX);
    let usage = steps
        .iter()
        .map(|s| {
            let total = s.suggestion.candidates.as_ref().map_or(0, |c| c.total);
            (step(s), total)
        })
        .collect();
    let budget = steps
        .iter()
        .map(|s| (step(s), s.suggestion.budget))
        .collect();
    LineChart {
        title: format!(
            "Adaptive token budget (margin {})",
            margin.max(Decimal::ZERO).normalize()
        ),
        x_label: "step (cycle)".into(),
        y_label: "tokens".into(),
        series: vec![
            Series {
                name: "usage u (cycle total)".into(),
                points: usage,
            },
            Series {
                name: "budget suggested after the cycle".into(),
                points: budget,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_are_shown_with_two_decimals_halves_up() {
        let d = |s: &str| s.parse::<Decimal>().unwrap_or_default();
        assert_eq!(short(d("40") / d("3")), "13.33");
        assert_eq!(short(d("17.5")), "17.5");
        assert_eq!(short(d("5.000")), "5");
        assert_eq!(short(d("0.125")), "0.13");
        assert_eq!(number(d("40") / d("3")), 13.333333);
    }

    #[test]
    fn margins_parse_as_exact_decimals() {
        assert_eq!(parse_margin("0.1").map(|m| m.to_string()), Ok("0.1".into()));
        assert_eq!(
            parse_margin("-0.5").map(|m| m.to_string()),
            Ok("-0.5".into())
        );
        assert_eq!(
            parse_margin("1e-1").map(|m| m.to_string()),
            Ok("0.1".into())
        );
        assert!(parse_margin("ten").is_err());
        assert!(parse_margin("NaN").is_err());
    }
}
