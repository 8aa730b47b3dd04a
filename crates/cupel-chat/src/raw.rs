//! Raw JSON text: where a document's values sit in its text, found without
//! decoding them, and a writer that copies those bytes back.
//!
//! What Cupel keeps of a document is written back exactly as it was read:
//! key order, number literals (`1.50`, `1e2`, `12345678901234567890`,
//! `-0.0`), string escapes and whitespace. Only what Cupel changed (a mixed
//! turn without the results whose calls were cut, a shortened tool result,
//! a cache marker) is written anew, and within a changed value every member
//! and element that did not change is still copied (see [`patch`]).
//!
//! The scanner assumes text that `serde_json` has already accepted; on text
//! it cannot follow it returns `None` rather than panicking.

use std::ops::Range;

use serde_json::Value;

/// A byte range of a document's text.
pub(crate) type Span = Range<usize>;

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first non-whitespace byte at or after `i`.
pub(crate) fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_ws(s[i]) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string literal starting at `i` (its `"`).
fn string_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end (exclusive) of the JSON value starting at `i` (no whitespace
/// before it).
pub(crate) fn value_end(s: &[u8], i: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => string_end(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < s.len() {
                match s[j] {
                    b'"' => {
                        j = string_end(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < s.len() && !matches!(s[j], b',' | b'}' | b']') && !is_ws(s[j]) {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// One element of an array: the whitespace before it, the value, and the
/// whitespace after it (before its `,` or the closing `]`).
#[derive(Debug, Clone)]
pub(crate) struct Elem {
    pub lead: Span,
    pub value: Span,
    pub trail: Span,
}

/// One member of an object: the whitespace before it, the key literal
/// (quotes included), the text between key and value (`: `), the value,
/// and the whitespace after it.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub lead: Span,
    pub key: Span,
    pub sep: Span,
    pub value: Span,
    pub trail: Span,
}

/// Writes what follows an item the way the input had it: after an item
/// that is not the last written, its own trailing whitespace then `,`;
/// after the last, the input's closing whitespace (`tail`).
pub(crate) fn separate(out: &mut String, text: &str, trail: &Span, last: bool, tail: &Span) {
    if last {
        out.push_str(&text[tail.clone()]);
    } else {
        out.push_str(&text[trail.clone()]);
        out.push(',');
    }
}

/// The elements of the array at `span` and the whitespace before its `]`.
pub(crate) fn elements(text: &str, span: Span) -> Option<(Vec<Elem>, Span)> {
    let s = text.as_bytes();
    if s.get(span.start) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = span.start + 1;
    loop {
        let v = skip_ws(s, i);
        if s.get(v) == Some(&b']') {
            // `[]`, or (invalid JSON) a trailing comma: the rest is the tail.
            return Some((out, i..v));
        }
        let end = value_end(s, v)?;
        let after = skip_ws(s, end);
        out.push(Elem {
            lead: i..v,
            value: v..end,
            trail: end..after,
        });
        match s.get(after)? {
            b',' => i = after + 1,
            b']' => return Some((out, end..after)),
            _ => return None,
        }
    }
}

/// The members of the object at `span` and the whitespace before its `}`.
pub(crate) fn members(text: &str, span: Span) -> Option<(Vec<Member>, Span)> {
    let s = text.as_bytes();
    if s.get(span.start) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = span.start + 1;
    loop {
        let k = skip_ws(s, i);
        if s.get(k) == Some(&b'}') {
            return Some((out, i..k));
        }
        if s.get(k) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(s, k)?;
        let colon = skip_ws(s, key_end);
        if s.get(colon) != Some(&b':') {
            return None;
        }
        let v = skip_ws(s, colon + 1);
        let end = value_end(s, v)?;
        let after = skip_ws(s, end);
        out.push(Member {
            lead: i..k,
            key: k..key_end,
            sep: key_end..v,
            value: v..end,
            trail: end..after,
        });
        match s.get(after)? {
            b',' => i = after + 1,
            b'}' => return Some((out, end..after)),
            _ => return None,
        }
    }
}

/// A member's key, decoded (escapes resolved).
pub(crate) fn key(text: &str, m: &Member) -> Option<String> {
    serde_json::from_str(&text[m.key.clone()]).ok()
}

/// `text` with the whitespace outside string literals removed: the
/// one-line form, literals and escapes untouched.
pub(crate) fn compact(text: &str) -> String {
    let s = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut from = 0;
    while i < s.len() {
        match s[i] {
            b'"' => i = string_end(s, i).unwrap_or(s.len()),
            b if is_ws(b) => {
                out.push_str(&text[from..i]);
                i = skip_ws(s, i);
                from = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[from..]);
    out
}

/// Writes `new` as a change of the value whose text is `raw`: `old` is the
/// value `raw` stood for as the caller modelled it (not necessarily the
/// value of `raw` itself: a model may spell a default out), `new` the value
/// to write. Where `old` and `new` agree, `raw` is copied byte for byte;
/// objects and arrays that both sides have are patched member by member
/// and element by element; anything else is written as compact JSON.
///
/// A member `new` adds that `old` did not have is appended after the last
/// member; one `old` had that `new` lacks is left out; a member of `raw`
/// that neither `old` nor `new` names (a model would not drop a field it
/// read, so this is a key the model never saw) is kept.
pub(crate) fn patch(out: &mut String, text: &str, raw: Span, old: &Value, new: &Value) {
    if old == new {
        out.push_str(&text[raw]);
        return;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => patch_object(out, text, raw, o, n, new),
        (Value::Array(o), Value::Array(n)) => patch_array(out, text, raw, o, n, new),
        _ => write_value(out, new),
    }
}

/// [`patch`] of an object: member by member, in the order `raw` has them.
fn patch_object(
    out: &mut String,
    text: &str,
    raw: Span,
    o: &serde_json::Map<String, Value>,
    n: &serde_json::Map<String, Value>,
    new: &Value,
) {
    let Some((ms, tail)) = members(text, raw.clone()) else {
        return write_value(out, new);
    };
    // Each member written: (lead, key, sep, value text, trail).
    let mut written: Vec<(&str, String, &str, String, &str)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for m in &ms {
        let Some(k) = key(text, m) else { continue };
        let mut value = String::new();
        let keep = match (o.get(&k), n.get(&k)) {
            (Some(ov), Some(nv)) => {
                patch(&mut value, text, m.value.clone(), ov, nv);
                true
            }
            (None, Some(nv)) => {
                write_value(&mut value, nv);
                true
            }
            (Some(_), None) => false,
            (None, None) => {
                value.push_str(&text[m.value.clone()]);
                true
            }
        };
        if keep {
            written.push((
                &text[m.lead.clone()],
                text[m.key.clone()].to_string(),
                &text[m.sep.clone()],
                value,
                &text[m.trail.clone()],
            ));
        }
        seen.insert(k);
    }
    let (lead, sep) = written.last().map_or(("", ":"), |w| (w.0, w.2));
    for (k, v) in n {
        if seen.contains(k) || o.get(k) == Some(v) {
            continue;
        }
        let mut key_text = String::new();
        write_value(&mut key_text, &Value::String(k.clone()));
        let mut value = String::new();
        write_value(&mut value, v);
        written.push((lead, key_text, sep, value, ""));
    }
    let items: Vec<(String, &str)> = written
        .into_iter()
        .map(|(lead, key, sep, value, trail)| (format!("{lead}{key}{sep}{value}"), trail))
        .collect();
    write_items(out, ('{', '}'), &items, &text[tail]);
}

/// [`patch`] of an array: element by element.
fn patch_array(out: &mut String, text: &str, raw: Span, o: &[Value], n: &[Value], new: &Value) {
    let Some((es, tail)) = elements(text, raw.clone()) else {
        return write_value(out, new);
    };
    if es.len() != o.len() {
        return write_value(out, new);
    }
    // Each element written: (lead, value text, trail).
    let mut written: Vec<(&str, String, &str)> = Vec::new();
    if o.len() == n.len() {
        for ((e, ov), nv) in es.iter().zip(o).zip(n) {
            let mut value = String::new();
            patch(&mut value, text, e.value.clone(), ov, nv);
            written.push((&text[e.lead.clone()], value, &text[e.trail.clone()]));
        }
    } else {
        // Elements removed or added: each new element is copied from
        // the next old element equal to it, or written anew.
        let mut at = 0;
        let (mut lead, mut trail) = es.first().map_or(("", ""), |e| {
            (&text[e.lead.clone()], &text[e.trail.clone()])
        });
        for nv in n {
            match (at..o.len()).find(|&j| &o[j] == nv) {
                Some(j) => {
                    lead = &text[es[j].lead.clone()];
                    trail = &text[es[j].trail.clone()];
                    written.push((lead, text[es[j].value.clone()].to_string(), trail));
                    at = j + 1;
                }
                None => {
                    let mut value = String::new();
                    write_value(&mut value, nv);
                    written.push((lead, value, trail));
                }
            }
        }
    }
    let items: Vec<(String, &str)> = written
        .into_iter()
        .map(|(lead, value, trail)| (format!("{lead}{value}"), trail))
        .collect();
    write_items(out, ('[', ']'), &items, &text[tail]);
}

/// Writes an object's or array's items between its brackets: each item
/// (with the whitespace before it), then its own trailing whitespace and
/// `,`, except after the last, which gets the input's closing whitespace
/// `tail` (as does an empty one).
fn write_items(out: &mut String, brackets: (char, char), items: &[(String, &str)], tail: &str) {
    out.push(brackets.0);
    for (i, (item, trail)) in items.iter().enumerate() {
        out.push_str(item);
        if i + 1 < items.len() {
            out.push_str(trail);
            out.push(',');
        }
    }
    out.push_str(tail);
    out.push(brackets.1);
}

/// `v` as compact JSON (serialising a `Value` cannot fail: its keys are strings).
pub(crate) fn write_value(out: &mut String, v: &Value) {
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(raw: &str, old: Value, new: Value) -> String {
        let mut out = String::new();
        patch(&mut out, raw, 0..raw.len(), &old, &new);
        out
    }

    #[test]
    fn scans_elements_and_members_with_their_whitespace() {
        let t = r#"[ {"a": "x\"]"} ,2 ]"#;
        let (es, tail) = elements(t, 0..t.len()).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(&t[es[0].value.clone()], r#"{"a": "x\"]"}"#);
        assert_eq!(&t[es[0].lead.clone()], " ");
        assert_eq!(&t[es[1].value.clone()], "2");
        assert_eq!(&t[tail], " ");
        let o = r#"{ "k" : 1.50 , "z":[] }"#;
        let (ms, _) = members(o, 0..o.len()).unwrap();
        assert_eq!(key(o, &ms[0]).as_deref(), Some("k"));
        assert_eq!(&o[ms[0].sep.clone()], " : ");
        assert_eq!(&o[ms[0].value.clone()], "1.50");
        assert_eq!(&o[ms[1].value.clone()], "[]");
        assert!(elements("[1,", 0..3).is_none());
        assert!(members("{\"a\" 1}", 0..7).is_none());
    }

    #[test]
    fn compacts_outside_strings_only() {
        assert_eq!(
            compact("{ \"a b\" : [ 1e2 ,\n \"\\u00e9 x\" ] }"),
            r#"{"a b":[1e2,"\u00e9 x"]}"#
        );
    }

    #[test]
    fn patch_copies_what_did_not_change() {
        // The second part goes; the first is copied with its escape and
        // literal, the unknown key `z` stays, key order stays.
        let raw = r#"{"z": 1.50, "content": [{"type":"text","text":"caf\u00e9"}, {"type":"tool_result"}], "role": "user"}"#;
        let old = json!({"role": "user", "content": [{"type":"text","text":"café"}, {"type":"tool_result"}], "z": 1.5});
        let new = json!({"role": "user", "content": [{"type":"text","text":"café"}], "z": 1.5});
        assert_eq!(
            patched(raw, old, new),
            r#"{"z": 1.50, "content": [{"type":"text","text":"caf\u00e9"}], "role": "user"}"#
        );
        // A member added is appended; a changed string is written anew.
        let raw = r#"{"b":1e2,"a":"x"}"#;
        let out = patched(
            raw,
            json!({"a": "x", "b": 100.0}),
            json!({"a": "y", "b": 100.0, "c": true}),
        );
        assert_eq!(out, r#"{"b":1e2,"a":"y","c":true}"#);
    }
}
