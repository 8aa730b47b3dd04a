//! The built-in compactors: small lexers for SQL and C# that drop comments
//! and redundant whitespace and copy every literal byte for byte.

mod csharp;
mod sql;

use crate::{CodeLanguage, Compactor};

pub use csharp::compact_csharp;
pub use sql::compact_sql;

/// The built-in [`Compactor`]: [`compact_sql`] for [`CodeLanguage::Sql`],
/// [`compact_csharp`] for [`CodeLanguage::Dotnet`], the text unchanged for
/// anything else.
///
/// Both remove comments, indentation, trailing spaces, blank lines and runs of
/// spaces; a run of whitespace (or a comment) that contained a line break
/// becomes one `\n`, any other becomes one space, so line-oriented syntax
/// (T-SQL's `GO`, C#'s `#if`) keeps its own line and no two tokens are ever
/// glued together. String literals, quoted identifiers and everything else
/// are copied unchanged. Compacting is idempotent.
///
/// ```
/// use cupel_gate::{CodeLanguage, Compactor};
/// use cupel_gate::BuiltinCompactor;
/// let sql = "SELECT name -- the name\n  FROM   users\n\n WHERE note = 'a  -- b';";
/// assert_eq!(
///     BuiltinCompactor.compact(CodeLanguage::Sql, sql),
///     "SELECT name\nFROM users\nWHERE note = 'a  -- b';"
/// );
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuiltinCompactor;

impl Compactor for BuiltinCompactor {
    fn compact(&self, language: CodeLanguage, text: &str) -> String {
        match language {
            CodeLanguage::Sql => compact_sql(text),
            CodeLanguage::Dotnet => compact_csharp(text),
            _ => text.to_string(),
        }
    }
}

/// Collects kept slices; whitespace and comments between them become at most
/// one separator (`\n` if any of them held a line break, else a space).
struct Emitter {
    out: String,
    /// A separator is owed before the next kept slice; `true` = line break.
    pending: Option<bool>,
}

impl Emitter {
    fn new(capacity: usize) -> Self {
        Self {
            out: String::with_capacity(capacity),
            pending: None,
        }
    }

    fn keep(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if let Some(newline) = self.pending.take()
            && !self.out.is_empty()
        {
            self.out.push(if newline { '\n' } else { ' ' });
        }
        self.out.push_str(s);
    }

    fn gap(&mut self, newline: bool) {
        self.pending = Some(self.pending.unwrap_or(false) || newline);
    }

    fn finish(self) -> String {
        self.out
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// End of the whitespace run at `i`, and whether it holds a line break.
fn space_run(b: &[u8], mut i: usize) -> (usize, bool) {
    let mut newline = false;
    while i < b.len() && is_space(b[i]) {
        newline |= b[i] == b'\n';
        i += 1;
    }
    (i, newline)
}

/// End of a run of ordinary bytes starting at `i`: up to whitespace or a byte
/// where `starts(byte, next byte)` says a literal or comment begins.
fn run_end(b: &[u8], mut i: usize, starts: impl Fn(u8, Option<u8>) -> bool) -> usize {
    while i < b.len() && !(is_space(b[i]) || starts(b[i], b.get(i + 1).copied())) {
        i += 1;
    }
    i
}

/// End of the line starting at or after `i` (the index of `\n`, or the end).
fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p)
}

/// End (exclusive) of a literal opened by `quote` at `i`, where the quote is
/// escaped by doubling it (`'it''s'`, `[a]]b]`, `@"say ""hi"""`). Unterminated:
/// the end of the text.
fn doubled_quote_end(b: &[u8], i: usize, close: u8) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == close {
            if b.get(j + 1) == Some(&close) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emitter_collapses_gaps_and_trims_both_ends() {
        let mut e = Emitter::new(8);
        e.gap(true);
        e.keep("a");
        e.gap(false);
        e.gap(true);
        e.keep("b");
        e.gap(false);
        e.keep("c");
        e.gap(true);
        assert_eq!(e.finish(), "a\nb c");
    }

    #[test]
    fn unknown_language_is_left_alone() {
        let t = "def f():  # keep\n    return 1\n";
        assert_eq!(BuiltinCompactor.compact(CodeLanguage::Unknown, t), t);
    }
}
