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
/// use cupel_pipeline::compact_csharp;
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
            b'"' | b'\'' | b'@' | b'$' => literal_end(b, i).unwrap_or_else(|| other_end(b, i + 1)),
            _ => other_end(b, i),
        };
        e.keep(&text[i..end]);
        i = end;
    }
    e.finish()
}

/// End (exclusive) of the string or char literal starting at `i`, or `None`
/// if `i` does not start one (`@name`, a lone `$`).
fn literal_end(b: &[u8], i: usize) -> Option<usize> {
    match b[i] {
        b'\'' => Some(escaped_end(b, i + 1, b'\'')),
        b'"' => Some(string_end(b, i, false, false)),
        b'@' => match (b.get(i + 1), b.get(i + 2)) {
            (Some(b'"'), _) => Some(doubled_quote_end(b, i + 1, b'"')),
            (Some(b'$'), Some(b'"')) => Some(string_end(b, i + 2, true, true)),
            _ => None,
        },
        b'$' => {
            let mut j = i;
            while b.get(j) == Some(&b'$') {
                j += 1;
            }
            let verbatim = b.get(j) == Some(&b'@');
            if verbatim {
                j += 1;
            }
            (b.get(j) == Some(&b'"')).then(|| string_end(b, j, true, verbatim))
        }
        _ => None,
    }
}

/// End of a string whose opening quote is at `q`.
fn string_end(b: &[u8], q: usize, interp: bool, verbatim: bool) -> usize {
    let quotes = b[q..].iter().take_while(|&&c| c == b'"').count();
    if quotes >= 3 {
        // Raw string: ends at the first run of as many quotes. Its holes (if
        // interpolated) cannot contain that many quotes in a row.
        let run = &b[q..q + quotes];
        let body = q + quotes;
        return b[body..]
            .windows(quotes)
            .position(|w| w == run)
            .map_or(b.len(), |p| body + p + quotes);
    }
    let mut j = q + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if !verbatim => j += 2,
            b'"' if verbatim && b.get(j + 1) == Some(&b'"') => j += 2,
            b'"' => return j + 1,
            b'\n' if !verbatim && !interp => return j,
            b'{' if interp => {
                if b.get(j + 1) == Some(&b'{') {
                    j += 2;
                } else {
                    j = hole_end(b, j);
                }
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// End of the interpolation hole opened by the `{` at `i`: the matching `}`,
/// skipping nested braces and any literals inside.
fn hole_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'{' => {
                depth += 1;
                j += 1;
            }
            b'}' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return j;
                }
            }
            b'"' | b'\'' | b'@' | b'$' => j = literal_end(b, j).unwrap_or(j + 1),
            _ => j += 1,
        }
    }
    b.len()
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
}
