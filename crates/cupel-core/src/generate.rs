//! Built-in variant generators (an extension: `spec/22-variants.md`):
//! [`HeadTail`] truncation to a token size and [`Placeholder`] text from a
//! template, both behind the [`VariantGenerator`] trait, and
//! [`with_generated_variants`] to attach their output to an item.
//!
//! Both are deterministic: the same item, size and counter give the same
//! bytes every time, so a shortened item does not change between turns and
//! does not break a provider's prompt cache.

use std::fmt::Write as _;

use crate::{ContextItem, CupelError, ItemVariant, TokenCounter};

/// Makes one cheaper form of an item, or none when the item is already
/// small enough.
///
/// Implementations must be deterministic: the same item and counter give
/// the same variant, byte for byte.
pub trait VariantGenerator: Send + Sync {
    /// The variant of `item`, counted with `counter`; `None` when this
    /// generator has nothing smaller to offer.
    ///
    /// # Errors
    /// Generator-specific: e.g. a size too small for the marker.
    fn generate(
        &self,
        item: &ContextItem,
        counter: &dyn TokenCounter,
    ) -> Result<Option<ItemVariant>, CupelError>;
}

/// The item with the variants `generators` make, in order, appended to the
/// ones it has. A generated variant that is not smaller than the last form
/// (it would break the rule that forms shrink) is left out, as is one with
/// the same content as the last form.
///
/// ```
/// use cupel_core::{with_generated_variants, ContextItem, HeadTail, Placeholder, TokenCounter, VariantGenerator};
/// /// One token per whitespace-separated word.
/// struct Words;
/// impl TokenCounter for Words {
///     fn count_tokens(&self, text: &str) -> i64 { text.split_whitespace().count() as i64 }
/// }
/// let log = (1..=100).map(|i| format!("line{i}")).collect::<Vec<_>>().join(" ");
/// let item = ContextItem::builder(log, 100).build()?;
/// let generators: [&dyn VariantGenerator; 2] = [
///     &HeadTail::new(20)?,
///     &Placeholder::parse("[{tokens} tokens omitted]")?,
/// ];
/// let item = with_generated_variants(&item, &generators, &Words)?;
/// assert_eq!(item.variants().len(), 2);
/// assert!(item.variants()[0].tokens() <= 20);
/// assert_eq!(item.variants()[1].content(), "[100 tokens omitted]");
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
///
/// # Errors
/// The first generator error; [`CupelError::InvalidVariant`] cannot occur
/// (unfit variants are skipped).
pub fn with_generated_variants(
    item: &ContextItem,
    generators: &[&dyn VariantGenerator],
    counter: &dyn TokenCounter,
) -> Result<ContextItem, CupelError> {
    let mut builder = item.to_builder();
    let (mut last_tokens, mut last_content) = match item.variants().last() {
        Some(v) => (v.tokens(), v.content().to_owned()),
        None => (item.tokens(), item.content().to_owned()),
    };
    for g in generators {
        if let Some(v) = g.generate(item, counter)?
            && v.tokens() >= 0
            && v.tokens() <= last_tokens
            && v.content() != last_content
            && !v.content().is_empty()
        {
            last_tokens = v.tokens();
            last_content = v.content().to_owned();
            builder = builder.variant(v);
        }
    }
    builder.build()
}

/// Head + tail truncation to a token size: keeps the beginning and the end
/// of the text and replaces the middle with a visible marker such as
/// `[… 15,865 tokens omitted …]`.
///
/// # How it cuts
/// With `total = count(content)` and `max` the size: when `total <= max`
/// there is nothing to cut (`None`). Otherwise the room for kept text is
/// `max - count(marker)` (the marker counted with the largest number it can
/// show), split `head_share` to the head (rounded down) and the rest to the
/// tail. The head is the longest prefix, cut at a character boundary, that
/// the counter counts within the head room; the tail likewise the longest
/// suffix within the tail room (both found by binary search over character
/// boundaries, so never inside a UTF-8 character). A prefix is counted on
/// its own, so the cut falls where the counter's tokens of the prefix end.
/// The marker names the tokens of the omitted middle, counted on their own,
/// with thousands separated by commas. The three parts are joined with
/// newlines and the result counted again; should it exceed `max` (a
/// tokenizer may merge across the joins), the kept room shrinks by the
/// excess and the cut is redone, until it fits or only the marker is left.
///
/// ```
/// use cupel_core::{HeadTail, TokenCounter};
/// /// One token per character, for the example.
/// struct Chars;
/// impl TokenCounter for Chars {
///     fn count_tokens(&self, text: &str) -> i64 { text.chars().count() as i64 }
/// }
/// let text = "abcdefghijklmnopqrstuvwxyz".repeat(4); // 104 characters
/// let v = HeadTail::new(60)?.truncate(&text, &Chars)?.expect("104 > 60");
/// // Marker "[… 104 tokens omitted …]" = 24 characters (at most), plus two
/// // newlines: 60 - 26 = 34 kept, head 20 (60% of 34 rounded down), tail
/// // 14; omitted 104 - 34 = 70.
/// assert_eq!(v.content(), "abcdefghijklmnopqrst\n[… 70 tokens omitted …]\nmnopqrstuvwxyz");
/// assert_eq!(v.tokens(), 20 + 1 + 23 + 1 + 14);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadTail {
    max_tokens: i64,
    head_share: f64,
}

impl HeadTail {
    /// Truncation to at most `max_tokens`, 60% of the kept text from the head.
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when `max_tokens <= 0`.
    pub fn new(max_tokens: i64) -> Result<Self, CupelError> {
        if max_tokens <= 0 {
            return Err(CupelError::InvalidArgument(format!(
                "head+tail truncation needs a size above 0 tokens (got {max_tokens})"
            )));
        }
        Ok(Self {
            max_tokens,
            head_share: 0.6,
        })
    }

    /// The share of the kept tokens that goes to the head, in `[0, 1]`
    /// (default 0.6).
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] outside `[0, 1]` or not finite.
    pub fn head_share(mut self, share: f64) -> Result<Self, CupelError> {
        if !(0.0..=1.0).contains(&share) {
            return Err(CupelError::InvalidArgument(format!(
                "head share must be within [0, 1] (got {share})"
            )));
        }
        self.head_share = share;
        Ok(self)
    }

    /// The size the output is held to.
    pub fn max_tokens(&self) -> i64 {
        self.max_tokens
    }

    /// `text` cut to the size (see the type docs), or `None` when it fits.
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when the size cannot hold even the
    /// marker alone, with both counts.
    pub fn truncate(
        &self,
        text: &str,
        counter: &dyn TokenCounter,
    ) -> Result<Option<ItemVariant>, CupelError> {
        let total = counter.count_tokens(text);
        if total <= self.max_tokens {
            return Ok(None);
        }
        let widest = format!("\n{}\n", marker(total));
        let mut room = self
            .max_tokens
            .saturating_sub(counter.count_tokens(&widest));
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
            .collect();
        loop {
            let room_now = room.max(0);
            // Rounded down; the share is in [0, 1], so the product is within [0, room].
            let head_room = (room_now as f64 * self.head_share).floor() as i64;
            let tail_room = room_now - head_room;
            let head_end = longest(&bounds, |k| {
                counter.count_tokens(&text[..bounds[k]]) <= head_room
            });
            let head_end = bounds[head_end];
            // The tail starts at the earliest boundary after the head whose
            // suffix fits: search over the boundaries from the head's end.
            let from = bounds.partition_point(|&b| b < head_end);
            let tail_start = earliest(&bounds[from..], |b| {
                counter.count_tokens(&text[b..]) <= tail_room
            });
            let (head, middle, tail) = (
                &text[..head_end],
                &text[head_end..tail_start],
                &text[tail_start..],
            );
            let omitted = counter.count_tokens(middle);
            let out = format!("{head}\n{}\n{tail}", marker(omitted));
            let tokens = counter.count_tokens(&out);
            if tokens <= self.max_tokens {
                return Ok(Some(ItemVariant::new(out, tokens)));
            }
            if room_now == 0 {
                return Err(CupelError::InvalidArgument(format!(
                    "head+tail truncation to {} tokens cannot hold its marker ({tokens} tokens)",
                    self.max_tokens
                )));
            }
            room = room_now - (tokens - self.max_tokens).max(1);
        }
    }
}

impl VariantGenerator for HeadTail {
    fn generate(
        &self,
        item: &ContextItem,
        counter: &dyn TokenCounter,
    ) -> Result<Option<ItemVariant>, CupelError> {
        self.truncate(item.content(), counter)
    }
}

/// The marker that replaces the omitted middle.
fn marker(omitted: i64) -> String {
    format!("[… {} tokens omitted …]", group_digits(omitted))
}

/// `15865` -> `15,865`.
pub(crate) fn group_digits(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The largest index `k` of `bounds` (0 always qualifies) for which `fits(k)`
/// holds, assuming `fits` holds on a prefix of the indices.
fn longest(bounds: &[usize], fits: impl Fn(usize) -> bool) -> usize {
    // Invariant: fits(lo) (0 is the empty prefix), !fits(hi) or hi = len.
    let (mut lo, mut hi) = (0usize, bounds.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The earliest boundary `b` of `bounds` (the last, the text's end, always
/// qualifies) for which `fits(b)` holds, assuming `fits` holds on a suffix.
fn earliest(bounds: &[usize], fits: impl Fn(usize) -> bool) -> usize {
    let Some(&end) = bounds.last() else { return 0 };
    let (mut lo, mut hi) = (0usize, bounds.len() - 1);
    // Invariant: fits(bounds[hi]); bounds[lo] unknown or failing.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(bounds[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    bounds.get(hi).copied().unwrap_or(end)
}

/// A placeholder variant from a template: a one-line stand-in such as
/// `[tool output of 15,865 tokens omitted: lookup_logs]`.
///
/// Fields, in braces: `{tokens}` (the item's tokens, thousands separated by
/// commas), `{kind}`, `{source}`, `{meta:KEY}` (the item's metadata value
/// for `KEY`, empty when absent). `{{` and `}}` are literal braces.
///
/// ```
/// use cupel_core::{ContextItem, ContextKind, Placeholder};
/// let item = ContextItem::builder("…", 15_865)
///     .kind(ContextKind::TOOL_OUTPUT)
///     .metadata("tool", "lookup_logs")
///     .build()?;
/// let p = Placeholder::parse("[tool output of {tokens} tokens omitted: {meta:tool}]")?;
/// assert_eq!(p.render(&item), "[tool output of 15,865 tokens omitted: lookup_logs]");
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Tokens,
    Kind,
    Source,
    Meta(String),
}

impl Placeholder {
    /// Parses a template.
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] for an unknown field, an unclosed
    /// brace or a template that renders empty text, naming the byte offset.
    pub fn parse(template: &str) -> Result<Self, CupelError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = template.char_indices().peekable();
        let bad = |at: usize, what: &str| {
            CupelError::InvalidArgument(format!(
                "placeholder template {template:?}: {what} at byte {at}"
            ))
        };
        while let Some((at, c)) = rest.next() {
            match c {
                '{' if rest.peek().map(|&(_, c)| c) == Some('{') => {
                    rest.next();
                    text.push('{');
                }
                '}' if rest.peek().map(|&(_, c)| c) == Some('}') => {
                    rest.next();
                    text.push('}');
                }
                '}' => return Err(bad(at, "an unmatched '}'")),
                '{' => {
                    let mut name = String::new();
                    loop {
                        match rest.next() {
                            Some((_, '}')) => break,
                            Some((_, c)) => name.push(c),
                            None => return Err(bad(at, "an unclosed '{'")),
                        }
                    }
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(match name.as_str() {
                        "tokens" => Part::Tokens,
                        "kind" => Part::Kind,
                        "source" => Part::Source,
                        _ => match name.strip_prefix("meta:") {
                            Some(key) if !key.is_empty() => Part::Meta(key.to_owned()),
                            _ => {
                                return Err(bad(
                                    at,
                                    &format!(
                                        "unknown field {{{name}}} (known: tokens, kind, source, meta:KEY)"
                                    ),
                                ));
                            }
                        },
                    });
                }
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        if !parts
            .iter()
            .any(|p| !matches!(p, Part::Text(t) if t.is_empty()) && !matches!(p, Part::Meta(_)))
        {
            return Err(bad(0, "a template that can render empty text"));
        }
        Ok(Self { parts })
    }

    /// The placeholder text for `item`.
    pub fn render(&self, item: &ContextItem) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Tokens => out.push_str(&group_digits(item.tokens())),
                Part::Kind => {
                    let _ = write!(out, "{}", item.kind());
                }
                Part::Source => {
                    let _ = write!(out, "{}", item.source());
                }
                Part::Meta(key) => {
                    if let Some(v) = item.metadata_value(key) {
                        out.push_str(v);
                    }
                }
            }
        }
        out
    }
}

impl VariantGenerator for Placeholder {
    fn generate(
        &self,
        item: &ContextItem,
        counter: &dyn TokenCounter,
    ) -> Result<Option<ItemVariant>, CupelError> {
        let text = self.render(item);
        let tokens = counter.count_tokens(&text);
        Ok(Some(ItemVariant::new(text, tokens)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per character.
    struct Chars;
    impl TokenCounter for Chars {
        fn count_tokens(&self, text: &str) -> i64 {
            text.chars().count() as i64
        }
    }

    /// One token per whitespace-separated word.
    struct Words;
    impl TokenCounter for Words {
        fn count_tokens(&self, text: &str) -> i64 {
            text.split_whitespace().count() as i64
        }
    }

    proptest::proptest! {
        /// Any text, any size: within the size (or an error when even the
        /// marker does not fit), head and tail are a prefix and a suffix of
        /// the text, and the same input gives the same bytes.
        #[test]
        fn head_tail_holds_its_size_and_keeps_prefix_and_suffix(
            text in "\\PC{0,300}",
            size in 1i64..120,
            share in 0.0f64..=1.0,
            words in proptest::bool::ANY,
        ) {
            let cut = HeadTail::new(size).unwrap().head_share(share).unwrap();
            let counter: &dyn TokenCounter = if words { &Words } else { &Chars };
            match cut.truncate(&text, counter) {
                Ok(None) => proptest::prop_assert!(counter.count_tokens(&text) <= size),
                Ok(Some(v)) => {
                    proptest::prop_assert!(v.tokens() <= size);
                    proptest::prop_assert_eq!(v.tokens(), counter.count_tokens(v.content()));
                    let again = cut.truncate(&text, counter).unwrap().unwrap();
                    proptest::prop_assert_eq!(&again, &v);
                    let (head, rest) = v.content().split_once("\n[… ").unwrap();
                    let tail = &rest[rest.find(" …]\n").unwrap() + " …]\n".len()..];
                    proptest::prop_assert!(text.starts_with(head));
                    proptest::prop_assert!(text.ends_with(tail));
                    proptest::prop_assert!(head.len() + tail.len() <= text.len());
                }
                Err(CupelError::InvalidArgument(_)) => {}
                Err(e) => proptest::prop_assert!(false, "unexpected error {e}"),
            }
        }
    }

    #[test]
    fn digits_are_grouped_by_three() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(15_865), "15,865");
        assert_eq!(group_digits(1_000_000), "1,000,000");
        assert_eq!(group_digits(-1_234), "-1,234");
    }

    #[test]
    fn text_within_the_size_is_not_cut() {
        assert_eq!(
            HeadTail::new(10).unwrap().truncate("short", &Chars),
            Ok(None)
        );
    }

    #[test]
    fn head_and_tail_by_words_with_the_marker() {
        let text: Vec<String> = (1..=1000).map(|i| format!("w{i}")).collect();
        let text = text.join(" ");
        let v = HeadTail::new(50)
            .unwrap()
            .truncate(&text, &Words)
            .unwrap()
            .unwrap();
        // Marker "[… 1,000 tokens omitted …]" is 5 words: room 50 - 5 = 45,
        // head floor(45 * 0.6) = 27 words, tail 18 words. A prefix of 27
        // words may end with the space after w27 (still 27 words): the
        // longest such prefix ends right before "w28". The tail starts at the
        // earliest boundary whose suffix has 18 words: the space before "w983".
        // Omitted: w28..=w982 = 955 words.
        let head: Vec<String> = (1..=27).map(|i| format!("w{i}")).collect();
        let tail: Vec<String> = (983..=1000).map(|i| format!("w{i}")).collect();
        // (The cuts keep the spaces next to them: " w983" has 18 words too.)
        let want = format!(
            "{} \n[… 955 tokens omitted …]\n {}",
            head.join(" "),
            tail.join(" ")
        );
        assert_eq!(v.content(), want);
        // 27 + 5 + 18 = 50 words.
        assert_eq!(v.tokens(), 50);
    }

    #[test]
    fn never_cuts_inside_a_utf8_character_and_is_deterministic() {
        let text = "é☃😀".repeat(50); // 150 characters of 2, 3 and 4 bytes
        let a = HeadTail::new(40)
            .unwrap()
            .truncate(&text, &Chars)
            .unwrap()
            .unwrap();
        let b = HeadTail::new(40)
            .unwrap()
            .truncate(&text, &Chars)
            .unwrap()
            .unwrap();
        assert_eq!(a, b);
        assert!(a.tokens() <= 40);
        // Marker "[… 150 tokens omitted …]" + 2 newlines = 24 + 2 = 26
        // characters: room 40 - 26 = 14, head 8, tail 6; omitted 150 - 14 = 136.
        let want = "é☃😀é☃😀é☃\n[… 136 tokens omitted …]\né☃😀é☃😀";
        assert_eq!(a.content(), want);
    }

    #[test]
    fn a_size_below_the_marker_is_an_error_with_the_numbers() {
        let text = "x".repeat(500);
        let err = HeadTail::new(5)
            .unwrap()
            .truncate(&text, &Chars)
            .unwrap_err();
        // Marker "[… 500 tokens omitted …]" (24) + 2 newlines = 26 > 5.
        assert_eq!(
            err,
            CupelError::InvalidArgument(
                "head+tail truncation to 5 tokens cannot hold its marker (26 tokens)".into()
            )
        );
        assert!(HeadTail::new(0).is_err());
        assert!(HeadTail::new(5).unwrap().head_share(1.5).is_err());
    }

    #[test]
    fn placeholder_templates_are_checked() {
        assert!(Placeholder::parse("{nope}").is_err());
        assert!(Placeholder::parse("{tokens").is_err());
        assert!(Placeholder::parse("a } b").is_err());
        assert!(Placeholder::parse("{meta:tool}").is_err()); // may render empty
        let p = Placeholder::parse("{{literal}} {kind}/{source}: {tokens}").unwrap();
        let item = ContextItem::new("x", 1234).unwrap();
        assert_eq!(p.render(&item), "{literal} Message/Chat: 1,234");
    }

    #[test]
    fn generated_variants_shrink_and_skip_what_does_not() {
        let text: Vec<String> = (1..=100).map(|i| format!("w{i}")).collect();
        let item = ContextItem::new(text.join(" "), 100).unwrap();
        let big = Placeholder::parse("{tokens} {tokens} {tokens}").unwrap();
        let gens: [&dyn VariantGenerator; 3] = [
            &HeadTail::new(30).unwrap(),
            // 3 words: smaller than 30, kept.
            &Placeholder::parse("[{tokens} tokens omitted]").unwrap(),
            // 3 words again, but not smaller than the last form's 3: kept
            // only if its content differs -- it does, and 3 <= 3.
            &big,
        ];
        let out = with_generated_variants(&item, &gens, &Words).unwrap();
        let tokens: Vec<i64> = out.variants().iter().map(ItemVariant::tokens).collect();
        assert_eq!(tokens, [30, 3, 3]);
        // Twice the same generator: the second adds nothing (same content).
        let gens: [&dyn VariantGenerator; 2] = [&big, &big];
        let out = with_generated_variants(&item, &gens, &Words).unwrap();
        assert_eq!(out.variants().len(), 1);
    }
}
