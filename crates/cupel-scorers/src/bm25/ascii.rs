//! UAX #29 word segmentation for ASCII text, without tables: the word
//! boundary rules restricted to the ASCII word-break classes. It gives the
//! words `unicode_words` gives on the same text (a property test compares
//! them), several times faster; text with any non-ASCII byte goes through
//! `unicode-segmentation`.

/// The UAX #29 `Word_Break` class of an ASCII byte (the classes that
/// occur in ASCII).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// CR, LF and the other newlines (VT, FF).
    Newline,
    Cr,
    Lf,
    /// SPACE (`WSegSpace`).
    Space,
    /// A-Z, a-z (`ALetter`).
    Letter,
    /// 0-9 (`Numeric`).
    Digit,
    /// `:` (`MidLetter`).
    MidLetter,
    /// `.` (`MidNumLet`) and `'` (`Single_Quote`): joins letters and digits.
    MidNumLetQ,
    /// `,` `;` (`MidNum`).
    MidNum,
    /// `_` (`ExtendNumLet`).
    Underscore,
    Other,
}

const fn class(b: u8) -> Class {
    match b {
        b'\r' => Class::Cr,
        b'\n' => Class::Lf,
        0x0B | 0x0C => Class::Newline,
        b' ' => Class::Space,
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Digit,
        b':' => Class::MidLetter,
        b'.' | b'\'' => Class::MidNumLetQ,
        b',' | b';' => Class::MidNum,
        b'_' => Class::Underscore,
        _ => Class::Other,
    }
}

/// Every byte's class, computed once.
static CLASSES: [Class; 128] = {
    let mut t = [Class::Other; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = class(i as u8);
        i += 1;
    }
    t
};

/// The class of `s[i]` (ASCII `s`).
fn at(s: &[u8], i: usize) -> Class {
    CLASSES[usize::from(s[i] & 0x7F)]
}

/// Whether UAX #29 places no boundary between `s[i - 1]` and `s[i]`
/// (`0 < i < s.len()`, all ASCII).
fn joined(s: &[u8], i: usize) -> bool {
    use Class::{Cr, Digit, Letter, Lf, MidLetter, MidNum, MidNumLetQ, Space, Underscore};
    let (a, b) = (at(s, i - 1), at(s, i));
    // Read only by the rules that look one byte further.
    let next = || (i + 1 < s.len()).then(|| at(s, i + 1));
    let prev = || i.checked_sub(2).map(|k| at(s, k));
    match (a, b) {
        (Cr, Lf) // WB3
        | (Space, Space) // WB3d
        | (Letter | Digit, Letter | Digit) // WB5, WB8, WB9, WB10
        | (Letter | Digit | Underscore, Underscore) // WB13a
        | (Underscore, Letter | Digit) => true, // WB13b
        // WB6, WB7
        (Letter, MidLetter | MidNumLetQ) => next() == Some(Letter),
        (MidLetter | MidNumLetQ, Letter) => prev() == Some(Letter),
        // WB11, WB12
        (Digit, MidNum | MidNumLetQ) => next() == Some(Digit),
        (MidNum | MidNumLetQ, Digit) => prev() == Some(Digit),
        _ => false,
    }
}

/// The end of the run of ASCII letters and digits that starts at `i` in
/// the ASCII `bytes`: eight bytes at a time while eight remain.
fn alnum_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let others = not_alnum(u64::from_le_bytes(*chunk));
        if others != 0 {
            return i + (others.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
        i += 1;
    }
    i
}

/// The high bit of every byte of `x` (eight ASCII bytes) that is not an
/// ASCII letter or digit. With every byte below 0x80, adding `0x80 - c`
/// to a byte sets its high bit exactly when the byte is at least `c`, and
/// never carries into the next byte.
fn not_alnum(x: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const fn at_least(x: u64, c: u8) -> u64 {
        x.wrapping_add(0x0101_0101_0101_0101 * (0x80 - c as u64)) & HIGH
    }
    let digit = at_least(x, b'0') & !at_least(x, b'9' + 1);
    // Setting bit 0x20 maps upper case onto lower case (and keeps every
    // byte below 0x80).
    let lower = x | 0x2020_2020_2020_2020;
    let letter = at_least(lower, b'a') & !at_least(lower, b'z' + 1);
    !(digit | letter) & HIGH
}

/// Calls `f` with every word of the ASCII `text` that holds a letter or a
/// digit, in order: what `unicode_words` yields.
pub(super) fn words<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut start = 0;
    let mut alnum = false;
    let mut i = 0;
    while i < n {
        if i > start && !joined(bytes, i) {
            if alnum {
                f(&text[start..i]);
            }
            start = i;
            alnum = false;
        }
        i += 1;
        if bytes[i - 1].is_ascii_alphanumeric() {
            alnum = true;
            // Two letters or digits are always joined (WB5, WB8-WB10): the
            // rules are read only around the other bytes.
            i = alnum_end(bytes, i);
        }
    }
    if alnum {
        f(&text[start..]);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    fn ours(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        super::words(text, |w| out.push(w));
        out
    }

    #[test]
    fn examples_match_unicode_words() {
        for t in [
            "",
            "Calvin's TRAVELS: he travelled, traveling!",
            "3.14 1,000 a.b.c e.g. U.S.A. x_y __a a__ _ 1_a a1 1a",
            "a:b a::b a. .a 'a a' a'b'c 1'2 1.2.3 1..2 a\r\nb \r\n\n",
            "item-000123 Memory synthetic payload 0123456789abcdef",
            "  \t spaces\u{b}and\u{c}feeds ",
        ] {
            let want: Vec<&str> = t.unicode_words().collect();
            assert_eq!(ours(t), want, "{t:?}");
        }
    }

    /// Every ASCII byte at every place of an eight-byte chunk.
    #[test]
    fn not_alnum_marks_exactly_the_other_bytes() {
        for b in 0u8..128 {
            for k in 0..8 {
                let mut chunk = *b"aZ09zA9a";
                chunk[k] = b;
                let want = if b.is_ascii_alphanumeric() {
                    0
                } else {
                    0x80u64 << (8 * k)
                };
                assert_eq!(
                    super::not_alnum(u64::from_le_bytes(chunk)),
                    want,
                    "{b} at {k}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Eight bytes at a time finds the byte-by-byte run end.
        #[test]
        fn alnum_end_reads_eight_bytes_as_one(t in "[\\x00-\\x7f]{0,40}", at in 0usize..40) {
            let b = t.as_bytes();
            let i = at.min(b.len());
            let mut want = i;
            while want < b.len() && b[want].is_ascii_alphanumeric() {
                want += 1;
            }
            prop_assert_eq!(super::alnum_end(b, i), want);
        }

        /// Dense in the characters the rules look at.
        #[test]
        fn random_ascii_matches_unicode_words(t in "[aZ09 .,:;'\"_\\-\r\n\t\u{b}\u{c}!@#]{0,24}") {
            let want: Vec<&str> = t.unicode_words().collect();
            prop_assert_eq!(ours(&t), want);
        }

        #[test]
        fn any_ascii_matches_unicode_words(t in "[\\x00-\\x7f]{0,40}") {
            let want: Vec<&str> = t.unicode_words().collect();
            prop_assert_eq!(ours(&t), want);
        }
    }
}
