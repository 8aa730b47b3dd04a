//! [`compact_sql`]: comments and redundant whitespace out, literals untouched.

use super::{Emitter, doubled_quote_end, line_end, space_run};

/// Compacts SQL text (ANSI, T-SQL, PostgreSQL, MySQL spellings).
///
/// Removed: `-- line` comments, `/* block */` comments (nested ones too, as
/// T-SQL and PostgreSQL allow), indentation, trailing spaces, blank lines and
/// runs of spaces. Copied byte for byte: `'string'` literals (with `''`
/// escapes, and `N'...'` prefixes), PostgreSQL escape strings `E'...'` /
/// `e'...'` (where a backslash escapes the next byte, so `E'it\'s -- x'` is one
/// literal), `"quoted"` and `[bracketed]` identifiers (with `""` / `]]`
/// escapes), `` `backtick` `` identifiers and PostgreSQL `$tag$ ... $tag$`
/// bodies. A comment counts as whitespace, so `a/**/b` becomes `a b`, never
/// `ab`. Unterminated literals run to the end of the text and are kept as they
/// are.
///
/// Dialects disagree about a backslash inside `'...'` and `"..."`: MySQL reads
/// it as an escape (`'it\'s'` is one literal), standard SQL, T-SQL and
/// PostgreSQL read it as an ordinary character (`'C:\'` ends at its second
/// quote). The text does not say which dialect it is, so each such literal is
/// read both ways. Where the two readings end the literal at the same byte
/// nothing is ambiguous; where they do not, everything from that literal's
/// opening quote to the end of the text is copied unchanged, since either
/// reading could be the right one and a byte that might sit inside a literal
/// must never be removed. The text before it is compacted as usual.
///
/// ```
/// use cupel_gate::compact_sql;
/// let t = "CREATE PROCEDURE dbo.Get /* v2 */\nAS\nBEGIN\n    SELECT [Order Id], 'it''s -- fine'\n    FROM dbo.Orders; -- all\nEND\nGO\n";
/// assert_eq!(
///     compact_sql(t),
///     "CREATE PROCEDURE dbo.Get\nAS\nBEGIN\nSELECT [Order Id], 'it''s -- fine'\nFROM dbo.Orders;\nEND\nGO"
/// );
/// // PostgreSQL's escape string is one literal: its `--` is not a comment.
/// assert_eq!(compact_sql("SELECT  E'it\\'s -- x'  -- note"), "SELECT E'it\\'s -- x'");
/// // MySQL or standard SQL? Both readings differ here, so the rest is kept as is.
/// assert_eq!(
///     compact_sql("SELECT  1,\n  \"a\\\"b -- c\"  -- d\n  FROM t"),
///     "SELECT 1,\n\"a\\\"b -- c\"  -- d\n  FROM t"
/// );
/// ```
pub fn compact_sql(text: &str) -> String {
    let b = text.as_bytes();
    let mut e = Emitter::new(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        let end = match c {
            _ if super::is_space(c) => {
                let (end, newline) = space_run(b, i);
                e.gap(newline);
                i = end;
                continue;
            }
            b'-' if next == Some(b'-') => {
                e.gap(false);
                i = line_end(b, i);
                continue;
            }
            b'/' if next == Some(b'*') => {
                let end = block_comment_end(b, i);
                e.gap(b[i..end].contains(&b'\n'));
                i = end;
                continue;
            }
            b'\'' if escape_string_prefix(b, i) => backslash_quote_end(b, i, c),
            b'\'' | b'"' => {
                let plain = doubled_quote_end(b, i, c);
                if backslash_quote_end(b, i, c) != plain {
                    // Ambiguous: keep this literal and everything after it.
                    e.keep(&text[i..]);
                    break;
                }
                plain
            }
            b'`' => doubled_quote_end(b, i, c),
            b'[' => doubled_quote_end(b, i, b']'),
            b'$' => dollar_quote_end(b, i).unwrap_or_else(|| other_end(b, i + 1)),
            _ => other_end(b, i),
        };
        e.keep(&text[i..end]);
        i = end;
    }
    e.finish()
}

/// Whether the `'` at `i` opens a PostgreSQL escape string: it follows an `E`
/// or `e` that is a word of its own (not the end of `type'` or `name'`).
fn escape_string_prefix(b: &[u8], i: usize) -> bool {
    let Some(prefix) = i.checked_sub(1) else {
        return false;
    };
    matches!(b[prefix], b'E' | b'e')
        && prefix
            .checked_sub(1)
            .is_none_or(|p| !(b[p].is_ascii_alphanumeric() || b[p] == b'_' || b[p] >= 0x80))
}

/// End (exclusive) of a literal opened by `quote` at `i` when a backslash
/// escapes the byte after it (and a doubled quote is a quote, as both MySQL
/// and PostgreSQL escape strings also allow). Unterminated: the end of the text.
fn backslash_quote_end(b: &[u8], i: usize, quote: u8) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' {
            j += 2;
        } else if b[j] == quote {
            if b.get(j + 1) == Some(&quote) {
                j += 2;
                continue;
            }
            return j + 1;
        } else {
            j += 1;
        }
    }
    b.len()
}

/// End of a (possibly nested) block comment opened at `i`.
fn block_comment_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
            depth += 1;
            j += 2;
        } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else {
            j += 1;
        }
    }
    b.len()
}

/// End of a PostgreSQL dollar-quoted body `$tag$ ... $tag$` opened at `i`, or
/// `None` if `i` does not open one (`$1` is a parameter, not a quote).
fn dollar_quote_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        j += 1;
    }
    if b.get(j) != Some(&b'$') || b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let tag = &b[i..=j];
    let body = j + 1;
    let close = b[body..]
        .windows(tag.len())
        .position(|w| w == tag)
        .map_or(b.len(), |p| body + p + tag.len());
    Some(close)
}

/// End of a run of ordinary bytes (words, numbers, operators) starting at `i`.
fn other_end(b: &[u8], i: usize) -> usize {
    super::run_end(b, i, |c, next| {
        matches!(c, b'\'' | b'"' | b'`' | b'[' | b'$')
            || (c == b'-' && next == Some(b'-'))
            || (c == b'/' && next == Some(b'*'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_comments_and_indentation() {
        let t = "  SELECT a,   b -- trailing\n\n\n  FROM t /* inline */ WHERE x = 1;  \n";
        assert_eq!(compact_sql(t), "SELECT a, b\nFROM t WHERE x = 1;");
    }

    #[test]
    fn string_literals_keep_escapes_comment_markers_and_spaces() {
        let t = "SELECT 'it''s  --not a comment', N'  /* nor this */ '  FROM t";
        assert_eq!(
            compact_sql(t),
            "SELECT 'it''s  --not a comment', N'  /* nor this */ ' FROM t"
        );
    }

    #[test]
    fn quoted_and_bracketed_identifiers_are_kept() {
        let t = "SELECT [Order  Id], [a]]--b], \"Line  \"\"x\"\" --\" FROM   `my  table`";
        assert_eq!(
            compact_sql(t),
            "SELECT [Order  Id], [a]]--b], \"Line  \"\"x\"\" --\" FROM `my  table`"
        );
    }

    #[test]
    fn nested_block_comments_and_comment_as_separator() {
        assert_eq!(compact_sql("a/* x /* y */ z */b"), "a b");
        // Without the separator, '-' and '-' would form a new comment.
        assert_eq!(compact_sql("1-/**/-1"), "1- -1");
        // Two adjacent literals must not become one with an escaped quote.
        assert_eq!(compact_sql("'a'/**/'b'"), "'a' 'b'");
    }

    #[test]
    fn dollar_quoted_bodies_are_kept_and_parameters_are_not_quotes() {
        let t = "CREATE FUNCTION f() AS $body$\n  -- inside\n  SELECT  1;\n$body$;\nSELECT $1,  $2";
        assert_eq!(
            compact_sql(t),
            "CREATE FUNCTION f() AS $body$\n  -- inside\n  SELECT  1;\n$body$;\nSELECT $1, $2"
        );
    }

    #[test]
    fn go_keeps_its_own_line() {
        assert_eq!(
            compact_sql("SELECT 1 -- one\nGO\n  \nSELECT 2\nGO"),
            "SELECT 1\nGO\nSELECT 2\nGO"
        );
    }

    #[test]
    fn unterminated_literals_and_comments_do_not_panic() {
        assert_eq!(compact_sql("SELECT 'abc  "), "SELECT 'abc  ");
        assert_eq!(compact_sql("SELECT 1 /* open"), "SELECT 1");
        assert_eq!(compact_sql("SELECT [x  "), "SELECT [x  ");
        assert_eq!(compact_sql("$a$ never closed"), "$a$ never closed");
        assert_eq!(compact_sql(""), "");
        assert_eq!(compact_sql("-- only a comment"), "");
    }

    #[test]
    fn postgres_escape_strings_take_backslash_escapes() {
        // `\'` does not close the literal, so `-- x` is inside it.
        assert_eq!(
            compact_sql("SELECT E'it\\'s -- x',  e'a\\\\'  -- gone\nFROM t"),
            "SELECT E'it\\'s -- x', e'a\\\\'\nFROM t"
        );
        // A doubled quote is a quote in an escape string too.
        assert_eq!(compact_sql("E'a''b -- c'  x"), "E'a''b -- c' x");
        // `E` glued to a word is not a prefix: `typE'...'` is a plain literal.
        assert_eq!(compact_sql("typE'a -- b'   x"), "typE'a -- b' x");
        // Unterminated: kept to the end.
        assert_eq!(compact_sql("SELECT E'abc\\'  "), "SELECT E'abc\\'  ");
    }

    #[test]
    fn ambiguous_backslashes_leave_the_rest_of_the_text_alone() {
        // MySQL: one literal `a\"b -- c`; ANSI: identifier `a\` then `b -- c"...`.
        let t = "SELECT  x, \"a\\\"b -- c\"  /* d */\n   FROM t";
        assert_eq!(
            compact_sql(t),
            "SELECT x, \"a\\\"b -- c\"  /* d */\n   FROM t"
        );
        // T-SQL path ending in a backslash vs MySQL's escaped quote.
        let t = "SELECT   'C:\\'  -- dir\n  , 'x'";
        assert_eq!(compact_sql(t), "SELECT 'C:\\'  -- dir\n  , 'x'");
        // MySQL's `\'` inside single quotes.
        let t = "WHERE  note = 'it\\'s -- x'  -- y";
        assert_eq!(compact_sql(t), "WHERE note = 'it\\'s -- x'  -- y");
    }

    #[test]
    fn unambiguous_backslashes_are_compacted_around() {
        // Both readings end these literals at the same quote.
        assert_eq!(
            compact_sql("SELECT  'a\\nb',  \"c\\d\"  -- note\nFROM t"),
            "SELECT 'a\\nb', \"c\\d\"\nFROM t"
        );
        // `\\` before the closing quote: an escaped backslash for MySQL, two
        // backslashes for ANSI; the literal ends at the same quote either way.
        assert_eq!(compact_sql("'a\\\\'   -- x"), "'a\\\\'");
    }

    #[test]
    fn non_ascii_text_is_copied() {
        assert_eq!(
            compact_sql("SELECT  'héllo'  AS  naïve -- ünïcode"),
            "SELECT 'héllo' AS naïve"
        );
    }
}
