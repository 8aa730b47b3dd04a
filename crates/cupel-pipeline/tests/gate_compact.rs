//! The built-in compactors: idempotent, and every string literal survives.

use cupel_pipeline::{compact_csharp, compact_sql};
use proptest::prelude::*;

/// Separators that compaction may rewrite (whitespace and comments).
fn sql_gap() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(" "),
        Just("\n    "),
        Just(" /* XNOTE */ "),
        Just(" -- XNOTE\n"),
        Just("\t\n\n ")
    ]
}

fn csharp_gap() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(" "),
        Just("\n    "),
        Just(" /* XNOTE */ "),
        Just(" // XNOTE\n"),
        Just("\t\n\n ")
    ]
}

fn sql_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z '/*-]{0,12}".prop_map(|s| format!("'{}'", s.replace('\'', "''"))),
        "[a-z '/*-]{0,12}".prop_map(|s| format!("N'{}'", s.replace('\'', "''"))),
        "[a-z \"/*-]{0,12}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
        "[a-z \\]/*-]{0,12}".prop_map(|s| format!("[{}]", s.replace(']', "]]"))),
        "[a-z '/*-]{0,12}".prop_map(|s| format!("$$ {s} $$")),
    ]
}

fn csharp_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z \"/*\\\\]{0,12}"
            .prop_map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))),
        "[a-z \"/*\n\\\\]{0,12}".prop_map(|s| format!("@\"{}\"", s.replace('"', "\"\""))),
        ("[a-z /*]{0,6}", "[a-z]{1,4}", "[a-z /*]{0,6}")
            .prop_map(|(a, x, b)| format!("$\"{a}{{{x}}}{b}{{\"{b}\"}}\"")),
        "[a-z \"/*\n]{0,12}"
            .prop_map(|s| format!("\"\"\"\n{}\n\"\"\"", s.replace("\"\"", "\" \""))),
        prop_oneof![Just("'a'"), Just("'\\''"), Just("'\"'"), Just("'/'")].prop_map(String::from),
    ]
}

/// Asserts that `literals` appear in `out` in order, each byte for byte.
fn assert_in_order(out: &str, literals: &[String]) -> Result<(), TestCaseError> {
    let mut from = 0;
    for lit in literals {
        match out[from..].find(lit.as_str()) {
            Some(p) => from += p + lit.len(),
            None => {
                return Err(TestCaseError::fail(format!("{lit:?} missing from {out:?}")));
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn sql_compaction_is_idempotent(t in "[-/*'\"\\[\\]$a-z@ \n\t]{0,80}") {
        let once = compact_sql(&t);
        prop_assert_eq!(compact_sql(&once), once);
    }

    #[test]
    fn csharp_compaction_is_idempotent(t in "[-/*'\"\\\\{}$@#a-z \n\t]{0,80}") {
        let once = compact_csharp(&t);
        prop_assert_eq!(compact_csharp(&once), once);
    }

    #[test]
    fn compaction_never_panics_on_arbitrary_text(t in any::<String>()) {
        let _ = compact_sql(&t);
        let _ = compact_csharp(&t);
    }

    #[test]
    fn sql_string_literals_survive(parts in proptest::collection::vec((sql_gap(), sql_literal(), "[a-z]{1,5}"), 1..8)) {
        let mut text = String::new();
        let mut literals = Vec::new();
        for (gap, lit, word) in &parts {
            text.push_str(word);
            text.push_str(gap);
            text.push_str(lit);
            text.push_str(gap);
            literals.push(lit.clone());
        }
        let out = compact_sql(&text);
        assert_in_order(&out, &literals)?;
        prop_assert!(!out.contains("XNOTE"), "comments removed: {:?}", out);
        prop_assert_eq!(compact_sql(&out), out.clone());
    }

    #[test]
    fn csharp_string_literals_survive(parts in proptest::collection::vec((csharp_gap(), csharp_literal(), "[a-z]{1,5}"), 1..8)) {
        let mut text = String::new();
        let mut literals = Vec::new();
        for (gap, lit, word) in &parts {
            text.push_str(word);
            text.push_str(" = ");
            text.push_str(lit);
            text.push(';');
            text.push_str(gap);
            literals.push(lit.clone());
        }
        let out = compact_csharp(&text);
        assert_in_order(&out, &literals)?;
        prop_assert!(!out.contains("XNOTE"), "comments removed: {:?}", out);
        prop_assert_eq!(compact_csharp(&out), out.clone());
    }
}
