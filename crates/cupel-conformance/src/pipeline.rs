//! Pipeline vectors: a [`ContextBudget`] from `[budget]`, a policy from
//! `[config]` (a [`PolicyConfig`]), both [`Pipeline::run`] and
//! [`Pipeline::dry_run`] on `[[items]]`, compared with `[[expected_output]]`,
//! `[expected] expect_error` and `[expected.diagnostics]`.

use std::collections::BTreeMap;

use cupel_core::{ContextBudget, ContextItem, ContextKind, CupelError};
use cupel_pipeline::{Pipeline, PolicyConfig};
use toml::Table;

use crate::diagnostics;
use crate::errors::ExpectedError;
use crate::stages::{construction, epsilon, verdict};
use crate::toml_util::{
    check_scorer_names, check_slicer_names, float, int, items, list, one_line, placer_type,
    required_string, string, table, tables,
};

/// Builds a [`ContextBudget`] from a `[budget]` table.
///
/// The outer `Err` is a malformed vector (missing key, wrong type); the inner
/// one is the budget's own validation error (a construction error).
pub(crate) fn budget(t: &Table) -> Result<Result<ContextBudget, CupelError>, String> {
    let ctx = "[budget]";
    let max = int(t, "max_tokens", ctx)?.ok_or("[budget]: missing `max_tokens`")?;
    let target = int(t, "target_tokens", ctx)?.ok_or("[budget]: missing `target_tokens`")?;
    let mut b = ContextBudget::builder(max, target);
    if let Some(reserve) = int(t, "output_reserve", ctx)? {
        b = b.output_reserve(reserve);
    }
    if let Some(margin) = float(t, "estimation_safety_margin_percent", ctx)? {
        b = b.safety_margin_percent(margin);
    }
    if let Some(slots) = table(t, "reserved_slots", ctx)? {
        let mut map = BTreeMap::new();
        for (kind, value) in slots {
            let tokens = value.as_integer().ok_or_else(|| {
                format!(
                    "[budget.reserved_slots]: `{kind}` must be an integer, found {}",
                    value.type_str()
                )
            })?;
            match ContextKind::new(kind.clone()) {
                // Kinds compare ignoring ASCII case: `Tool` and `tool` are one
                // key, and letting one replace the other would drop a reservation.
                Ok(k) => {
                    if let Some(earlier) = map.keys().find(|e| **e == k) {
                        return Err(format!(
                            "[budget.reserved_slots]: kind `{kind}` is given twice (also as `{earlier}`)"
                        ));
                    }
                    map.insert(k, tokens);
                }
                Err(e) => return Ok(Err(e)),
            }
        }
        b = b.reserved_slots(map);
    }
    Ok(b.build())
}

/// Builds the pipeline: budget, then policy. Outer `Err`: malformed vector or
/// unknown component name; inner `Err`: a construction error.
fn build(v: &Table) -> Result<Result<Pipeline, String>, String> {
    let budget_t = table(v, "budget", "vector")?.ok_or("missing [budget] table")?;
    let config = table(v, "config", "vector")?.ok_or("missing [config] table")?;
    check_slicer_names(config, "[config]")?;
    if let Some(p) = string(config, "placer", "[config]")? {
        placer_type(p, "[config].placer")?;
    }
    for (i, s) in tables(config, "scorers", "[config]")?
        .into_iter()
        .enumerate()
    {
        check_scorer_names(s, &format!("[config].scorers[{i}]"))?;
    }
    let budget = match budget(budget_t)? {
        Ok(b) => b,
        Err(e) => return Ok(Err(format!("invalid budget: {e}"))),
    };
    let policy_cfg: PolicyConfig = match config.clone().try_into() {
        Ok(c) => c,
        Err(e) => {
            return Ok(Err(format!(
                "invalid [config]: {}",
                one_line(&e.to_string())
            )));
        }
    };
    let policy = match policy_cfg.build() {
        Ok(p) => p,
        Err(e) => return Ok(Err(e.to_string())),
    };
    Ok(Pipeline::builder()
        .policy(&policy)
        .budget(budget)
        .build()
        .map_err(|e| e.to_string()))
}

/// Runs a pipeline vector.
pub(crate) fn pipeline(v: &Table, expect_construction_error: bool) -> Result<(), String> {
    let Some(pipeline) = construction(build(v)?, expect_construction_error, "pipeline")? else {
        return Ok(());
    };
    let items = items(v, "items")?;
    let expected = table(v, "expected", "vector")?;
    let run = pipeline.run(&items);
    let report = pipeline.dry_run(&items);

    if let Some(want) = ExpectedError::from_expected(expected)? {
        let mut diffs = Vec::new();
        match &run {
            Err(e) if want.matches(e) => {}
            Err(e) => diffs.push(format!(
                "run: expected error `{}`, actual error: {e}",
                want.name()
            )),
            Ok(out) => diffs.push(format!(
                "run: expected error `{}`, but it succeeded with {}",
                want.name(),
                list(&contents(out.iter()))
            )),
        }
        match &report {
            Err(e) if want.matches(e) => {}
            Err(e) => diffs.push(format!(
                "dry_run: expected error `{}`, actual error: {e}",
                want.name()
            )),
            Ok(r) => diffs.push(format!(
                "dry_run: expected error `{}`, but it succeeded with {}",
                want.name(),
                list(&contents(r.included_items()))
            )),
        }
        return verdict(diffs);
    }

    let output = run.map_err(|e| format!("run failed: {e}"))?;
    let report = report.map_err(|e| format!("dry_run failed: {e}"))?;
    let diag = match expected {
        Some(e) => table(e, "diagnostics", "[expected]")?,
        None => None,
    };

    let mut diffs = Vec::new();
    let want_output = expected_output(v)?;
    // No [[expected_output]]: an empty window is expected, unless the vector
    // asserts through diagnostics instead.
    let want_output = match (want_output, diag) {
        (Some(w), _) => Some(w),
        (None, Some(_)) => None,
        (None, None) => Some(Vec::new()),
    };
    if let Some(want) = want_output {
        let got = contents(output.iter());
        if got != want {
            diffs.push(format!(
                "output: expected {}, actual {}",
                list(&want),
                list(&got)
            ));
        }
        let included = contents(report.included_items());
        if included != want {
            diffs.push(format!(
                "report included order: expected {}, actual {}",
                list(&want),
                list(&included)
            ));
        }
    }
    if let Some(diag) = diag {
        diffs.extend(diagnostics::compare(&report, diag, epsilon(v)?)?);
    }
    verdict(diffs)
}

/// `[[expected_output]]` contents, or `None` when the key is absent.
fn expected_output(v: &Table) -> Result<Option<Vec<String>>, String> {
    if !v.contains_key("expected_output") {
        return Ok(None);
    }
    tables(v, "expected_output", "vector")?
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            required_string(t, "content", &format!("expected_output[{i}]")).map(str::to_string)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn contents<'a>(items: impl Iterator<Item = &'a ContextItem>) -> Vec<String> {
    items.map(|i| i.content().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Table {
        s.parse::<Table>().unwrap()
    }

    #[test]
    fn budget_reads_every_field() {
        let t = parse(
            r#"
max_tokens = 1000
target_tokens = 800
output_reserve = 100
estimation_safety_margin_percent = 10
[reserved_slots]
Message = 50
"#,
        );
        let b = budget(&t).unwrap().unwrap();
        assert_eq!(b.max_tokens(), 1000);
        assert_eq!(b.target_tokens(), 800);
        assert_eq!(b.output_reserve(), 100);
        assert_eq!(b.estimation_safety_margin_percent(), 10.0);
        assert_eq!(b.reserved_tokens(), 50);
    }

    #[test]
    fn budget_separates_malformed_from_invalid() {
        // Missing key: the vector is malformed.
        assert!(budget(&parse("target_tokens = 1")).is_err());
        // Wrong type in reserved_slots: malformed.
        assert!(
            budget(&parse(
                "max_tokens = 1\ntarget_tokens = 1\n[reserved_slots]\nA = \"x\"\n"
            ))
            .is_err()
        );
        // The same kind twice (ASCII case folded): malformed, not merged.
        assert_eq!(
            budget(&parse(
                "max_tokens = 9\ntarget_tokens = 9\n[reserved_slots]\nTool = 1\ntool = 2\n"
            ))
            .unwrap_err(),
            "[budget.reserved_slots]: kind `tool` is given twice (also as `Tool`)"
        );
        // target > max: a construction error of the budget.
        assert!(matches!(
            budget(&parse("max_tokens = 1\ntarget_tokens = 2")),
            Ok(Err(CupelError::TargetExceedsMax { .. }))
        ));
    }

    #[test]
    fn expected_output_absent_differs_from_empty() {
        assert_eq!(expected_output(&parse("")).unwrap(), None);
        assert_eq!(
            expected_output(&parse("expected_output = []")).unwrap(),
            Some(vec![])
        );
        assert_eq!(
            expected_output(&parse("[[expected_output]]\ncontent = \"a\"\n")).unwrap(),
            Some(vec!["a".to_string()])
        );
    }

    #[test]
    fn unknown_component_names_are_vector_failures_not_construction_errors() {
        let v = parse(
            r#"
[budget]
max_tokens = 100
target_tokens = 100
[config]
slicer = "greedy"
placer = "spiral"
[[config.scorers]]
type = "reflexive"
"#,
        );
        let e = pipeline(&v, true).unwrap_err();
        assert!(
            e.starts_with("[config].placer: unknown placer `spiral`"),
            "{e}"
        );
    }
}
