//! Writing planned `cache_control` markers into an Anthropic request.

use serde_json::{Map, Value, json};

use crate::cache::profile::CacheProfile;
use crate::message::Role;
use crate::transcript::Transcript;
use crate::wire::Format;

fn marker(profile: &CacheProfile) -> Value {
    if profile.write_multiplier >= 2.0 {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    }
}

/// Removes every `cache_control` from a content value (string content has none).
fn strip(content: &mut Value) {
    if let Value::Array(blocks) = content {
        for b in blocks {
            if let Value::Object(o) = b {
                o.remove("cache_control");
            }
        }
    }
}

/// Puts `mark` on the last block of `content`, turning a string into one text block.
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
/// content becomes one text block; a top-level `system` becomes a block
/// array). Markers already in the document are removed first, so the request
/// never carries more than the planned ones; the one-hour TTL is written when
/// the profile's write multiplier is 2 or more. An OpenAI document is
/// returned unchanged (its caching needs no markers).
///
/// ```
/// use cupel_chat::{CacheProfile, Format, Message, Transcript, apply_breakpoints};
/// let t = Transcript::new(Format::Anthropic, vec![Message::user("hi"), Message::assistant("hello")]);
/// let v = apply_breakpoints(&t, &[2], &CacheProfile::anthropic());
/// assert_eq!(v[1]["content"][0]["cache_control"]["type"], "ephemeral");
/// assert!(v[0]["content"].is_string());
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
    let mark = marker(profile);
    // A body moves leading system messages to the top-level `system`.
    let system_count = match &doc {
        Value::Object(_) => window
            .messages()
            .iter()
            .take_while(|m| m.role == Role::System)
            .count(),
        _ => 0,
    };
    let (system, messages) = match &mut doc {
        Value::Object(o) => {
            let mut system = o.remove("system");
            let messages = o.remove("messages");
            if let Some(s) = system.as_mut() {
                strip(s);
            }
            (system, messages)
        }
        other => (None, Some(std::mem::take(other))),
    };
    let mut system = system;
    let mut messages = messages.unwrap_or(Value::Array(Vec::new()));
    if let Value::Array(ms) = &mut messages {
        for m in ms.iter_mut() {
            if let Some(c) = m.get_mut("content") {
                strip(c);
            }
        }
        for &b in breakpoints {
            if b == 0 {
                continue;
            }
            let k = b - 1;
            if k < system_count {
                if k + 1 == system_count
                    && let Some(s) = system.as_mut()
                {
                    mark_content(s, &mark);
                }
            } else if let Some(c) = ms
                .get_mut(k - system_count)
                .and_then(|m| m.get_mut("content"))
            {
                mark_content(c, &mark);
            }
        }
    }
    match &mut doc {
        Value::Object(o) => {
            if let Some(s) = system {
                o.insert("system".into(), s);
            }
            o.insert("messages".into(), messages);
            doc
        }
        _ => messages,
    }
}
