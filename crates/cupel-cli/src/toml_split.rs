//! Splitting a TOML INPUT file at its `[[items]]` headers, so that each item
//! is parsed on its own and memory stays near the file size (issue 18: a
//! whole-document parse of a 188 MB file took 3.9 GB).
//!
//! The scanner knows just enough TOML to find table headers: a `[` that
//! starts a line outside every string, comment, array and inline table. Each
//! `[[items]]` header starts an item chunk that runs to the next header that
//! is not `[items.…]` / `[[items.…]]`; every other byte belongs to the *rest*
//! (`[budget]`, `[policy]`, root keys), which is parsed as one document.
//! Anything the scanner is not sure about (a quoted header key naming
//! `items`) makes it give up, and the caller parses the whole document as
//! before.

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
    let b = text.as_bytes();
    let mut out = Split::default();
    // Start of the current part, and whether it is an item chunk.
    let mut part_start = 0usize;
    let mut in_item = false;
    let mut depth = 0usize; // open `[` / `{` in values
    let mut line_start = true; // only whitespace seen since the last newline
    let mut i = 0usize;
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
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                i = skip_string(b, i)?;
                line_start = false;
                continue;
            }
            b'[' if line_start && depth == 0 => {
                // A header: to the end of the line, minus a comment.
                let end = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p);
                let line = text.get(i..end)?;
                let header = match line.find('#') {
                    Some(p) if !line[..p].contains(['"', '\'']) => &line[..p],
                    _ => line,
                };
                let kind = classify(header.trim_end())?;
                match kind {
                    Header::NewItem => {
                        close(&mut out, part_start..i, in_item);
                        part_start = i;
                        in_item = true;
                    }
                    Header::ItemPart => {
                        // `[items.x]` outside an item chunk: not ours to judge.
                        if !in_item {
                            return None;
                        }
                    }
                    Header::Other => {
                        if in_item {
                            close(&mut out, part_start..i, true);
                            part_start = i;
                            in_item = false;
                        }
                    }
                }
                i = end;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        line_start = false;
        i += 1;
    }
    close(&mut out, part_start..b.len(), in_item);
    Some(out)
}

/// The index just past the string starting at `b[i]` (a quote); `None` when
/// it does not end (the real parser will say why).
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let q = b[i];
    let triple = b.len() >= i + 3 && b[i + 1] == q && b[i + 2] == q;
    if triple {
        let mut j = i + 3;
        while j < b.len() {
            if q == b'"' && b[j] == b'\\' {
                j += 2;
                continue;
            }
            if b[j] == q && b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q) {
                // Up to two more quotes may end the string (`""""` is allowed).
                let mut k = j + 3;
                while k < j + 5 && b.get(k) == Some(&q) {
                    k += 1;
                }
                return Some(k);
            }
            j += 1;
        }
        return None;
    }
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if q == b'"' => j += 2,
            b'\n' => return None,
            x if x == q => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
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
