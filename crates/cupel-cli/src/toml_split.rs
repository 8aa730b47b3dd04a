//! Splitting a TOML INPUT file at its `[[items]]` headers, so that each item
//! is parsed on its own and memory stays near the file size (issue 18: a
//! whole-document parse of a 188 MB file took 3.9 GB).
//!
//! The tokens come from the toml crate's own lexer (`toml_parser::Source::lex`,
//! the one `toml` parses with): strings of all four kinds, escapes,
//! comments and line endings are lexed exactly as the real parser lexes
//! them, and the lexer is an iterator, so it holds one token at a time.
//! `toml_parser`'s *parser* is not used: it takes the whole token list as a
//! slice (`parse_document(&[Token], ..)`), about two tokens per seven bytes
//! of input at 12 bytes each — several times the file, the cost this split
//! exists to avoid. So the structure is ours, and small: a `[` token that
//! is the first token of a line outside every array and inline table starts
//! a table header, which runs to the end of its line. Each `[[items]]`
//! header starts an item chunk that runs to the next header that is not
//! `[items.…]` / `[[items.…]]`; every other byte belongs to the *rest*
//! (`[budget]`, `[policy]`, root keys), which is parsed as one document.
//! Anything the scanner is not sure about (a quoted header key naming
//! `items`, a string that does not end) makes it give up, and the caller
//! parses the whole document as before.

use std::ops::Range;

/// Where each part of a TOML INPUT file lies.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Split {
    /// Byte ranges of everything that is not an item chunk, in order.
    pub(crate) rest: Vec<Range<usize>>,
    /// Byte ranges of the item chunks (each starts at its `[[items]]` header).
    pub(crate) items: Vec<Range<usize>>,
}

/// What a header line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header {
    /// `[[items]]`: a new item.
    NewItem,
    /// `[items.x]` / `[[items.x]]`: part of the current item.
    ItemPart,
    /// Anything else.
    Other,
}

fn classify(header: &str) -> Option<Header> {
    let h: String = header
        .chars()
        .filter(|c| !matches!(c, ' ' | '\t'))
        .collect();
    if h.contains('"') || h.contains('\'') {
        // Quoted keys could spell `items` another way: let the real parser decide.
        return if h.contains("items") {
            None
        } else {
            Some(Header::Other)
        };
    }
    Some(if h == "[[items]]" {
        Header::NewItem
    } else if h.starts_with("[items.") || h.starts_with("[[items.") {
        Header::ItemPart
    } else {
        Header::Other
    })
}

/// Splits `text`; `None` when the caller should parse it whole.
pub(crate) fn split(text: &str) -> Option<Split> {
    use toml_parser::lexer::TokenKind as K;
    let mut out = Split::default();
    // Start of the current part, and whether it is an item chunk.
    let mut part_start = 0usize;
    let mut in_item = false;
    let mut depth = 0usize; // open `[` / `{` in values
    let mut line_start = true; // only whitespace seen since the last newline
    // While in a header: where it starts and where its last token ends.
    let mut header: Option<(usize, usize)> = None;
    let close = |out: &mut Split, range: Range<usize>, item: bool| {
        if range.is_empty() {
            return;
        }
        if item {
            out.items.push(range);
        } else {
            out.rest.push(range);
        }
    };
    for token in toml_parser::Source::new(text).lex() {
        let span = token.span();
        let kind = token.kind();
        if let Some((start, last)) = header {
            match kind {
                K::Newline | K::Eof => {
                    let h = text.get(start..last)?;
                    match classify(h)? {
                        Header::NewItem => {
                            close(&mut out, part_start..start, in_item);
                            part_start = start;
                            in_item = true;
                        }
                        // `[items.x]` outside an item chunk: not ours to judge.
                        Header::ItemPart if !in_item => return None,
                        Header::ItemPart => {}
                        Header::Other => {
                            if in_item {
                                close(&mut out, part_start..start, true);
                                part_start = start;
                                in_item = false;
                            }
                        }
                    }
                    header = None;
                    line_start = true;
                }
                K::Whitespace | K::Comment => {}
                _ => {
                    if !string_is_closed(kind, text.get(span.start()..span.end())?) {
                        return None;
                    }
                    header = Some((start, span.end()));
                }
            }
            continue;
        }
        match kind {
            K::Newline => line_start = true,
            K::Whitespace | K::Comment | K::Eof => {}
            K::LeftSquareBracket if line_start && depth == 0 => {
                header = Some((span.start(), span.end()));
            }
            K::LeftSquareBracket | K::LeftCurlyBracket => {
                depth += 1;
                line_start = false;
            }
            K::RightSquareBracket | K::RightCurlyBracket => {
                depth = depth.saturating_sub(1);
                line_start = false;
            }
            _ => {
                // A string the lexer ended at a line break or the end of the
                // input does not end: the real parser will say why.
                if !string_is_closed(kind, text.get(span.start()..span.end())?) {
                    return None;
                }
                line_start = false;
            }
        }
    }
    close(&mut out, part_start..text.len(), in_item);
    Some(out)
}

/// Whether a string token's text ends with its closing delimiter (every
/// other token is complete by construction).
fn string_is_closed(kind: toml_parser::lexer::TokenKind, raw: &str) -> bool {
    use toml_parser::lexer::TokenKind as K;
    match kind {
        K::BasicString => raw.len() >= 2 && raw.ends_with('"') && !ends_escaped(raw),
        K::LiteralString => raw.len() >= 2 && raw.ends_with('\''),
        K::MlBasicString => raw.len() >= 6 && raw.ends_with("\"\"\""),
        K::MlLiteralString => raw.len() >= 6 && raw.ends_with("\'\'\'"),
        _ => true,
    }
}

/// Whether the last character of a basic string is escaped (an odd run of
/// backslashes before it): `"a\"` has not ended.
fn ends_escaped(raw: &str) -> bool {
    let body = &raw[..raw.len() - 1];
    body.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// Maps offsets in the concatenated rest back to offsets in the file.
#[derive(Debug)]
pub(crate) struct RestMap {
    /// `(offset in the rest, offset in the file)` at the start of each range.
    starts: Vec<(usize, usize)>,
}

impl RestMap {
    /// The rest's text and its offset map.
    pub(crate) fn build(text: &str, rest: &[Range<usize>]) -> (String, Self) {
        let mut s = String::with_capacity(rest.iter().map(|r| r.len() + 1).sum());
        let mut starts = Vec::with_capacity(rest.len());
        for r in rest {
            starts.push((s.len(), r.start));
            s.push_str(text.get(r.clone()).unwrap_or_default());
            if !s.ends_with('\n') {
                s.push('\n');
            }
        }
        (s, Self { starts })
    }

    /// The file offset of rest offset `at`.
    pub(crate) fn to_file(&self, at: usize) -> usize {
        let k = self.starts.partition_point(|&(r, _)| r <= at);
        match k.checked_sub(1).and_then(|k| self.starts.get(k)) {
            Some(&(r, f)) => f + (at - r),
            None => at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> (Vec<&str>, Vec<&str>) {
        let s = split(text).unwrap();
        (
            s.rest.iter().map(|r| &text[r.clone()]).collect(),
            s.items.iter().map(|r| &text[r.clone()]).collect(),
        )
    }

    #[test]
    fn items_are_cut_at_their_headers() {
        let text = "[budget]\nmax_tokens = 1\n[[items]]\ncontent = \"a\"\n[items.metadata]\nk = \"v\"\n[[items]] # two\ncontent = \"b\"\n[policy]\nslicer = \"greedy\"\n";
        let (rest, items) = parts(text);
        assert_eq!(
            rest,
            [
                "[budget]\nmax_tokens = 1\n",
                "[policy]\nslicer = \"greedy\"\n"
            ]
        );
        assert_eq!(
            items,
            [
                "[[items]]\ncontent = \"a\"\n[items.metadata]\nk = \"v\"\n",
                "[[items]] # two\ncontent = \"b\"\n"
            ]
        );
    }

    #[test]
    fn brackets_in_strings_arrays_and_comments_are_not_headers() {
        let text = "[[items]]\ncontent = \"\"\"\n[[items]]\n\"\"\"\ntags = [\n  \"x\",\n]\n# [[items]]\nx = '''\n[budget]'''\n";
        let (rest, items) = parts(text);
        assert!(rest.is_empty());
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn doubtful_headers_give_up() {
        assert_eq!(split("[\"items\".metadata]\n"), None);
        assert_eq!(split("[items.metadata]\n"), None);
        assert_eq!(split("x = \"unterminated\n"), None);
    }

    #[test]
    fn the_lexer_handles_escapes_line_endings_and_a_last_header_without_newline() {
        // An escaped quote does not end the string, so its `[[items]]` is text.
        let text = "[[items]]\r\ncontent = \"a \\\" [[items]]\"\r\n[policy]";
        let (rest, items) = parts(text);
        assert_eq!(items, ["[[items]]\r\ncontent = \"a \\\" [[items]]\"\r\n"]);
        assert_eq!(rest, ["[policy]"]);
        // A comment after a header, quotes and all, is not part of it.
        let (rest, items) = parts("[[items]] # \"items\"\nc = 1\n");
        assert!(rest.is_empty());
        assert_eq!(items.len(), 1);
        // An escaped backslash ends the string; an inline table nests.
        let (_, items) =
            parts("[[items]]\nc = \"x\\\\\"\nm = { a = [1, { b = 2 }] }\n[[items]]\nc = \"y\"\n");
        assert_eq!(items.len(), 2);
    }

    #[test]
    fn strings_that_do_not_end_give_up() {
        assert_eq!(split("[[items]]\nc = \"\"\"open\n[[items]]\n"), None);
        assert_eq!(split("[[items]]\nc = 'open\n"), None);
        assert_eq!(split("[[items]]\nc = \"a\\\"\n"), None);
    }

    #[test]
    fn rest_offsets_map_back_to_the_file() {
        let text = "a = 1\n[[items]]\nc = 2\n[b]\nd = 3\n";
        let s = split(text).unwrap();
        let (rest, map) = RestMap::build(text, &s.rest);
        assert_eq!(rest, "a = 1\n[b]\nd = 3\n");
        let at = rest.find("d =").unwrap();
        assert_eq!(map.to_file(at), text.find("d =").unwrap());
        assert_eq!(map.to_file(0), 0);
    }
}
