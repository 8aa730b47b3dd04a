//! Typed access to a parsed vector: tables, scalars, items, component names.
//!
//! Every accessor returns `Err(message)` for a value of the wrong type and
//! treats an absent key as "not given"; unknown keys are never looked at.

use cupel_core::ContextItem;
use cupel_pipeline::{PlacerType, ScorerType, SlicerType};
use toml::{Table, Value};

/// Where a value sits, for messages: `"[config]"`, `"items[2]"`.
pub(crate) type Ctx<'a> = &'a str;

/// `t[key]` as a table, if present.
pub(crate) fn table<'a>(
    t: &'a Table,
    key: &str,
    ctx: Ctx<'_>,
) -> Result<Option<&'a Table>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Table(inner)) => Ok(Some(inner)),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be a table, found {}",
            other.type_str()
        )),
    }
}

/// `t[key]` as an array of tables; absent means empty.
pub(crate) fn tables<'a>(t: &'a Table, key: &str, ctx: Ctx<'_>) -> Result<Vec<&'a Table>, String> {
    match t.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::Table(inner) => Ok(inner),
                other => Err(format!(
                    "{ctx}: `{key}[{i}]` must be a table, found {}",
                    other.type_str()
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be an array of tables, found {}",
            other.type_str()
        )),
    }
}

/// `t[key]` as a string, if present.
pub(crate) fn string<'a>(t: &'a Table, key: &str, ctx: Ctx<'_>) -> Result<Option<&'a str>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be a string, found {}",
            other.type_str()
        )),
    }
}

/// `t[key]` as a string; absent is an error.
pub(crate) fn required_string<'a>(
    t: &'a Table,
    key: &str,
    ctx: Ctx<'_>,
) -> Result<&'a str, String> {
    string(t, key, ctx)?.ok_or_else(|| format!("{ctx}: missing `{key}`"))
}

/// `t[key]` as an integer, if present.
pub(crate) fn int(t: &Table, key: &str, ctx: Ctx<'_>) -> Result<Option<i64>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Integer(i)) => Ok(Some(*i)),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be an integer, found {}",
            other.type_str()
        )),
    }
}

/// `t[key]` as a float (an integer is accepted and converted), if present.
pub(crate) fn float(t: &Table, key: &str, ctx: Ctx<'_>) -> Result<Option<f64>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Float(f)) => Ok(Some(*f)),
        // Vectors may write `1` for `1.0`.
        Some(Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be a number, found {}",
            other.type_str()
        )),
    }
}

/// `t[key]` as a boolean, if present.
pub(crate) fn boolean(t: &Table, key: &str, ctx: Ctx<'_>) -> Result<Option<bool>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(*b)),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be a boolean, found {}",
            other.type_str()
        )),
    }
}

/// `t[key]` as an array of strings; `None` when absent.
pub(crate) fn strings(t: &Table, key: &str, ctx: Ctx<'_>) -> Result<Option<Vec<String>>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "{ctx}: `{key}[{i}]` must be a string, found {}",
                    other.type_str()
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "{ctx}: `{key}` must be an array of strings, found {}",
            other.type_str()
        )),
    }
}

/// Deserialises one item table as a [`ContextItem`] (unknown keys such as
/// `score` are ignored; `futureRelevanceHint`, `originalTokens`, `metadata`
/// and native TOML datetimes are understood by `cupel-core`'s serde support).
pub(crate) fn item(t: &Table, ctx: Ctx<'_>) -> Result<ContextItem, String> {
    t.clone().try_into::<ContextItem>().map_err(|e| {
        let content = t
            .get("content")
            .and_then(Value::as_str)
            .map(|c| format!(" (content {c:?})"))
            .unwrap_or_default();
        format!("{ctx}{content}: invalid item: {}", one_line(&e.to_string()))
    })
}

/// Every `[[key]]` table as an item; absent means no items.
pub(crate) fn items(v: &Table, key: &str) -> Result<Vec<ContextItem>, String> {
    tables(v, key, "vector")?
        .into_iter()
        .enumerate()
        .map(|(i, t)| item(t, &format!("{key}[{i}]")))
        .collect()
}

/// Every `[[key]]` table as an item plus its required `score`.
pub(crate) fn scored_items(v: &Table, key: &str) -> Result<Vec<(ContextItem, f64)>, String> {
    tables(v, key, "vector")?
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let ctx = format!("{key}[{i}]");
            let score =
                float(t, "score", &ctx)?.ok_or_else(|| format!("{ctx}: missing `score`"))?;
            Ok((item(t, &ctx)?, score))
        })
        .collect()
}

/// The index of the first item whose content is `content`.
pub(crate) fn find_by_content(items: &[ContextItem], content: &str) -> Option<usize> {
    items.iter().position(|i| i.content() == content)
}

/// Collapses a multi-line error (the `toml` crate draws source snippets) into one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lowercases and drops `_`, `-` and spaces, so `count_requirement_not_met`,
/// `CountRequirementNotMet` and `count-requirement-not-met` compare equal.
pub(crate) fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Checks every component name a configuration table mentions, so that an
/// unknown name is reported as such (and never counted as an expected
/// construction error). Walks `type`, `children` / `scorers` and
/// `inner_scorer` of scorer tables.
pub(crate) fn check_scorer_names(t: &Table, ctx: Ctx<'_>) -> Result<(), String> {
    if let Some(name) = string(t, "type", ctx)? {
        scorer_type(name, ctx)?;
    }
    for key in ["children", "scorers"] {
        for (i, child) in tables(t, key, ctx)?.into_iter().enumerate() {
            check_scorer_names(child, &format!("{ctx}.{key}[{i}]"))?;
        }
    }
    match t.get("inner_scorer") {
        Some(Value::String(name)) => {
            scorer_type(name, &format!("{ctx}.inner_scorer"))?;
        }
        Some(Value::Table(inner)) => check_scorer_names(inner, &format!("{ctx}.inner_scorer"))?,
        _ => {}
    }
    Ok(())
}

/// Checks `slicer` and `inner_slicer` of a slicer (or policy) table.
pub(crate) fn check_slicer_names(t: &Table, ctx: Ctx<'_>) -> Result<(), String> {
    for key in ["slicer", "inner_slicer"] {
        if let Some(name) = string(t, key, ctx)? {
            slicer_type(name, &format!("{ctx}.{key}"))?;
        }
    }
    Ok(())
}

/// A scorer name, or a failure message listing the known ones.
pub(crate) fn scorer_type(name: &str, ctx: Ctx<'_>) -> Result<ScorerType, String> {
    ScorerType::from_name(name).ok_or_else(|| {
        format!(
            "{ctx}: unknown scorer `{name}` (known: {})",
            ScorerType::expected()
        )
    })
}

/// A slicer name, or a failure message listing the known ones.
pub(crate) fn slicer_type(name: &str, ctx: Ctx<'_>) -> Result<SlicerType, String> {
    SlicerType::from_name(name).ok_or_else(|| {
        format!(
            "{ctx}: unknown slicer `{name}` (known: {})",
            SlicerType::expected()
        )
    })
}

/// A placer name, or a failure message listing the known ones.
pub(crate) fn placer_type(name: &str, ctx: Ctx<'_>) -> Result<PlacerType, String> {
    PlacerType::from_name(name).ok_or_else(|| {
        format!(
            "{ctx}: unknown placer `{name}` (known: {})",
            PlacerType::expected()
        )
    })
}

/// Two scores match when `|actual - expected| < epsilon`, or both are NaN.
pub(crate) fn score_matches(actual: f64, expected: f64, epsilon: f64) -> bool {
    (actual.is_nan() && expected.is_nan()) || (actual - expected).abs() < epsilon
}

/// `[a, b]` with Debug-quoted strings, for messages.
pub(crate) fn list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{:?}", s.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Table {
        s.parse::<Table>().unwrap()
    }

    #[test]
    fn accessors_distinguish_absent_and_mistyped() {
        let t = parse("a = 1\nb = \"x\"\nc = 2.5\nd = true\ne = [\"p\", \"q\"]\n[f]\ng = 1\n");
        assert_eq!(int(&t, "a", "t"), Ok(Some(1)));
        assert_eq!(int(&t, "zz", "t"), Ok(None));
        assert_eq!(
            int(&t, "b", "t"),
            Err("t: `b` must be an integer, found string".to_string())
        );
        // An integer where a float is expected is accepted.
        assert_eq!(float(&t, "a", "t"), Ok(Some(1.0)));
        assert_eq!(float(&t, "c", "t"), Ok(Some(2.5)));
        assert_eq!(boolean(&t, "d", "t"), Ok(Some(true)));
        assert_eq!(
            strings(&t, "e", "t"),
            Ok(Some(vec!["p".into(), "q".into()]))
        );
        assert!(table(&t, "f", "t").unwrap().is_some());
        assert!(table(&t, "a", "t").is_err());
        assert_eq!(tables(&t, "nothing", "t").unwrap().len(), 0);
        assert_eq!(
            required_string(&t, "zz", "[test]"),
            Err("[test]: missing `zz`".into())
        );
    }

    #[test]
    fn items_read_toml_11_datetimes_camel_case_and_metadata() {
        let v = parse(
            r#"
[[items]]
content = "a"
tokens = 10
timestamp = 2024-01-01T00:00Z
futureRelevanceHint = 0.25
originalTokens = 12
metadata = { "cupel:trust" = "0.85" }
tags = ["x"]
some_future_key = 1

[[items]]
content = "b"
tokens = 5
timestamp = 2024-01-01T02:00:00+02:00
"#,
        );
        let items = items(&v, "items").unwrap();
        assert_eq!(items.len(), 2);
        let a = &items[0];
        assert_eq!(a.future_relevance_hint(), Some(0.25));
        assert_eq!(a.original_tokens(), Some(12));
        assert_eq!(
            a.metadata().get("cupel:trust").map(String::as_str),
            Some("0.85")
        );
        assert_eq!(a.tags(), ["x".to_string()]);
        // 2024-01-01T02:00+02:00 is the same instant as 2024-01-01T00:00Z.
        assert_eq!(a.timestamp(), items[1].timestamp());
        assert!(a.timestamp().is_some());
    }

    #[test]
    fn an_invalid_item_names_its_position_and_content() {
        let v = parse("[[items]]\ncontent = \"a\"\ntokens = \"ten\"\n");
        let e = items(&v, "items").unwrap_err();
        assert!(
            e.starts_with("items[0] (content \"a\"): invalid item:"),
            "{e}"
        );
        let v = parse("[[items]]\ncontent = \"\"\ntokens = 1\n");
        assert!(items(&v, "items").is_err());
    }

    #[test]
    fn scored_items_require_a_score() {
        let v = parse("[[scored_items]]\ncontent = \"a\"\ntokens = 1\nscore = 1\n");
        let got = scored_items(&v, "scored_items").unwrap();
        assert_eq!(got[0].1, 1.0);
        let v = parse("[[scored_items]]\ncontent = \"a\"\ntokens = 1\n");
        assert_eq!(
            scored_items(&v, "scored_items").unwrap_err(),
            "scored_items[0]: missing `score`"
        );
    }

    #[test]
    fn find_by_content_takes_the_first_match() {
        let items = vec![
            ContextItem::new("x", 1).unwrap(),
            ContextItem::new("y", 2).unwrap(),
            ContextItem::new("y", 3).unwrap(),
        ];
        assert_eq!(find_by_content(&items, "y"), Some(1));
        assert_eq!(find_by_content(&items, "z"), None);
    }

    #[test]
    fn names_are_normalised_and_checked() {
        assert_eq!(
            normalise("Count_Requirement-Not Met"),
            "countrequirementnotmet"
        );
        let t = parse(
            "type = \"composite\"\n[[scorers]]\ntype = \"scaled\"\ninner_scorer = \"bogus\"\n",
        );
        let e = check_scorer_names(&t, "[config]").unwrap_err();
        assert!(
            e.starts_with("[config].scorers[0].inner_scorer: unknown scorer `bogus`"),
            "{e}"
        );
        let t = parse("slicer = \"quota\"\ninner_slicer = \"GreedySlice\"\n");
        assert!(check_slicer_names(&t, "[config]").is_ok());
        let t = parse("slicer = \"fancy\"\n");
        assert!(check_slicer_names(&t, "[config]").is_err());
        assert!(placer_type("u-shaped", "p").is_ok());
        assert!(placer_type("spiral", "p").is_err());
    }

    #[test]
    fn score_matching_is_strict_less_than_epsilon() {
        assert!(score_matches(0.5, 0.5 + 1e-10, 1e-9));
        assert!(!score_matches(0.5, 0.5 + 1e-9 * 2.0, 1e-9));
        assert!(!score_matches(0.0, 1e-9, 1e-9)); // |diff| == eps fails
        assert!(score_matches(f64::NAN, f64::NAN, 1e-9));
        assert!(!score_matches(f64::NAN, 0.0, 1e-9));
    }
}
