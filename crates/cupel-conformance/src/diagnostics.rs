//! `[expected.diagnostics]`: the summary totals and the included / excluded
//! lists of a [`SelectionReport`].

use cupel_core::{ExclusionReason, InclusionReason, SelectionReport, VariantChoice};
use toml::{Table, Value};

use crate::toml_util::{
    float, int, list, normalise, required_string, score_matches, string, table, tables,
};

/// Every difference between `report` and the `[expected.diagnostics]` table.
///
/// The outer `Err` is a malformed table. Each of `summary`, `included` and
/// `excluded` is checked only when given; inside an entry, `score_approx`,
/// the reason and the reason's fields are checked only when given.
pub(crate) fn compare(
    report: &SelectionReport,
    diag: &Table,
    eps: f64,
) -> Result<Vec<String>, String> {
    let mut diffs = Vec::new();
    if let Some(summary) = table(diag, "summary", "[expected.diagnostics]")? {
        let ctx = "[expected.diagnostics.summary]";
        if let Some(want) = int(summary, "total_candidates", ctx)?
            && i128::from(want) != report.total_candidates as i128
        {
            diffs.push(format!(
                "total_candidates: expected {want}, actual {}",
                report.total_candidates
            ));
        }
        if let Some(want) = int(summary, "total_tokens_considered", ctx)?
            && want != report.total_tokens_considered
        {
            diffs.push(format!(
                "total_tokens_considered: expected {want}, actual {}",
                report.total_tokens_considered
            ));
        }
    }
    if diag.contains_key("included") {
        let want = tables(diag, "included", "[expected.diagnostics]")?;
        let rows: Vec<Included<'_>> = report
            .included
            .iter()
            .map(|i| (&i.reason, i.variant))
            .collect();
        let got: Vec<(&str, f64, &Included<'_>)> = report
            .included
            .iter()
            .zip(&rows)
            .map(|(i, row)| (i.item.content(), i.score, row))
            .collect();
        compare_list(
            "included",
            &want,
            &got,
            eps,
            &mut diffs,
            |e, ctx, (actual, variant): &Included<'_>, out| {
                if let Some(reason) = string(e, "inclusion_reason", ctx)?
                    && normalise(reason) != normalise(actual.name())
                {
                    out.push(format!(
                        "{ctx}: inclusion_reason expected {reason}, actual {}",
                        actual.name()
                    ));
                }
                compare_variant(e, ctx, variant.as_ref(), out)
            },
        )?;
    }
    if diag.contains_key("excluded") {
        let want = tables(diag, "excluded", "[expected.diagnostics]")?;
        let got: Vec<(&str, f64, &ExclusionReason)> = report
            .excluded
            .iter()
            .map(|i| (i.item.content(), i.score, &i.reason))
            .collect();
        compare_list("excluded", &want, &got, eps, &mut diffs, compare_exclusion)?;
    }
    Ok(diffs)
}

/// An included row's reason and variant (chapter 22).
type Included<'a> = (&'a InclusionReason, Option<VariantChoice>);

/// The variant keys of an included entry (an extension, chapter 22):
/// `variant` (the variant's number; absent means the item went in whole,
/// and is then checked too), `variant_reason` and `tokens_saved` (checked
/// when given).
fn compare_variant(
    e: &Table,
    ctx: &str,
    actual: Option<&VariantChoice>,
    out: &mut Vec<String>,
) -> Result<(), String> {
    let want = int(e, "variant", ctx)?;
    let got = actual.map(|v| v.variant);
    if want.map(i128::from) != got.map(|v| v as i128) {
        let show = |v: Option<String>| v.unwrap_or_else(|| "none (whole item)".into());
        out.push(format!(
            "{ctx}: variant expected {}, actual {}",
            show(want.map(|v| v.to_string())),
            show(got.map(|v| v.to_string()))
        ));
        return Ok(());
    }
    let Some(v) = actual else { return Ok(()) };
    if let Some(reason) = string(e, "variant_reason", ctx)?
        && normalise(reason) != normalise(v.reason.name())
    {
        out.push(format!(
            "{ctx}: variant_reason expected {reason}, actual {}",
            v.reason.name()
        ));
    }
    if let Some(saved) = int(e, "tokens_saved", ctx)?
        && saved != v.tokens_saved
    {
        out.push(format!(
            "{ctx}: tokens_saved expected {saved}, actual {}",
            v.tokens_saved
        ));
    }
    Ok(())
}

type Check<R> = fn(&Table, &str, &R, &mut Vec<String>) -> Result<(), String>;

/// Compares an expected list with the report's, in order: first the contents
/// as a whole, then (position by position, where the contents agree) the
/// score and the reason.
fn compare_list<R>(
    what: &str,
    want: &[&Table],
    got: &[(&str, f64, &R)],
    eps: f64,
    diffs: &mut Vec<String>,
    check_reason: Check<R>,
) -> Result<(), String> {
    let want_contents = want
        .iter()
        .enumerate()
        .map(|(i, t)| required_string(t, "content", &format!("{what}[{i}]")))
        .collect::<Result<Vec<&str>, _>>()?;
    let got_contents: Vec<&str> = got.iter().map(|(c, _, _)| *c).collect();
    if want_contents != got_contents {
        diffs.push(format!(
            "{what}: expected {}, actual {}",
            list(&want_contents),
            list(&got_contents)
        ));
    }
    for (i, (t, (content, score, reason))) in want.iter().zip(got).enumerate() {
        if want_contents.get(i) != Some(content) {
            continue;
        }
        let ctx = format!("{what}[{i}] {content:?}");
        if let Some(want_score) = float(t, "score_approx", &ctx)?
            && !score_matches(*score, want_score, eps)
        {
            diffs.push(format!(
                "{ctx}: score expected {want_score}, actual {score}"
            ));
        }
        check_reason(t, &ctx, reason, diffs)?;
    }
    Ok(())
}

/// A reason field's value, for comparison with the vector.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    Int(i64),
    Str(String),
    /// A kind: compared ignoring ASCII case, as kinds are.
    Kind(String),
    Float(f64),
}

/// The fields of a reason under the names vectors use. A count-cap
/// exclusion's `count` is offered as both `actual` and `count`.
fn reason_fields(r: &ExclusionReason) -> Vec<(&'static str, Field)> {
    match r {
        ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } => vec![
            ("item_tokens", Field::Int(*item_tokens)),
            ("available_tokens", Field::Int(*available_tokens)),
        ],
        ExclusionReason::ScoredTooLow { threshold, .. } => {
            vec![("threshold", Field::Float(*threshold))]
        }
        ExclusionReason::Deduplicated {
            deduplicated_against,
        } => vec![(
            "deduplicated_against",
            Field::Str(deduplicated_against.clone()),
        )],
        ExclusionReason::QuotaCapExceeded { kind, cap, actual } => vec![
            ("kind", Field::Kind(kind.clone())),
            ("cap", Field::Int(*cap)),
            ("actual", Field::Int(*actual)),
        ],
        ExclusionReason::QuotaRequireDisplaced { displaced_by_kind } => {
            vec![("displaced_by_kind", Field::Kind(displaced_by_kind.clone()))]
        }
        ExclusionReason::NegativeTokens { tokens } => vec![("tokens", Field::Int(*tokens))],
        ExclusionReason::PinnedOverride { displaced_by } => {
            vec![("displaced_by", Field::Str(displaced_by.clone()))]
        }
        ExclusionReason::Filtered { filter_name } => {
            vec![("filter_name", Field::Str(filter_name.clone()))]
        }
        ExclusionReason::CountCapExceeded { kind, cap, count } => vec![
            ("kind", Field::Kind(kind.clone())),
            ("cap", Field::Int(*cap)),
            ("actual", Field::Int(*count)),
            ("count", Field::Int(*count)),
        ],
        ExclusionReason::GroupExcluded {
            group,
            group_tokens,
            available_tokens,
        } => vec![
            ("group", Field::Str(group.clone())),
            ("group_tokens", Field::Int(*group_tokens)),
            ("available_tokens", Field::Int(*available_tokens)),
        ],
        _ => Vec::new(),
    }
}

/// Whether a vector's `exclusion_reason` names `actual` (ignoring case,
/// `_`, `-`). A count-cap exclusion answers to `CountCapExceeded` and to
/// `QuotaCapExceeded` (decision D-10).
pub(crate) fn exclusion_name_matches(expected: &str, actual: &ExclusionReason) -> bool {
    let e = normalise(expected);
    e == normalise(actual.name())
        || (matches!(actual, ExclusionReason::CountCapExceeded { .. }) && e == "quotacapexceeded")
}

fn compare_exclusion(
    t: &Table,
    ctx: &str,
    actual: &ExclusionReason,
    diffs: &mut Vec<String>,
) -> Result<(), String> {
    if let Some(name) = string(t, "exclusion_reason", ctx)?
        && !exclusion_name_matches(name, actual)
    {
        diffs.push(format!(
            "{ctx}: exclusion_reason expected {name}, actual {actual}"
        ));
        return Ok(());
    }
    for (key, got) in reason_fields(actual) {
        let Some(want) = t.get(key) else { continue };
        let same = match (&got, want) {
            (Field::Int(g), Value::Integer(w)) => g == w,
            (Field::Float(g), Value::Float(w)) => g == w,
            #[allow(clippy::cast_precision_loss)]
            (Field::Float(g), Value::Integer(w)) => *g == *w as f64,
            (Field::Str(g), Value::String(w)) => g == w,
            (Field::Kind(g), Value::String(w)) => g.eq_ignore_ascii_case(w),
            _ => {
                return Err(format!(
                    "{ctx}: `{key}` has the wrong type ({})",
                    want.type_str()
                ));
            }
        };
        if !same {
            let shown = match &got {
                Field::Int(g) => g.to_string(),
                Field::Float(g) => g.to_string(),
                Field::Str(g) | Field::Kind(g) => format!("{g:?}"),
            };
            diffs.push(format!("{ctx}: {key} expected {want}, actual {shown}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::{ContextItem, ExcludedItem, IncludedItem};

    fn report() -> SelectionReport {
        let item = |c: &str, t: i64| ContextItem::new(c, t).unwrap();
        {
            let mut r = SelectionReport::default();
            r.included = vec![
                IncludedItem::new(item("sys", 100), 1.0, InclusionReason::Pinned),
                IncludedItem::new(item("turn", 120), 0.9, InclusionReason::Scored),
            ];
            r.excluded = vec![
                ExcludedItem::new(
                    item("doc", 400),
                    0.6,
                    ExclusionReason::BudgetExceeded {
                        item_tokens: 400,
                        available_tokens: 280,
                    },
                ),
                ExcludedItem::new(
                    item("tool", 10),
                    0.5,
                    ExclusionReason::CountCapExceeded {
                        kind: "ToolOutput".into(),
                        cap: 1,
                        count: 1,
                    },
                ),
            ];
            r.total_candidates = 4;
            r.total_tokens_considered = 630;
            r
        }
    }

    fn diag(s: &str) -> Table {
        s.parse::<Table>().unwrap()
    }

    #[test]
    fn a_matching_report_has_no_differences() {
        let d = diag(
            r#"
[summary]
total_candidates = 4
total_tokens_considered = 630
[[included]]
content = "sys"
score_approx = 1.0
inclusion_reason = "Pinned"
[[included]]
content = "turn"
score_approx = 0.9
inclusion_reason = "scored"
[[excluded]]
content = "doc"
score_approx = 0.6
exclusion_reason = "BudgetExceeded"
item_tokens = 400
available_tokens = 280
[[excluded]]
content = "tool"
score_approx = 0.5
exclusion_reason = "QuotaCapExceeded"
kind = "tooloutput"
cap = 1
actual = 1
"#,
        );
        assert_eq!(compare(&report(), &d, 1e-9).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn every_difference_is_reported() {
        let d = diag(
            r#"
[summary]
total_candidates = 5
[[included]]
content = "sys"
score_approx = 0.0
inclusion_reason = "Pinned"
[[included]]
content = "turn"
inclusion_reason = "ZeroToken"
[[excluded]]
content = "doc"
exclusion_reason = "BudgetExceeded"
available_tokens = 50
[[excluded]]
content = "tool"
exclusion_reason = "CountCapExceeded"
actual = 2
"#,
        );
        let diffs = compare(&report(), &d, 1e-9).unwrap();
        assert_eq!(
            diffs,
            [
                "total_candidates: expected 5, actual 4",
                "included[0] \"sys\": score expected 0, actual 1",
                "included[1] \"turn\": inclusion_reason expected ZeroToken, actual Scored",
                "excluded[0] \"doc\": available_tokens expected 50, actual 280",
                "excluded[1] \"tool\": actual expected 2, actual 1",
            ]
        );
    }

    #[test]
    fn a_different_list_is_shown_whole() {
        let d = diag("[[excluded]]\ncontent = \"tool\"\n");
        let diffs = compare(&report(), &d, 1e-9).unwrap();
        assert_eq!(
            diffs,
            ["excluded: expected [\"tool\"], actual [\"doc\", \"tool\"]"]
        );
    }

    #[test]
    fn reason_names_follow_d10() {
        let cap = ExclusionReason::CountCapExceeded {
            kind: "A".into(),
            cap: 1,
            count: 1,
        };
        assert!(exclusion_name_matches("CountCapExceeded", &cap));
        assert!(exclusion_name_matches("QuotaCapExceeded", &cap));
        assert!(exclusion_name_matches("count_cap_exceeded", &cap));
        assert!(!exclusion_name_matches("BudgetExceeded", &cap));
        let dedup = ExclusionReason::Deduplicated {
            deduplicated_against: "x".into(),
        };
        assert!(!exclusion_name_matches("QuotaCapExceeded", &dedup));
    }
}
