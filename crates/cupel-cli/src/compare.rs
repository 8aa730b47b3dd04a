//! `cupel compare INPUT --policy A --policy B`: the same items and budget
//! under several policies (`cupel_analytics::policy_sensitivity`).

use std::collections::HashMap;
use std::fmt::Write as _;

use clap::Args;
use cupel_analytics::{ItemStatus, policy_sensitivity};
use cupel_pipeline::{Policy, PolicyConfig};

use crate::SourceArgs;
use crate::error::CliError;
use crate::input::{self, PolicyOrigin, Prepared};
use crate::render;
use crate::whatif::{self, Run};

/// The most policies one comparison takes (one letter each).
const MAX_POLICIES: usize = 26;

pub(crate) const COMPARE_AFTER_HELP: &str = "\
Runs INPUT's items with INPUT's budget under each policy. A --policy value is
a preset name (`cupel presets`) or a policy file (the contents of a [policy]
table; `.json` is JSON, anything else TOML); write ./NAME for a file named
like a preset. INPUT's own [policy] is not used.

The table shows every item, by position, as `in` or `out` under each policy.
The differences list the items whose status is not the same under every
policy, matched by content as the specification's policy sensitivity does
(a duplicate counts as in when its twin is), in order of first appearance in
INPUT. The summary counts items and tokens per policy and the overlap.

Example:
  cupel demo --print-input > chat.toml
  cupel compare chat.toml --policy chat --policy rag
  cupel compare chat.toml --policy chat --policy my-policy.toml --policy debugging";

/// `cupel compare ...`
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// TOML or JSON file with [budget] and [[items]]; `-` is stdin
    #[arg(value_name = "INPUT")]
    input: String,

    /// A preset name or a policy file; give two or more
    #[arg(
        long = "policy",
        value_name = "PRESET|FILE",
        alias = "preset",
        required = true
    )]
    policies: Vec<String>,

    #[command(flatten)]
    source: SourceArgs,
}

/// One compared policy.
struct Variant {
    letter: char,
    spec: String,
    config: PolicyConfig,
    origin: PolicyOrigin,
    policy: Policy,
    run: Run,
}

/// Runs `cupel compare`.
pub(crate) fn run(a: &CompareArgs) -> Result<String, CliError> {
    let n = a.policies.len();
    if n < 2 {
        return Err(
            CliError::input(format!("compare needs at least two --policy (got {n})"))
                .hint("e.g. --policy chat --policy rag"),
        );
    }
    if n > MAX_POLICIES {
        return Err(CliError::input(format!(
            "compare takes at most {MAX_POLICIES} --policy (got {n})"
        )));
    }
    // INPUT's own [policy] plays no part: read it under a fixed preset.
    let p = a.source.load(&a.input, Some("chat".into()))?;
    let mut variants = Vec::with_capacity(n);
    for (spec, letter) in a.policies.iter().zip('A'..='Z') {
        let (config, origin, policy) = input::policy_from_spec(spec)?;
        let run = whatif::run(&policy, &p.budget, &p.items).map_err(|e| {
            let mut err = CliError::from_run(&e);
            err.message = format!("under policy {letter} ({spec}): {}", err.message);
            err
        })?;
        variants.push(Variant {
            letter,
            spec: spec.clone(),
            config,
            origin,
            policy,
            run,
        });
    }
    let labelled: Vec<(&str, &Policy)> = variants
        .iter()
        .map(|v| (v.spec.as_str(), &v.policy))
        .collect();
    let report =
        policy_sensitivity(&p.items, &p.budget, &labelled).map_err(|e| CliError::from_run(&e))?;
    // Each content's first position, to name a difference by its item.
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(p.items.len());
    for (i, it) in p.items.iter().enumerate() {
        first.entry(it.content()).or_insert(i);
    }
    let diffs: Vec<(usize, Vec<bool>)> = report
        .diffs
        .iter()
        .map(|d| {
            let i = first.get(d.content.as_str()).copied().unwrap_or(usize::MAX);
            let statuses = d
                .statuses
                .iter()
                .map(|(_, s)| *s == ItemStatus::Included)
                .collect();
            (i, statuses)
        })
        .collect();
    Ok(text(&p, &variants, &diffs))
}

fn status(included: bool) -> &'static str {
    if included { "in" } else { "out" }
}

fn text(p: &Prepared, variants: &[Variant], diffs: &[(usize, Vec<bool>)]) -> String {
    let mut out = render::budget_line(p);
    for (k, v) in variants.iter().enumerate() {
        let label = if k == 0 { "policies  " } else { "          " };
        whatif::line(
            &mut out,
            &format!("{label}{}  ", v.letter),
            &render::origin_text(&v.origin),
        );
        whatif::line(
            &mut out,
            "             ",
            &render::policy_summary(&v.config),
        );
    }
    out.push('\n');

    // Every item by position.
    let iw = p.items.len().saturating_sub(1).to_string().len().max(4);
    let kinds: Vec<[String; 2]> = p
        .items
        .iter()
        .map(|it| [it.tokens().to_string(), it.kind().to_string()])
        .collect();
    let w = render::widths(&kinds, ["tokens", "kind"], [12, 14]);
    let mut head = format!("{:>iw$}", "item");
    for v in variants {
        let _ = write!(head, "  {:>3}", v.letter);
    }
    let _ = write!(
        head,
        "  {:>w0$}  {:<w1$}  ",
        "tokens",
        "kind",
        w0 = w[0],
        w1 = w[1]
    );
    let cw = render::WIDTH.saturating_sub(render::width(&head)).max(10);
    let _ = writeln!(out, "{head}content");
    for (i, (item, cells)) in p.items.iter().zip(&kinds).enumerate() {
        let mut row = format!("{i:>iw$}");
        for v in variants {
            let _ = write!(row, "  {:>3}", status(v.run.includes(i)));
        }
        let _ = writeln!(
            out,
            "{row}  {:>w0$}  {}  {}",
            cells[0],
            render::pad(&render::clip(&cells[1], w[1]), w[1]),
            render::clip(item.content(), cw),
            w0 = w[0]
        );
    }
    if p.items.is_empty() {
        let _ = writeln!(out, "  (no items)");
    }
    out.push('\n');

    differences(&mut out, p, variants, diffs, iw);
    summary(&mut out, p, variants);
    out
}

/// The items whose status differs between the policies, by content, in
/// input order (`iw`: the item column's width).
fn differences(
    out: &mut String,
    p: &Prepared,
    variants: &[Variant],
    diffs: &[(usize, Vec<bool>)],
    iw: usize,
) {
    // The differences, by content, in input order.
    let distinct = {
        let mut seen = std::collections::HashSet::with_capacity(p.items.len());
        p.items
            .iter()
            .filter(|it| seen.insert(it.content()))
            .count()
    };
    let _ = writeln!(
        out,
        "differences: {} of {} distinct contents change status (matched by content):",
        diffs.len(),
        distinct
    );
    if diffs.is_empty() {
        let _ = writeln!(out, "  (none: every policy selects the same contents)");
    } else {
        let mut head = format!("{:>iw$}", "item");
        for v in variants {
            let _ = write!(head, "  {:>3}", v.letter);
        }
        head.push_str("  ");
        let cw = render::WIDTH.saturating_sub(render::width(&head)).max(10);
        let _ = writeln!(out, "{head}content");
        for (i, statuses) in diffs {
            let mut row = format!("{i:>iw$}");
            for s in statuses {
                let _ = write!(row, "  {:>3}", status(*s));
            }
            let content = p.items.get(*i).map_or("", |it| it.content());
            let _ = writeln!(out, "{row}  {}", render::clip(content, cw));
        }
    }
    out.push('\n');
}

/// Each policy's items and tokens, and how many items are in all, in one
/// only, and in none.
fn summary(out: &mut String, p: &Prepared, variants: &[Variant]) {
    // The summary.
    for (k, v) in variants.iter().enumerate() {
        let label = if k == 0 { "summary   " } else { "          " };
        let _ = writeln!(
            out,
            "{label}{}  {:<9} {:>7} tokens",
            v.letter,
            whatif::count(v.run.placed.len(), "item"),
            v.run.tokens
        );
    }
    let (mut all, mut none) = (0usize, 0usize);
    let mut only = vec![0usize; variants.len()];
    for i in 0..p.items.len() {
        let ins: Vec<bool> = variants.iter().map(|v| v.run.includes(i)).collect();
        let count = ins.iter().filter(|&&x| x).count();
        if count == variants.len() {
            all += 1;
        } else if count == 0 {
            none += 1;
        } else if count == 1
            && let Some(k) = ins.iter().position(|&x| x)
            && let Some(o) = only.get_mut(k)
        {
            *o += 1;
        }
    }
    let g = render::GLUE;
    let mut parts = vec![format!("in{g}all{g}{all}")];
    for (v, n) in variants.iter().zip(&only) {
        parts.push(format!("only{g}in{g}{}{g}{n}", v.letter));
    }
    parts.push(format!("in{g}none{g}{none}"));
    whatif::line(out, "items     ", &parts.join(", "));
}
