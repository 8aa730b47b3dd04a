//! `cargo xtask spec`: check the links of `spec/*.md` and render it to HTML.
//!
//! Every chapter is read, its headings are turned into GitHub-style anchors,
//! and every reference is checked before anything is written:
//!
//! * a relative link (or image) must point at a file or directory that exists;
//! * a `#anchor` must match a heading of the chapter it points into (the same
//!   chapter for `#anchor` alone);
//! * a path under `conformance/` — as a link target or as an inline code span
//!   such as `` `conformance/required/scoring/` `` — must exist;
//! * `spec/README.md` (the index) must link every other chapter.
//!
//! Failures are reported as `spec/FILE:LINE: ...`, all at once. When there are
//! none, each chapter becomes `target/spec/NAME.html` (links to `.md` chapters
//! rewritten to `.html`, headings given their anchors as ids) and a small
//! `target/spec/index.html` lists the chapters.
//!
//! External links (`https://…`, `mailto:…`) are not fetched. Code blocks are
//! not scanned: they hold examples, not references.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// Entry point for `cargo xtask spec`.
pub(crate) fn run() -> Result<(), String> {
    build(&crate::workspace_root())
}

/// Checks `ROOT/spec/*.md` and, if every reference resolves, renders it to
/// `ROOT/target/spec/`.
pub(crate) fn build(root: &Path) -> Result<(), String> {
    let spec_dir = root.join("spec");
    let chapters = load_chapters(&spec_dir)?;
    let problems = check(root, &spec_dir, &chapters);
    if !problems.is_empty() {
        return Err(format!(
            "spec: {} broken reference(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        ));
    }
    let out = root.join("target").join("spec");
    render_all(&out, &chapters)?;
    let refs: usize = chapters.iter().map(|c| c.doc.refs.len()).sum();
    eprintln!(
        "==> spec: {} chapters, {} references checked, HTML in {}",
        chapters.len(),
        refs,
        out.display()
    );
    Ok(())
}

/// One Markdown chapter, read and analysed.
#[derive(Debug)]
struct Chapter {
    /// File name inside `spec/`, e.g. `02-data-model.md`.
    file: String,
    source: String,
    doc: Doc,
}

/// What the checker and the renderer need from one Markdown document.
#[derive(Debug, Default, PartialEq)]
struct Doc {
    /// Text of the first level-1 heading (the chapter title), if any.
    title: Option<String>,
    /// Anchor of every heading, in document order.
    slugs: Vec<String>,
    /// Every link, image and `conformance/` code span, in document order.
    refs: Vec<Reference>,
}

/// Something in a document that names another place.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    /// 1-based line of the reference in its document.
    line: usize,
    /// The link destination or code-span text, as written.
    target: String,
    kind: RefKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum RefKind {
    Link,
    Image,
    /// An inline code span naming a path under `conformance/`.
    CodePath,
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES
}

fn load_chapters(spec_dir: &Path) -> Result<Vec<Chapter>, String> {
    let entries =
        fs::read_dir(spec_dir).map_err(|e| format!("cannot read {}: {e}", spec_dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", spec_dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && entry.path().is_file() {
            files.push(name);
        }
    }
    if files.is_empty() {
        return Err(format!("no Markdown chapters in {}", spec_dir.display()));
    }
    // The index first, then the chapters by name.
    files.sort_by(|a, b| (a != "README.md", a).cmp(&(b != "README.md", b)));
    files
        .into_iter()
        .map(|file| {
            let path = spec_dir.join(&file);
            let source = fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let doc = analyze(&source);
            Ok(Chapter { file, source, doc })
        })
        .collect()
}

// ----- anchors ---------------------------------------------------------------

/// The GitHub anchor of a heading's text (before de-duplication): lower-case,
/// every space becomes `-`, and everything but letters, digits, `_` and `-` is
/// dropped.
fn slugify(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// Hands out anchors for the headings of one document, the way GitHub does:
/// the second `Notes` heading gets `notes-1`, the third `notes-2`, and so on.
#[derive(Debug, Default)]
struct Slugger {
    occurrences: BTreeMap<String, usize>,
}

impl Slugger {
    fn slug(&mut self, text: &str) -> String {
        let base = slugify(text);
        let mut slug = base.clone();
        while self.occurrences.contains_key(&slug) {
            let n = self.occurrences.entry(base.clone()).or_insert(0);
            *n += 1;
            slug = format!("{base}-{n}");
        }
        self.occurrences.insert(slug.clone(), 0);
        slug
    }
}

// ----- analysis --------------------------------------------------------------

/// Reads headings and references out of a Markdown document.
fn analyze(source: &str) -> Doc {
    let mut doc = Doc::default();
    let mut slugger = Slugger::default();
    // Text of the heading being read, and whether it is level 1.
    let mut heading: Option<(String, bool)> = None;
    for (event, range) in Parser::new_ext(source, options()).into_offset_iter() {
        let line = line_of(source, range.start);
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((String::new(), level == pulldown_cmark::HeadingLevel::H1));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((text, h1)) = heading.take() {
                    if h1 && doc.title.is_none() {
                        doc.title = Some(text.clone());
                    }
                    doc.slugs.push(slugger.slug(&text));
                }
            }
            Event::Text(t) => {
                if let Some((text, _)) = heading.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some((text, _)) = heading.as_mut() {
                    text.push_str(&t);
                }
                if is_conformance_path(&t) {
                    doc.refs.push(Reference {
                        line,
                        target: t.to_string(),
                        kind: RefKind::CodePath,
                    });
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => doc.refs.push(Reference {
                line,
                target: dest_url.to_string(),
                kind: RefKind::Link,
            }),
            Event::Start(Tag::Image { dest_url, .. }) => doc.refs.push(Reference {
                line,
                target: dest_url.to_string(),
                kind: RefKind::Image,
            }),
            _ => {}
        }
    }
    doc
}

fn line_of(source: &str, offset: usize) -> usize {
    source
        .get(..offset)
        .map_or(0, |s| s.bytes().filter(|&b| b == b'\n').count())
        + 1
}

/// A code span that is nothing but a path under `conformance/` (no spaces,
/// globs, braces or placeholders: those are patterns, not references).
fn is_conformance_path(text: &str) -> bool {
    text.starts_with("conformance/")
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
}

/// `https://…`, `mailto:…` and other scheme-qualified targets.
fn is_external(target: &str) -> bool {
    match target.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Resolves `.` and `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Minimal percent-decoding for link paths (`%20` and friends).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match (bytes.get(i), bytes.get(i + 1), bytes.get(i + 2)) {
            (Some(b'%'), Some(&h), Some(&l)) => match (hex(h), hex(l)) {
                (Some(h), Some(l)) => Some(h * 16 + l),
                _ => None,
            },
            _ => None,
        };
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.extend(bytes.get(i).copied());
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

// ----- checking --------------------------------------------------------------

/// Every broken reference in `chapters`, as `spec/FILE:LINE: message`.
fn check(root: &Path, spec_dir: &Path, chapters: &[Chapter]) -> Vec<String> {
    let root = normalize(root);
    let spec_dir = normalize(spec_dir);
    let mut anchors: BTreeMap<PathBuf, BTreeSet<String>> = chapters
        .iter()
        .map(|c| {
            (
                spec_dir.join(&c.file),
                c.doc.slugs.iter().cloned().collect(),
            )
        })
        .collect();
    let mut problems = Vec::new();
    for chapter in chapters {
        let here = spec_dir.join(&chapter.file);
        for r in &chapter.doc.refs {
            let found = match r.kind {
                RefKind::CodePath => check_code_path(&root, &r.target),
                RefKind::Link | RefKind::Image => {
                    check_link(&root, &spec_dir, &here, &r.target, &mut anchors)
                }
            };
            if let Err(msg) = found {
                problems.push(format!("spec/{}:{}: {msg}", chapter.file, r.line));
            }
        }
    }
    problems.extend(check_index(&spec_dir, chapters));
    problems
}

fn check_code_path(root: &Path, target: &str) -> Result<(), String> {
    if root.join(target).exists() {
        Ok(())
    } else {
        Err(format!(
            "`{target}` names a conformance path that does not exist"
        ))
    }
}

fn check_link(
    root: &Path,
    spec_dir: &Path,
    here: &Path,
    target: &str,
    anchors: &mut BTreeMap<PathBuf, BTreeSet<String>>,
) -> Result<(), String> {
    if is_external(target) {
        return Ok(());
    }
    if target.is_empty() {
        return Err("empty link target".to_string());
    }
    if target.starts_with('/') {
        return Err(format!(
            "link `{target}` is absolute; use a path relative to the chapter"
        ));
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        here.to_path_buf()
    } else {
        let dir = here.parent().unwrap_or(spec_dir);
        normalize(&dir.join(percent_decode(path)))
    };
    if !file.starts_with(root) {
        return Err(format!("link `{target}` points outside the workspace"));
    }
    let shown = display_path(root, &file);
    if !file.exists() {
        let what = if file.starts_with(root.join("conformance")) {
            "a conformance path that does not exist"
        } else {
            "a file that does not exist"
        };
        return Err(format!("link `{target}` points to {what}: {shown}"));
    }
    let Some(fragment) = fragment else {
        return Ok(());
    };
    if fragment.is_empty() {
        return Err(format!("link `{target}` has an empty #anchor"));
    }
    if file.extension().and_then(|e| e.to_str()) != Some("md") {
        return Err(format!(
            "link `{target}` has an #anchor but {shown} is not a Markdown chapter"
        ));
    }
    let slugs = match anchors.get(&file) {
        Some(s) => s,
        None => {
            let source = fs::read_to_string(&file)
                .map_err(|e| format!("link `{target}`: cannot read {shown}: {e}"))?;
            let slugs = analyze(&source).slugs.into_iter().collect();
            anchors.entry(file.clone()).or_insert(slugs)
        }
    };
    let fragment = percent_decode(fragment);
    if slugs.contains(&fragment) {
        Ok(())
    } else {
        Err(format!(
            "link `{target}`: no heading in {shown} has the anchor `#{fragment}`"
        ))
    }
}

/// `spec/README.md`, when present, must link every other chapter.
fn check_index(spec_dir: &Path, chapters: &[Chapter]) -> Vec<String> {
    let Some(index) = chapters.iter().find(|c| c.file == "README.md") else {
        return Vec::new();
    };
    let linked: BTreeSet<PathBuf> = index
        .doc
        .refs
        .iter()
        .filter(|r| r.kind == RefKind::Link && !is_external(&r.target))
        .map(|r| {
            let path = r.target.split('#').next().unwrap_or_default();
            normalize(&spec_dir.join(percent_decode(path)))
        })
        .collect();
    chapters
        .iter()
        .filter(|c| c.file != "README.md" && !linked.contains(&spec_dir.join(&c.file)))
        .map(|c| {
            format!(
                "spec/README.md: the index does not link the chapter {}",
                c.file
            )
        })
        .collect()
}

fn display_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

// ----- rendering -------------------------------------------------------------

fn render_all(out: &Path, chapters: &[Chapter]) -> Result<(), String> {
    fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut index = String::from("<h1>Cupel specification</h1>\n<ul>\n");
    for chapter in chapters {
        let name = html_name(&chapter.file);
        let title = chapter
            .doc
            .title
            .clone()
            .unwrap_or_else(|| chapter.file.clone());
        let page = page(&title, &render_body(chapter));
        let path = out.join(&name);
        fs::write(&path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        index.push_str(&format!(
            "<li><a href=\"{}\">{}</a></li>\n",
            escape(&name),
            escape(&title)
        ));
    }
    index.push_str("</ul>\n");
    let path = out.join("index.html");
    fs::write(&path, page("Cupel specification", &index))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn html_name(md_file: &str) -> String {
    match md_file.strip_suffix(".md") {
        Some(stem) => format!("{stem}.html"),
        None => md_file.to_string(),
    }
}

/// The chapter's HTML: headings carry their anchors as ids, links are rewritten.
fn render_body(chapter: &Chapter) -> String {
    let mut slugs = chapter.doc.slugs.iter();
    let events = Parser::new_ext(&chapter.source, options()).map(|event| match event {
        Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) => Event::Start(Tag::Heading {
            level,
            id: slugs.next().map(|s| CowStr::from(s.clone())).or(id),
            classes,
            attrs,
        }),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::from(rewrite_link(&dest_url)),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: CowStr::from(rewrite_link(&dest_url)),
            title,
            id,
        }),
        other => other,
    });
    let mut body = String::new();
    html::push_html(&mut body, events);
    body
}

/// Where a link written in `spec/X.md` must point from `target/spec/X.html`:
/// sibling chapters become `.html`; anything else is one directory further up.
fn rewrite_link(target: &str) -> String {
    if is_external(target) || target.starts_with('#') || target.starts_with('/') {
        return target.to_string();
    }
    let (path, fragment) = match target.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (target, None),
    };
    let sibling_chapter = !path.contains('/') && path.ends_with(".md");
    let mut out = if sibling_chapter {
        html_name(path)
    } else {
        format!("../{path}")
    };
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <nav><a href=\"index.html\">Cupel specification</a></nav>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

const STYLE: &str = "body { max-width: 52rem; margin: 2rem auto; padding: 0 1rem; \
font-family: system-ui, sans-serif; line-height: 1.5; }
pre { background: #f5f5f5; padding: .75rem; overflow-x: auto; }
code { font-size: .95em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; vertical-align: top; }
";

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugify_follows_github() {
        assert_eq!(slugify("Effective budget"), "effective-budget");
        assert_eq!(slugify("Stage 1: Classify"), "stage-1-classify");
        assert_eq!(slugify("D-1: item identity"), "d-1-item-identity");
        assert_eq!(slugify("What's new?"), "whats-new");
        // Each space becomes a hyphen; runs are not collapsed.
        assert_eq!(slugify("A & B"), "a--b");
        assert_eq!(slugify("snake_case (kept)"), "snake_case-kept");
        assert_eq!(slugify("Über Größe"), "über-größe");
        assert_eq!(slugify("cupel.stage.* spans"), "cupelstage-spans");
        assert_eq!(slugify(""), "");
    }

    #[test]
    fn slugger_numbers_repeated_headings() {
        let mut s = Slugger::default();
        assert_eq!(s.slug("Notes"), "notes");
        assert_eq!(s.slug("Notes"), "notes-1");
        assert_eq!(s.slug("Notes"), "notes-2");
        // A heading whose own slug collides with a generated one.
        let mut s = Slugger::default();
        assert_eq!(s.slug("Notes"), "notes");
        assert_eq!(s.slug("Notes 1"), "notes-1");
        assert_eq!(s.slug("Notes"), "notes-2");
    }

    #[test]
    fn analyze_collects_headings_links_and_conformance_spans() {
        let src = "# The `Scorer` trait\n\
                   \n\
                   See [budget](02-data-model.md#effective-budget) and ![x](img.png).\n\
                   \n\
                   ## *Edge* cases\n\
                   \n\
                   Vectors: `conformance/required/scoring/`, not `conformance/{a,b}/`\n\
                   or `x/conformance/`.\n\
                   \n\
                   ```text\n\
                   [not a link](nowhere.md) `conformance/nope/`\n\
                   ```\n\
                   ## Edge cases\n";
        let doc = analyze(src);
        assert_eq!(doc.title.as_deref(), Some("The Scorer trait"));
        assert_eq!(
            doc.slugs,
            ["the-scorer-trait", "edge-cases", "edge-cases-1"]
        );
        assert_eq!(
            doc.refs,
            [
                Reference {
                    line: 3,
                    target: "02-data-model.md#effective-budget".into(),
                    kind: RefKind::Link
                },
                Reference {
                    line: 3,
                    target: "img.png".into(),
                    kind: RefKind::Image
                },
                Reference {
                    line: 7,
                    target: "conformance/required/scoring/".into(),
                    kind: RefKind::CodePath
                },
            ]
        );
    }

    #[test]
    fn external_targets_are_recognised() {
        assert!(is_external("https://example.com/a.md#x"));
        assert!(is_external("mailto:someone@example.com"));
        assert!(!is_external("02-data-model.md#effective-budget"));
        assert!(!is_external("../conformance/required/"));
        assert!(!is_external("#anchor"));
    }

    #[test]
    fn links_are_rewritten_for_target_spec() {
        assert_eq!(
            rewrite_link("02-data-model.md#effective-budget"),
            "02-data-model.html#effective-budget"
        );
        assert_eq!(rewrite_link("README.md"), "README.html");
        assert_eq!(
            rewrite_link("../conformance/required/"),
            "../../conformance/required/"
        );
        assert_eq!(rewrite_link("../README.md#x"), "../../README.md#x");
        assert_eq!(rewrite_link("#local"), "#local");
        assert_eq!(rewrite_link("https://x.org/a.md"), "https://x.org/a.md");
    }

    #[test]
    fn normalize_resolves_dot_segments() {
        assert_eq!(
            normalize(Path::new("/r/spec/../conformance/./required")),
            PathBuf::from("/r/conformance/required")
        );
        assert_eq!(percent_decode("a%20b%zz"), "a b%zz");
    }

    /// A scratch workspace that removes itself.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "xtask-spec-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("spec")).unwrap();
            Scratch(dir)
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.0.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn checker_reports_each_broken_reference_with_its_line() {
        let ws = Scratch::new("broken");
        ws.write("conformance/required/scoring/a.toml", "");
        ws.write("LICENSE", "");
        ws.write("spec/README.md", "# Index\n\n[A](a.md) [B](b.md#beta)\n");
        ws.write(
            "spec/a.md",
            "# Alpha\n\
             \n\
             ## Details\n\
             \n\
             [ok](b.md#beta) [self](#details) [web](https://example.com/x#y)\n\
             [bad anchor](b.md#gamma)\n\
             [missing](c.md)\n\
             [bad self](#nope)\n\
             [dir](../conformance/required/scoring/) `conformance/required/scoring/a.toml`\n\
             [gone](../conformance/optional/) `conformance/required/pipeline/`\n\
             [file anchor](../LICENSE#x) [outside](../../elsewhere.md)\n",
        );
        ws.write("spec/b.md", "# Beta\n");
        let chapters = load_chapters(&ws.0.join("spec")).unwrap();
        let problems = check(&ws.0, &ws.0.join("spec"), &chapters);
        assert_eq!(
            problems,
            [
                "spec/a.md:6: link `b.md#gamma`: no heading in spec/b.md has the anchor `#gamma`",
                "spec/a.md:7: link `c.md` points to a file that does not exist: spec/c.md",
                "spec/a.md:8: link `#nope`: no heading in spec/a.md has the anchor `#nope`",
                "spec/a.md:10: link `../conformance/optional/` points to a conformance path \
                 that does not exist: conformance/optional",
                "spec/a.md:10: `conformance/required/pipeline/` names a conformance path \
                 that does not exist",
                "spec/a.md:11: link `../LICENSE#x` has an #anchor but LICENSE is not a \
                 Markdown chapter",
                "spec/a.md:11: link `../../elsewhere.md` points outside the workspace",
            ]
        );
    }

    #[test]
    fn checker_reads_anchors_of_markdown_outside_spec() {
        let ws = Scratch::new("outside");
        ws.write("README.md", "# Top\n\n## Conformance level\n");
        ws.write(
            "spec/README.md",
            "# Index\n\n[ok](../README.md#conformance-level) [no](../README.md#install)\n",
        );
        let chapters = load_chapters(&ws.0.join("spec")).unwrap();
        let problems = check(&ws.0, &ws.0.join("spec"), &chapters);
        assert_eq!(
            problems,
            [
                "spec/README.md:3: link `../README.md#install`: no heading in README.md has the anchor `#install`"
            ]
        );
    }

    #[test]
    fn index_must_link_every_chapter() {
        let ws = Scratch::new("index");
        ws.write("spec/README.md", "# Index\n\n[A](a.md#alpha)\n");
        ws.write("spec/a.md", "# Alpha\n");
        ws.write("spec/b.md", "# Beta\n");
        let chapters = load_chapters(&ws.0.join("spec")).unwrap();
        let problems = check(&ws.0, &ws.0.join("spec"), &chapters);
        assert_eq!(
            problems,
            ["spec/README.md: the index does not link the chapter b.md"]
        );
    }

    #[test]
    fn build_renders_chapters_and_index() {
        let ws = Scratch::new("render");
        ws.write("spec/README.md", "# Index\n\n[A](a.md#two-words)\n");
        ws.write(
            "spec/a.md",
            "# A & B\n\n## Two words\n\n[back](README.md)\n",
        );
        build(&ws.0).unwrap();
        let out = ws.0.join("target/spec");
        let a = fs::read_to_string(out.join("a.html")).unwrap();
        assert!(a.contains("<title>A &amp; B</title>"), "{a}");
        assert!(a.contains("<h2 id=\"two-words\">Two words</h2>"), "{a}");
        assert!(a.contains("<a href=\"README.html\">back</a>"), "{a}");
        let readme = fs::read_to_string(out.join("README.html")).unwrap();
        assert!(readme.contains("href=\"a.html#two-words\""), "{readme}");
        let index = fs::read_to_string(out.join("index.html")).unwrap();
        assert!(
            index.contains("<a href=\"a.html\">A &amp; B</a>"),
            "{index}"
        );
        assert!(
            index.contains("<a href=\"README.html\">Index</a>"),
            "{index}"
        );
    }

    #[test]
    fn build_fails_without_writing_on_a_broken_link() {
        let ws = Scratch::new("fail");
        ws.write("spec/README.md", "# Index\n\n[A](missing.md)\n");
        let err = build(&ws.0).unwrap_err();
        assert!(err.contains("spec/README.md:3: link `missing.md`"), "{err}");
        assert!(!ws.0.join("target/spec").exists());
    }
}
