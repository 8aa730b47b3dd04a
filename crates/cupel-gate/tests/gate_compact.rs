//! The built-in compactors: idempotent, and every string literal survives.

use cupel_gate::{compact_csharp, compact_sql};
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
        // PostgreSQL escape strings: backslash escapes, `--` inside.
        "[a-z '\\\\/*-]{0,12}"
            .prop_map(|s| format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))),
    ]
}

/// A literal whose end depends on the dialect: `'a\'b'` is one literal for
/// MySQL, and `'a\'` then the start of another for standard SQL.
fn sql_ambiguous_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        ("[a-z \"/*-]{0,6}", "[a-z \"/*-]{0,6}").prop_map(|(a, b)| format!("'{a}\\'{b}'")),
        ("[a-z '/*-]{0,6}", "[a-z '/*-]{0,6}").prop_map(|(a, b)| format!("\"{a}\\\"{b}\"")),
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
        // A backslash-escaped quote with a comment marker after it.
        Just("\"a\\\"b -- c // d\"".to_string()),
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
    fn sql_compaction_is_idempotent(t in "[-/*'\"\\[\\]$a-zE@\\\\ \n\t]{0,80}") {
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
    fn sql_text_from_an_ambiguous_literal_on_is_kept_verbatim(
        parts in proptest::collection::vec(
            (sql_gap(), prop_oneof![sql_literal(), sql_ambiguous_literal()], "[a-z]{1,5}"),
            1..8,
        ),
        ambiguous in (0usize..8, sql_ambiguous_literal()),
    ) {
        let (at, ambiguous) = ambiguous;
        let mut text = String::new();
        let mut literals = Vec::new();
        let mut from = None;
        for (k, (gap, lit, word)) in parts.iter().enumerate() {
            text.push_str(word);
            text.push_str(gap);
            if k == at.min(parts.len() - 1) && from.is_none() {
                from = Some(text.len());
                text.push_str(&ambiguous);
                text.push_str(gap);
                literals.push(ambiguous.clone());
            }
            text.push_str(lit);
            text.push_str(gap);
            literals.push(lit.clone());
        }
        let out = compact_sql(&text);
        assert_in_order(&out, &literals)?;
        // The first ambiguous literal may come before the planted one; either
        // way everything from the planted one on is untouched.
        if let Some(from) = from {
            prop_assert!(out.ends_with(&text[from..]), "{:?} -> {:?}", text, out);
        }
        prop_assert!(out.len() <= text.len());
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
