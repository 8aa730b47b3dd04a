//! [`format_node`]: the block a node becomes in the context.

use cupel_core::CodeLanguage;

use super::RetrievalNode;

/// The first line of every node block.
pub const NODE_HEADER: &str = "--- NODE ---";

/// Formats one node as the block the gate appends to the context.
///
/// The block is, line by line: `--- NODE ---`; `id: <id>` (only when the node
/// has a non-empty id); `path: <path>` (only when
/// [`RetrievalNode::display_path`] finds one); `language: <sql|dotnet|unknown>`;
/// `compact: <true|false>`; `text:`; then `text` itself, verbatim. Lines are
/// joined with `\n` and the block has no trailing newline of its own (the text
/// keeps whatever it ends with). The same inputs always give the same bytes.
///
/// ```
/// use cupel_core::CodeLanguage;
/// use cupel_pipeline::{RetrievalNode, format_node};
/// let node = RetrievalNode::new("SELECT 1;").with_id("n1").with_path("db/one.sql");
/// assert_eq!(
///     format_node(&node, CodeLanguage::Sql, false, node.text()),
///     "--- NODE ---\nid: n1\npath: db/one.sql\nlanguage: sql\ncompact: false\ntext:\nSELECT 1;"
/// );
/// ```
pub fn format_node(
    node: &RetrievalNode,
    language: CodeLanguage,
    compacted: bool,
    text: &str,
) -> String {
    let mut out = String::with_capacity(text.len() + 96);
    out.push_str(NODE_HEADER);
    out.push('\n');
    if let Some(id) = node.id().filter(|s| !s.is_empty()) {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    if let Some(path) = node.display_path() {
        out.push_str("path: ");
        out.push_str(path);
        out.push('\n');
    }
    out.push_str("language: ");
    out.push_str(language.as_str());
    out.push_str("\ncompact: ");
    out.push_str(if compacted { "true" } else { "false" });
    out.push_str("\ntext:\n");
    out.push_str(text);
    out
}
