//! [`compact_csharp`]: comments and redundant whitespace out, literals untouched.

use super::{Emitter, doubled_quote_end, line_end, space_run};

/// Compacts C# source.
///
/// Removed: `//` and `///` comments, `/* block */` comments, indentation,
/// trailing spaces, blank lines and runs of spaces. Copied byte for byte:
/// regular `"..."` strings (backslash escapes), verbatim `@"..."` strings
/// (`""` escapes), raw `"""..."""` strings (any number of quotes ≥ 3),
/// interpolated `$"..."`, `$@"..."`/`@$"..."` and `$$"""..."""` strings —
/// holes included, even when they contain strings of their own — and char
/// literals (`'"'`, `'\''`). A preprocessor directive (`#if`, `#region`, ...)
/// keeps its whole line, only trailing spaces trimmed. A comment counts as
/// whitespace, so no two tokens are ever glued together.
///
/// ```
/// use cupel_gate::compact_csharp;
/// let t = "/// <summary>Repo</summary>\npublic class Repo\n{\n    // the query\n    const string Sql = @\"SELECT *\n      FROM  t -- all\";\n}\n";
/// assert_eq!(
///     compact_csharp(t),
///     "public class Repo\n{\nconst string Sql = @\"SELECT *\n      FROM  t -- all\";\n}"
/// );
/// ```
pub fn compact_csharp(text: &str) -> String {
    let b = text.as_bytes();
    let mut e = Emitter::new(text.len());
    let mut i = 0;
    // Only whitespace since the last line break (or the start of the text).
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if super::is_space(c) {
            let (end, newline) = space_run(b, i);
            e.gap(newline);
            line_start |= newline;
            i = end;
            continue;
        }
        // Comments are transparent to "start of line": they vanish from the
        // output, so a `#` after them must be read the same way in both passes.
        if c == b'/' && next == Some(b'/') {
            e.gap(false);
            i = line_end(b, i);
            continue;
        }
        if c == b'/' && next == Some(b'*') {
            let end = b[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(b.len(), |p| i + 2 + p + 2);
            let newline = b[i..end].contains(&b'\n');
            e.gap(newline);
            line_start |= newline;
            i = end;
            continue;
        }
        let was_line_start = std::mem::replace(&mut line_start, false);
        let end = match c {
            b'#' if was_line_start => {
                let mut end = line_end(b, i);
                while end > i && super::is_space(b[end - 1]) {
                    end -= 1;
                }
                end
            }
            b'"' | b'\'' | b'@' | b'$' => match literal_end(b, i) {
                Ok(end) => end,
                // Not a literal: pass over it (a `$` run whole) and the
                // ordinary bytes after it.
                Err(end) => other_end(b, end),
            },
            _ => other_end(b, i),
        };
        e.keep(&text[i..end]);
        i = end;
    }
    e.finish()
}

/// What starts at a quote-like byte (`"`, `'`, `@`, `$`).
enum Opening {
    /// A literal whose end is already known (char literal, raw string,
    /// verbatim string): its exclusive end.
    Closed(usize),
    /// A regular or interpolated string whose body starts at `body` (just
    /// after the opening quote); holes are scanned by [`literal_end`].
    Open {
        body: usize,
        interp: bool,
        verbatim: bool,
    },
    /// Not a literal (`@name`, a run of `$` not followed by a quote): ordinary
    /// bytes up to this exclusive end. For `$` this is the end of the whole
    /// run, so a long run is passed over once, not once per `$`.
    NotLiteral(usize),
}

/// Classifies the literal (or non-literal) starting at `i`. Constant work
/// except for raw strings and `$` runs, which are each scanned once.
fn opening(b: &[u8], i: usize) -> Opening {
    match b[i] {
        b'\'' => Opening::Closed(escaped_end(b, i + 1, b'\'')),
        b'"' => string_opening(b, i, false, false),
        b'@' => match (b.get(i + 1), b.get(i + 2)) {
            (Some(b'"'), _) => Opening::Closed(doubled_quote_end(b, i + 1, b'"')),
            (Some(b'$'), Some(b'"')) => string_opening(b, i + 2, true, true),
            _ => Opening::NotLiteral(i + 1),
        },
        b'$' => {
            let run = i + b[i..].iter().take_while(|&&c| c == b'$').count();
            let (quote, verbatim) = if b.get(run) == Some(&b'@') {
                (run + 1, true)
            } else {
                (run, false)
            };
            if b.get(quote) == Some(&b'"') {
                string_opening(b, quote, true, verbatim)
            } else {
                Opening::NotLiteral(run)
            }
        }
        _ => Opening::NotLiteral(i + 1),
    }
}

/// The opening of a string whose first quote is at `q`: raw strings (three or
/// more quotes) are closed at once, others are scanned by [`literal_end`].
fn string_opening(b: &[u8], q: usize, interp: bool, verbatim: bool) -> Opening {
    let quotes = b[q..].iter().take_while(|&&c| c == b'"').count();
    if quotes >= 3 {
        // Raw string: ends at the first run of at least as many quotes. Its
        // holes (if interpolated) cannot contain that many quotes in a row.
        return Opening::Closed(raw_string_end(b, q + quotes, quotes));
    }
    Opening::Open {
        body: q + 1,
        interp,
        verbatim,
    }
}

/// End of a raw string body starting at `body`, closed by `quotes` quotes:
/// the first run of at least `quotes` quotes closes it after its first
/// `quotes`. One pass over the body (runs are skipped whole).
fn raw_string_end(b: &[u8], body: usize, quotes: usize) -> usize {
    let mut j = body;
    while j < b.len() {
        if b[j] == b'"' {
            let run = b[j..].iter().take_while(|&&c| c == b'"').count();
            if run >= quotes {
                return j + quotes;
            }
            j += run;
        } else {
            j += 1;
        }
    }
    b.len()
}

/// One level of nesting while scanning a string: a string body, or an
/// interpolation hole with its own brace depth.
enum Frame {
    Str { interp: bool, verbatim: bool },
    Hole { depth: usize },
}

/// End (exclusive) of the string or char literal starting at `i`, or `None`
/// if `i` does not start one (`@name`, a lone `$`): then the end of the
/// ordinary bytes to pass over.
///
/// Interpolated strings nest (`$"{ $"{ ... }" }"`) as deep as the input
/// likes, so the nesting lives in an explicit stack on the heap, never on the
/// call stack: hostile input costs memory proportional to its size, never a
/// stack overflow. Every byte is visited once: linear time.
fn literal_end(b: &[u8], i: usize) -> Result<usize, usize> {
    let (mut frames, mut j) = match opening(b, i) {
        Opening::Closed(end) => return Ok(end),
        Opening::NotLiteral(end) => return Err(end),
        Opening::Open {
            body,
            interp,
            verbatim,
        } => (vec![Frame::Str { interp, verbatim }], body),
    };
    while j < b.len() {
        let Some(top) = frames.last_mut() else {
            return Ok(j);
        };
        match top {
            Frame::Str { interp, verbatim } => {
                let (interp, verbatim) = (*interp, *verbatim);
                match b[j] {
                    b'\\' if !verbatim => j += 2,
                    b'"' if verbatim && b.get(j + 1) == Some(&b'"') => j += 2,
                    b'"' => {
                        frames.pop();
                        j += 1;
                        if frames.is_empty() {
                            return Ok(j);
                        }
                    }
                    // An unterminated regular string ends at the line break
                    // (which is not part of it).
                    b'\n' if !verbatim && !interp => {
                        frames.pop();
                        if frames.is_empty() {
                            return Ok(j);
                        }
                    }
                    b'{' if interp => {
                        if b.get(j + 1) == Some(&b'{') {
                            j += 2;
                        } else {
                            frames.push(Frame::Hole { depth: 1 });
                            j += 1;
                        }
                    }
                    _ => j += 1,
                }
            }
            Frame::Hole { depth } => match b[j] {
                b'{' => {
                    *depth += 1;
                    j += 1;
                }
                b'}' => {
                    *depth -= 1;
                    j += 1;
                    if *depth == 0 {
                        frames.pop();
                    }
                }
                b'"' | b'\'' | b'@' | b'$' => match opening(b, j) {
                    Opening::Closed(end) | Opening::NotLiteral(end) => j = end,
                    Opening::Open {
                        body,
                        interp,
                        verbatim,
                    } => {
                        frames.push(Frame::Str { interp, verbatim });
                        j = body;
                    }
                },
                _ => j += 1,
            },
        }
    }
    Ok(b.len())
}

/// End of a literal with backslash escapes, closed by `close`, starting after
/// the opening quote at `j`; a line break ends an unterminated one.
fn escaped_end(b: &[u8], mut j: usize, close: u8) -> usize {
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\n' => return j,
            c if c == close => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// End of a run of ordinary bytes (identifiers, numbers, operators).
fn other_end(b: &[u8], i: usize) -> usize {
    super::run_end(b, i, |c, next| {
        matches!(c, b'"' | b'\'' | b'$')
            || (c == b'@' && matches!(next, Some(b'"' | b'$')))
            || (c == b'/' && matches!(next, Some(b'/' | b'*')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_comments_and_indentation() {
        let t = "namespace A\n{\n    /* block\n       comment */\n    public class B   // trailing\n    {\n\n        int x = 1;   \n    }\n}\n";
        assert_eq!(
            compact_csharp(t),
            "namespace A\n{\npublic class B\n{\nint x = 1;\n}\n}"
        );
    }

    #[test]
    fn regular_strings_keep_escapes_and_comment_markers() {
        let t = r#"var s = "a \"quoted\"  // not a comment /* nor */";  // real"#;
        assert_eq!(
            compact_csharp(t),
            r#"var s = "a \"quoted\"  // not a comment /* nor */";"#
        );
    }

    #[test]
    fn verbatim_strings_span_lines_and_double_their_quotes() {
        let t = "var q = @\"SELECT \"\"Id\"\"\n     FROM  T -- x\n\";   // done";
        assert_eq!(
            compact_csharp(t),
            "var q = @\"SELECT \"\"Id\"\"\n     FROM  T -- x\n\";"
        );
        // A backslash does not escape in a verbatim string.
        assert_eq!(
            compact_csharp("var p = @\"C:\\\"  ;  // x"),
            "var p = @\"C:\\\" ;"
        );
    }

    #[test]
    fn raw_strings_keep_everything() {
        let t = "var j = \"\"\"\n    { \"a\": \"//\" }\n    \"\"\";  // c\nvar k = \"\"\"\"  has \"\"\" inside \"\"\"\";";
        assert_eq!(
            compact_csharp(t),
            "var j = \"\"\"\n    { \"a\": \"//\" }\n    \"\"\";\nvar k = \"\"\"\"  has \"\"\" inside \"\"\"\";"
        );
    }

    #[test]
    fn interpolated_strings_keep_holes_with_nested_strings() {
        let t = r#"var m = $"Hi {name} // {(ok ? "yes // y" : "no")}  {{x}}";   // c"#;
        assert_eq!(
            compact_csharp(t),
            r#"var m = $"Hi {name} // {(ok ? "yes // y" : "no")}  {{x}}";"#
        );
        let t = "var v = $@\"{a}  \"\"q\"\" // {b}\";  /* c */ var w = @$\"x  {c}\";";
        assert_eq!(
            compact_csharp(t),
            "var v = $@\"{a}  \"\"q\"\" // {b}\"; var w = @$\"x  {c}\";"
        );
        let t = "var r = $$\"\"\"\n  {\"a\": {{x}} } // keep\n  \"\"\";";
        assert_eq!(compact_csharp(t), t);
    }

    #[test]
    fn char_literals_and_verbatim_identifiers() {
        let t = "char q = '\"';  char a = '\\'';  var @class = 1; // c";
        assert_eq!(
            compact_csharp(t),
            "char q = '\"'; char a = '\\''; var @class = 1;"
        );
    }

    #[test]
    fn preprocessor_lines_keep_their_line() {
        let t = "class A {\n  #region Don't touch   \n  int x;\n  #endregion\n}";
        assert_eq!(
            compact_csharp(t),
            "class A {\n#region Don't touch\nint x;\n#endregion\n}"
        );
    }

    #[test]
    fn a_comment_before_a_directive_is_transparent() {
        // Found by the idempotence property: the comment must not change
        // whether `#` starts a directive, since it is gone after one pass.
        assert_eq!(compact_csharp("/**/#'\t"), "#'");
        assert_eq!(
            compact_csharp("  /* x */ #region A  \nint a;"),
            "#region A\nint a;"
        );
        assert_eq!(compact_csharp("x /**/ #y"), "x #y");
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for t in [
            "var s = \"abc",
            "char c = '",
            "/* open",
            "$\"{",
            "@\"",
            "$$\"\"\"x",
            "$",
            "@",
            "{\"}",
        ] {
            let once = compact_csharp(t);
            assert_eq!(compact_csharp(&once), once, "{t:?}");
        }
    }

    /// Runs `f` on a thread with a 64 KiB stack: recursion per nesting level
    /// would overflow it within a few hundred levels.
    fn on_small_stack(f: impl FnOnce() -> String + Send + 'static) -> String {
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(f)
            .map(|h| h.join())
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    }

    #[test]
    fn deep_interpolation_nesting_stays_off_the_call_stack() {
        // Issue 31 point 1: 150,000 levels of `$"{` aborted the process.
        // Unterminated at every level, so the whole text is one literal and
        // is copied byte for byte.
        for unit in ["$\"{", "{$\"", "@$\"{", "$@\"{", "$$\"{"] {
            let text = format!("var x = {}", unit.repeat(150_000));
            let expected = text.clone();
            let out = on_small_stack(move || compact_csharp(&text));
            assert_eq!(out.len(), expected.len(), "{unit}");
            assert!(out == expected, "{unit}: deep literal not copied verbatim");
        }
        // Terminated at every level: nested holes close again.
        let depth = 100_000;
        let text = format!(
            "x = {}1{};  // c",
            "$\"{".repeat(depth),
            "}\"".repeat(depth)
        );
        let expected = format!("x = {}1{};", "$\"{".repeat(depth), "}\"".repeat(depth));
        assert!(on_small_stack(move || compact_csharp(&text)) == expected);
    }

    #[test]
    fn dollar_runs_are_passed_over_once() {
        // Issue 31 point 2: each `$` of a run outside strings rescanned the run.
        let text = format!("a {} b   c", "$".repeat(1 << 20));
        assert_eq!(
            compact_csharp(&text),
            format!("a {} b c", "$".repeat(1 << 20))
        );
        let text = format!("{}\"s  \"  x", "$".repeat(1 << 16));
        assert_eq!(
            compact_csharp(&text),
            format!("{}\"s  \" x", "$".repeat(1 << 16))
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// Properties that hold for any input, literal-heavy or not: compaction
        /// never grows the text, and compacting its own output changes nothing.
        #[test]
        fn never_grows_and_is_idempotent(t in "[$@\"'{}\\\\ \nab/*#]{0,40}") {
            let once = compact_csharp(&t);
            proptest::prop_assert!(once.len() <= t.len());
            proptest::prop_assert_eq!(compact_csharp(&once), once);
        }
    }
}
