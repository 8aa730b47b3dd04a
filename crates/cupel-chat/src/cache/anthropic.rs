//! Writing planned `cache_control` markers into an Anthropic request, and
//! finding the markers a request already carries.

use serde_json::{Map, Value, json};

use crate::cache::profile::CacheProfile;
use crate::message::Role;
use crate::transcript::Transcript;
use crate::wire::Format;

/// The most `cache_control` markers (cache breakpoints) Anthropic accepts in
/// one request: "You can define up to 4 cache breakpoints" (Anthropic,
/// *Prompt caching*,
/// <https://platform.claude.com/docs/en/build-with-claude/prompt-caching>).
/// A request with more is refused.
pub const MAX_CACHE_MARKERS: usize = 4;

fn marker(profile: &CacheProfile) -> Value {
    if profile.write_multiplier >= 2.0 {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    }
}

/// Collects the pointer of `block` when it carries a marker, then looks
/// into the blocks it holds: a `content` array (a `tool_result`'s or a
/// `search_result`'s) and a `source.content` array (a `document` made of
/// content blocks). Nothing else is entered: a `tool_use`'s `input` and a
/// tool's `input_schema` are the caller's data, where a key named
/// `cache_control` is no marker.
fn block_markers(block: &Value, at: &str, out: &mut Vec<String>) {
    let Value::Object(o) = block else {
        return;
    };
    if o.contains_key("cache_control") {
        out.push(at.to_string());
    }
    if let Some(inner) = o.get("content") {
        blocks_markers(inner, &format!("{at}/content"), out);
    }
    if let Some(inner) = o.get("source").and_then(|s| s.get("content")) {
        blocks_markers(inner, &format!("{at}/source/content"), out);
    }
}

/// [`block_markers`] over a content value (a string has none).
fn blocks_markers(content: &Value, at: &str, out: &mut Vec<String>) {
    if let Value::Array(blocks) = content {
        for (i, b) in blocks.iter().enumerate() {
            block_markers(b, &format!("{at}/{i}"), out);
        }
    }
}

/// Where an Anthropic request carries `cache_control` markers, as JSON
/// Pointers (RFC 6901) in document order: every place Anthropic reads one.
///
/// * the body's own top-level `cache_control` (automatic caching, which
///   places one breakpoint of its own): `""`;
/// * each tool definition: `/tools/0`;
/// * each `system` block: `/system/0`;
/// * each content block of each message (`/messages/2/content/0`, or
///   `/2/content/0` in a bare messages array), and inside a block, each
///   block of its `content` array (a `tool_result`'s:
///   `/messages/2/content/0/content/1`) or of its `source.content` (a
///   document of content blocks), at any depth.
///
/// A `tool_use`'s `input` and a tool's `input_schema` are not entered (they
/// are the caller's data). An OpenAI document has no markers to find, but
/// the same places are looked at.
///
/// ```
/// use cupel_chat::cache_marker_paths;
/// use serde_json::json;
/// let body = json!({
///     "tools": [{"name": "grep", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
///     "system": [{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}}],
///     "messages": [{"role": "user", "content": [{
///         "type": "tool_result", "tool_use_id": "t1",
///         "content": [{"type": "text", "text": "hit", "cache_control": {"type": "ephemeral"}}]}]}]
/// });
/// assert_eq!(
///     cache_marker_paths(&body),
///     ["/tools/0", "/system/0", "/messages/0/content/0/content/0"]
/// );
/// ```
pub fn cache_marker_paths(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match request {
        Value::Object(o) => {
            if o.contains_key("cache_control") {
                out.push(String::new());
            }
            if let Some(Value::Array(tools)) = o.get("tools") {
                for (i, t) in tools.iter().enumerate() {
                    if t.get("cache_control").is_some() {
                        out.push(format!("/tools/{i}"));
                    }
                }
            }
            if let Some(system) = o.get("system") {
                blocks_markers(system, "/system", &mut out);
            }
            if let Some(Value::Array(messages)) = o.get("messages") {
                for (i, m) in messages.iter().enumerate() {
                    if let Some(c) = m.get("content") {
                        blocks_markers(c, &format!("/messages/{i}/content"), &mut out);
                    }
                }
            }
        }
        Value::Array(messages) => {
            for (i, m) in messages.iter().enumerate() {
                if let Some(c) = m.get("content") {
                    blocks_markers(c, &format!("/{i}/content"), &mut out);
                }
            }
        }
        _ => {}
    }
    out
}

/// How many `cache_control` markers an Anthropic request carries, wherever
/// they sit (see [`cache_marker_paths`]); Anthropic refuses more than
/// [`MAX_CACHE_MARKERS`].
///
/// ```
/// use cupel_chat::count_cache_markers;
/// use serde_json::json;
/// let body = json!({"cache_control": {"type": "ephemeral"}, "messages": [
///     {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
/// assert_eq!(count_cache_markers(&body), 2);
/// ```
pub fn count_cache_markers(request: &Value) -> usize {
    cache_marker_paths(request).len()
}

/// Removes every marker [`cache_marker_paths`] finds.
fn strip_all(doc: &mut Value) {
    for path in cache_marker_paths(doc) {
        if let Some(Value::Object(o)) = doc.pointer_mut(&path) {
            o.remove("cache_control");
        }
    }
}

/// Puts `mark` on the last block of `content`, turning a string into one
/// text block. Returns whether a block took it.
fn mark_content(content: &mut Value, mark: &Value) -> bool {
    if let Value::String(s) = content {
        let mut block = Map::new();
        block.insert("type".into(), Value::String("text".into()));
        block.insert("text".into(), Value::String(std::mem::take(s)));
        *content = Value::Array(vec![Value::Object(block)]);
    }
    match content {
        Value::Array(blocks) => match blocks.last_mut() {
            Some(Value::Object(o)) => {
                o.insert("cache_control".into(), mark.clone());
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// The Anthropic request of `window` with `cache_control` markers at
/// `breakpoints` (prefix lengths of `window.messages()`, as
/// [`plan_breakpoints`](crate::plan_breakpoints) and
/// [`CacheTurn::breakpoints`](crate::CacheTurn::breakpoints) give them):
/// each marker goes on the last content block of message `b - 1` (a string
/// content becomes one text block; a body's system messages are its
/// top-level `system`, and only the last of them takes a marker). The
/// one-hour TTL is written when the profile's write multiplier is 2 or more.
/// An OpenAI document is returned unchanged (its caching needs no markers).
///
/// **The planned markers replace the caller's.** Every marker already in
/// the document is removed first, wherever it sits (see
/// [`cache_marker_paths`]: the top-level automatic-caching field, tool
/// definitions, `system` blocks, message blocks, and the blocks nested in a
/// `tool_result` or a document), so the request carries the planned markers
/// and no others — the ones the [`PromptCache`](crate::PromptCache) billing
/// and `--explain` account for — and never more than [`MAX_CACHE_MARKERS`],
/// which Anthropic refuses. Of `breakpoints`, 0, positions past the window
/// and repeats are ignored; when more than [`MAX_CACHE_MARKERS`] remain,
/// the longest prefixes are kept (the end of the window first: a later
/// marker also reads an entry up to the lookback before it). The planner
/// never gives more than the profile's
/// [`max_breakpoints`](CacheProfile::max_breakpoints) (4 for Anthropic).
///
/// ```
/// use cupel_chat::{CacheProfile, Format, Message, Transcript, apply_breakpoints, count_cache_markers};
/// let t = Transcript::new(Format::Anthropic, vec![Message::user("hi"), Message::assistant("hello")]);
/// let v = apply_breakpoints(&t, &[2], &CacheProfile::anthropic());
/// assert_eq!(v[1]["content"][0]["cache_control"]["type"], "ephemeral");
/// assert!(v[0]["content"].is_string());
/// // Six breakpoints asked for a two-message window: 0, the repeated 2,
/// // and 3 and 9 (past the window) are ignored; 1 and 2 are marked.
/// let v = apply_breakpoints(&t, &[0, 1, 2, 2, 3, 9], &CacheProfile::anthropic());
/// assert_eq!(count_cache_markers(&v), 2);
/// ```
pub fn apply_breakpoints(
    window: &Transcript,
    breakpoints: &[usize],
    profile: &CacheProfile,
) -> Value {
    let mut doc = window.to_value();
    if window.format() != Format::Anthropic {
        return doc;
    }
    strip_all(&mut doc);
    let mark = marker(profile);
    let messages = window.messages();
    let is_body = doc.is_object();
    // Where window message k is written: in a body, system messages go to
    // the top-level `system` (in order) and the others to `messages`.
    let last_system = messages.iter().rposition(|m| m.role == Role::System);
    let mut wanted: Vec<usize> = breakpoints
        .iter()
        .copied()
        .filter(|&b| (1..=messages.len()).contains(&b))
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut placed = 0usize;
    for &b in wanted.iter().rev() {
        if placed == MAX_CACHE_MARKERS {
            break;
        }
        let k = b - 1;
        let content = if !is_body {
            doc.get_mut(k).and_then(|m| m.get_mut("content"))
        } else if messages[k].role == Role::System {
            if Some(k) == last_system {
                doc.get_mut("system")
            } else {
                None
            }
        } else {
            let i = messages[..k]
                .iter()
                .filter(|m| m.role != Role::System)
                .count();
            doc.get_mut("messages")
                .and_then(|ms| ms.get_mut(i))
                .and_then(|m| m.get_mut("content"))
        };
        if let Some(c) = content
            && mark_content(c, &mark)
        {
            placed += 1;
        }
    }
    doc
}
