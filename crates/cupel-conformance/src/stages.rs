//! Scoring, slicing and placing vectors: one component, built from the
//! vector's `[test]` name and `[config]` table, run on the vector's items.

use std::collections::BTreeSet;
use std::sync::Arc;

use cupel_core::{ContextItem, ScoredItem, Scorer, SliceBudget, Slicer};
use cupel_pipeline::{ScorerConfig, SlicerConfig};
use toml::{Table, Value};

use crate::errors::ExpectedError;
use crate::toml_util::{
    Ctx, check_scorer_names, check_slicer_names, find_by_content, float, int, items, list,
    one_line, placer_type, required_string, score_matches, scored_items, scorer_type, slicer_type,
    strings, table, tables,
};

/// The default score tolerance of the format.
pub(crate) const DEFAULT_EPSILON: f64 = 1e-9;

/// `[tolerance] score_epsilon`, or the default; must be a positive number.
pub(crate) fn epsilon(v: &Table) -> Result<f64, String> {
    let eps = match table(v, "tolerance", "vector")? {
        Some(t) => float(t, "score_epsilon", "[tolerance]")?.unwrap_or(DEFAULT_EPSILON),
        None => DEFAULT_EPSILON,
    };
    if eps > 0.0 {
        Ok(eps)
    } else {
        Err(format!(
            "[tolerance]: `score_epsilon` must be a positive number (got {eps})"
        ))
    }
}

/// Applies `expect_construction_error`: with the flag, building must fail
/// (`Ok(None)`: the vector passed); without it, a construction error fails the vector.
pub(crate) fn construction<T>(
    built: Result<T, String>,
    expect_error: bool,
    what: &str,
) -> Result<Option<T>, String> {
    match (built, expect_error) {
        (Ok(c), false) => Ok(Some(c)),
        (Err(e), false) => Err(format!("building the {what} failed: {e}")),
        (Err(_), true) => Ok(None),
        (Ok(_), true) => Err(format!(
            "expected a construction error, but the {what} was built"
        )),
    }
}

/// Builds a scorer from a scorer table (`type` plus that type's keys).
pub(crate) fn build_scorer(config: Table) -> Result<Arc<dyn Scorer>, String> {
    let cfg: ScorerConfig = config
        .try_into()
        .map_err(|e| format!("invalid scorer configuration: {}", one_line(&e.to_string())))?;
    cfg.build().map_err(|e| e.to_string())
}

/// Builds a slicer from a slicer table (`slicer` plus that slicer's keys).
pub(crate) fn build_slicer(config: Table) -> Result<Arc<dyn Slicer>, String> {
    let cfg: SlicerConfig = config
        .try_into()
        .map_err(|e| format!("invalid slicer configuration: {}", one_line(&e.to_string())))?;
    cfg.build().map_err(|e| e.to_string())
}

/// A scoring vector: every `[[expected]]` item's score, computed both with
/// `Scorer::score` and `Scorer::score_all` against the whole item list, must be
/// within epsilon.
pub(crate) fn scoring(
    v: &Table,
    test: &Table,
    expect_construction_error: bool,
) -> Result<(), String> {
    let name = required_string(test, "scorer", "[test]")?;
    let kind = scorer_type(name, "[test].scorer")?;
    let mut config = table(v, "config", "vector")?.cloned().unwrap_or_default();
    config.remove("type");
    check_scorer_names(&config, "[config]")?;
    config.insert("type".into(), Value::String(kind.as_str().into()));
    let Some(scorer) = construction(build_scorer(config), expect_construction_error, "scorer")?
    else {
        return Ok(());
    };

    let items = items(v, "items")?;
    let eps = epsilon(v)?;
    let refs: Vec<&ContextItem> = items.iter().collect();
    if let Some(query) = query(v)? {
        return scoring_with_query(v, test, &*scorer, &items, &query, eps);
    }
    let all = scorer.score_all(&refs);
    if all.len() != refs.len() {
        return Err(format!(
            "score_all returned {} scores for {} items",
            all.len(),
            refs.len()
        ));
    }
    let mut diffs = Vec::new();
    for (i, e) in tables(v, "expected", "vector")?.into_iter().enumerate() {
        let ctx = format!("expected[{i}]");
        let content = required_string(e, "content", &ctx)?;
        let want = float(e, "score_approx", &ctx)?
            .ok_or_else(|| format!("{ctx}: missing `score_approx`"))?;
        let idx = find_by_content(&items, content)
            .ok_or_else(|| format!("{ctx}: no item has content {content:?}"))?;
        let one = scorer.score(idx, &refs);
        let batch = all.get(idx).copied().unwrap_or(f64::NAN);
        if !score_matches(one, want, eps) {
            diffs.push(format!(
                "score of {content:?}: expected {want}, actual {one} (epsilon {eps})"
            ));
        }
        if !score_matches(batch, want, eps) {
            diffs.push(format!(
                "score_all of {content:?}: expected {want}, actual {batch} (epsilon {eps})"
            ));
        }
    }
    verdict(diffs)
}

/// The vector's `[query]` (`text`, default empty, and `embedding`, an
/// array of numbers), if it has one (an extension for relevance scorers,
/// `spec/23-relevance.md`).
fn query(v: &Table) -> Result<Option<cupel_core::Query>, String> {
    let Some(t) = table(v, "query", "vector")? else {
        return Ok(None);
    };
    let text = crate::toml_util::string(t, "text", "[query]")?.unwrap_or("");
    let q = cupel_core::Query::new(text);
    match t.get("embedding") {
        None => Ok(Some(q)),
        Some(e) => {
            let e: Vec<f32> = e
                .clone()
                .try_into()
                .map_err(|e| format!("[query].embedding: {}", one_line(&e.to_string())))?;
            Ok(Some(q.with_embedding(e)))
        }
    }
}

/// A scoring vector with a `[query]`: the scores of
/// `Scorer::try_score_all_in` in that query's context (the one-item
/// `score` has no context). With `[test] expect_score_error = "<kind>"`
/// scoring must fail with that error (its variant name, compared as the
/// format compares names).
fn scoring_with_query(
    v: &Table,
    test: &Table,
    scorer: &dyn Scorer,
    items: &[ContextItem],
    query: &cupel_core::Query,
    eps: f64,
) -> Result<(), String> {
    let refs: Vec<&ContextItem> = items.iter().collect();
    let cx = cupel_core::ScoreContext::new().query(Some(query));
    let expected_error = crate::toml_util::string(test, "expect_score_error", "[test]")?;
    let all = match (scorer.try_score_all_in(&refs, &cx), expected_error) {
        (Ok(all), None) => all,
        (Err(e), None) => return Err(format!("scoring failed: {e}")),
        (Err(e), Some(want)) => {
            let got = format!("{e:?}");
            let got = got.split([' ', '(', '{']).next().unwrap_or("");
            return if crate::toml_util::normalise(got) == crate::toml_util::normalise(want) {
                Ok(())
            } else {
                Err(format!("expected a {want} error, got {e}"))
            };
        }
        (Ok(_), Some(want)) => return Err(format!("expected a {want} error, scoring succeeded")),
    };
    let mut diffs = Vec::new();
    for (i, e) in tables(v, "expected", "vector")?.into_iter().enumerate() {
        let ctx = format!("expected[{i}]");
        let content = required_string(e, "content", &ctx)?;
        let want = float(e, "score_approx", &ctx)?
            .ok_or_else(|| format!("{ctx}: missing `score_approx`"))?;
        let idx = find_by_content(items, content)
            .ok_or_else(|| format!("{ctx}: no item has content {content:?}"))?;
        let got = all.get(idx).copied().unwrap_or(f64::NAN);
        if !score_matches(got, want, eps) {
            diffs.push(format!(
                "score_all_in of {content:?}: expected {want}, actual {got} (epsilon {eps})"
            ));
        }
    }
    verdict(diffs)
}

/// A slicing vector: the set of selected contents, and for count slicers the
/// shortfall and cap-exclusion counts the slicer reported.
pub(crate) fn slicing(
    v: &Table,
    test: &Table,
    expect_construction_error: bool,
) -> Result<(), String> {
    let name = required_string(test, "slicer", "[test]")?;
    let kind = slicer_type(name, "[test].slicer")?;
    let mut config = table(v, "config", "vector")?.cloned().unwrap_or_default();
    config.remove("slicer");
    check_slicer_names(&config, "[config]")?;
    config.insert("slicer".into(), Value::String(kind.as_str().into()));
    let Some(slicer) = construction(build_slicer(config), expect_construction_error, "slicer")?
    else {
        return Ok(());
    };

    let budget = table(v, "budget", "vector")?.ok_or("missing [budget] table")?;
    let target =
        int(budget, "target_tokens", "[budget]")?.ok_or("[budget]: missing `target_tokens`")?;
    let max = int(budget, "max_tokens", "[budget]")?.unwrap_or(target);
    let scored = scored_items(v, "scored_items")?;
    let input: Vec<ScoredItem<'_>> = scored
        .iter()
        .map(|(item, score)| ScoredItem::new(item, *score))
        .collect();
    let expected = table(v, "expected", "vector")?;
    let expect_error = ExpectedError::from_expected(expected)?;

    let result = slicer.slice(&input, SliceBudget::new(max, target));
    let outcome = match (result, expect_error) {
        (Err(e), Some(want)) if want.matches(&e) => return Ok(()),
        (Err(e), Some(want)) => {
            return Err(format!(
                "expected error `{}`, actual error: {e}",
                want.name()
            ));
        }
        (Ok(o), Some(want)) => {
            return Err(format!(
                "expected error `{}`, but the slicer selected {}",
                want.name(),
                list(&contents_at(&scored, &o.selected, "selected")?)
            ));
        }
        (Err(e), None) => return Err(format!("the slicer failed: {e}")),
        (Ok(o), None) => o,
    };

    let expected = expected.ok_or("missing [expected] table")?;
    let want: BTreeSet<String> = strings(expected, "selected_contents", "[expected]")?
        .ok_or("[expected]: missing `selected_contents`")?
        .into_iter()
        .collect();
    let mut seen = BTreeSet::new();
    if let Some(dup) = outcome.selected.iter().find(|i| !seen.insert(**i)) {
        return Err(format!(
            "the slicer returned index {dup} more than once: {:?}",
            outcome.selected
        ));
    }
    let got: BTreeSet<String> = contents_at(&scored, &outcome.selected, "selected")?
        .into_iter()
        .collect();
    let mut diffs = Vec::new();
    if want != got {
        let missing: Vec<&String> = want.difference(&got).collect();
        let extra: Vec<&String> = got.difference(&want).collect();
        diffs.push(format!(
            "selected contents: expected {}, actual {} (missing {}, unexpected {})",
            list(&want.iter().collect::<Vec<_>>()),
            list(&got.iter().collect::<Vec<_>>()),
            list(&missing),
            list(&extra)
        ));
    }
    let counts = [
        ("shortfall_count", outcome.shortfalls.len()),
        ("cap_excluded_count", outcome.cap_exclusions.len()),
    ];
    for (key, actual) in counts {
        if let Some(want) = int(expected, key, "[expected]")?
            && i128::from(want) != actual as i128
        {
            diffs.push(format!("{key}: expected {want}, actual {actual}"));
        }
    }
    verdict(diffs)
}

/// A placing vector: the placer's order of `[[items]]` (with their `score`s)
/// must equal `[expected] ordered_contents`.
pub(crate) fn placing(
    v: &Table,
    test: &Table,
    expect_construction_error: bool,
) -> Result<(), String> {
    let name = required_string(test, "placer", "[test]")?;
    let kind = placer_type(name, "[test].placer")?;
    // Placers take no configuration, so building one cannot fail.
    let Some(placer) = construction(Ok(kind.build()), expect_construction_error, "placer")? else {
        return Ok(());
    };
    let scored = scored_items(v, "items")?;
    let input: Vec<ScoredItem<'_>> = scored
        .iter()
        .map(|(item, score)| ScoredItem::new(item, *score))
        .collect();
    let expected = table(v, "expected", "vector")?.ok_or("missing [expected] table")?;
    let want = strings(expected, "ordered_contents", "[expected]")?
        .ok_or("[expected]: missing `ordered_contents`")?;

    let order = placer.place(&input);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if sorted != (0..input.len()).collect::<Vec<_>>() {
        return Err(format!(
            "the placer did not return a permutation of 0..{}: {order:?}",
            input.len()
        ));
    }
    let got = contents_at(&scored, &order, "placed")?;
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "placed order: expected {}, actual {}",
            list(&want),
            list(&got)
        ))
    }
}

/// The contents at `indices`, failing on an index out of range.
fn contents_at(
    scored: &[(ContextItem, f64)],
    indices: &[usize],
    what: Ctx<'_>,
) -> Result<Vec<String>, String> {
    indices
        .iter()
        .map(|&i| {
            scored
                .get(i)
                .map(|(item, _)| item.content().to_string())
                .ok_or_else(|| {
                    format!(
                        "{what} index {i} is out of range for {} items",
                        scored.len()
                    )
                })
        })
        .collect()
}

/// `Ok` when nothing differed, else every difference in one message.
pub(crate) fn verdict(diffs: Vec<String>) -> Result<(), String> {
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Table {
        s.parse::<Table>().unwrap()
    }

    #[test]
    fn epsilon_defaults_and_validates() {
        assert_eq!(epsilon(&parse("")), Ok(1e-9));
        assert_eq!(
            epsilon(&parse("[tolerance]\nscore_epsilon = 1e-6\n")),
            Ok(1e-6)
        );
        assert!(epsilon(&parse("[tolerance]\nscore_epsilon = 0.0\n")).is_err());
        assert!(epsilon(&parse("[tolerance]\nscore_epsilon = nan\n")).is_err());
    }

    #[test]
    fn construction_flag_inverts_the_outcome() {
        assert_eq!(construction::<u8>(Ok(1), false, "x"), Ok(Some(1)));
        assert_eq!(construction::<u8>(Err("bad".into()), true, "x"), Ok(None));
        assert_eq!(
            construction::<u8>(Ok(1), true, "scorer"),
            Err("expected a construction error, but the scorer was built".into())
        );
        assert_eq!(
            construction::<u8>(Err("bad".into()), false, "scorer"),
            Err("building the scorer failed: bad".into())
        );
    }

    #[test]
    fn scorer_config_reads_composite_children_from_scorers() {
        // [[config.scorers]] (alias of `children`) with a nested
        // [[config.scorers.children]]: reflexive 1 + composite(reflexive) 1.
        let config = parse(
            r#"
type = "composite"
[[scorers]]
type = "reflexive"
weight = 1.0
[[scorers]]
type = "composite"
weight = 1.0
[[scorers.children]]
type = "reflexive"
weight = 2.0
"#,
        );
        let scorer = build_scorer(config).unwrap();
        let item = ContextItem::builder("a", 1)
            .future_relevance_hint(0.5)
            .build()
            .unwrap();
        // (0.5 * 1 + 0.5 * 1) / 2 = 0.5
        assert!((scorer.score(0, &[&item]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn scorer_config_reads_a_toml_reference_time() {
        // One half-life (1 day) before the reference time: 2^-1 = 0.5.
        let config = parse(
            r#"
type = "decay"
reference_time = 2025-01-02T00:00Z
[curve]
type = "exponential"
half_life_secs = 86400
"#,
        );
        let scorer = build_scorer(config).unwrap();
        let item = ContextItem::builder("a", 1)
            .timestamp(cupel_core::parse_timestamp("2025-01-01T00:00:00Z").unwrap())
            .build()
            .unwrap();
        assert!((scorer.score(0, &[&item]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn unknown_keys_are_ignored_in_component_configs() {
        assert!(build_scorer(parse("type = \"priority\"\nfuture_key = 3\n")).is_ok());
        assert!(
            build_slicer(parse(
                "slicer = \"knapsack\"\nbucket_size = 10\nfancy = true\n"
            ))
            .is_ok()
        );
    }

    #[test]
    fn slicing_reports_set_differences() {
        let v = parse(
            r#"
[test]
name = "t"
stage = "slicing"
slicer = "greedy"
[budget]
target_tokens = 10
[[scored_items]]
content = "a"
tokens = 10
score = 0.9
[[scored_items]]
content = "b"
tokens = 10
score = 0.1
[expected]
selected_contents = ["b"]
"#,
        );
        let test = v["test"].as_table().unwrap();
        // Greedy: a (density 0.09) fills the 10-token target; b does not fit.
        let e = slicing(&v, test, false).unwrap_err();
        assert_eq!(
            e,
            "selected contents: expected [\"b\"], actual [\"a\"] (missing [\"b\"], unexpected [\"a\"])"
        );
    }

    #[test]
    fn contents_at_rejects_out_of_range_indices() {
        let scored = vec![(ContextItem::new("a", 1).unwrap(), 0.5)];
        assert_eq!(contents_at(&scored, &[0], "x").unwrap(), ["a"]);
        assert!(contents_at(&scored, &[1], "x").is_err());
    }
}
