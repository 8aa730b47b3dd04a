//! What can be read from media bytes without decoding the media: base64
//! text, image sizes from file headers, the page count of a PDF.

/// The value of one base64 character (standard or URL-safe alphabet).
fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// Decodes the first `max_bytes` bytes of base64 text. ASCII whitespace is
/// skipped; decoding stops at padding or any other character.
pub(crate) fn base64_prefix(text: &str, max_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(max_bytes.min(text.len()));
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        if c.is_ascii_whitespace() {
            continue;
        }
        let Some(v) = sextet(c) else { break };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
            if out.len() >= max_bytes {
                break;
            }
        }
    }
    out
}

/// How many bytes base64 text decodes to: three for every four base64
/// characters (whitespace and padding are not counted).
///
/// "AAAA" is 3 bytes, "AAAAAA==" is 4 (six characters, 36 bits: 4 whole bytes).
pub(crate) fn base64_decoded_len(text: &str) -> usize {
    let chars = text.bytes().filter(|c| sextet(*c).is_some()).count();
    chars / 4 * 3 + (chars % 4 * 6) / 8
}

/// Width and height from a PNG or GIF header.
pub(crate) fn image_header_dimensions(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() >= 24 && b.starts_with(b"\x89PNG\r\n\x1a\n") && &b[12..16] == b"IHDR" {
        let w = u32::from_be_bytes([b[16], b[17], b[18], b[19]]);
        let h = u32::from_be_bytes([b[20], b[21], b[22], b[23]]);
        return Some((w, h));
    }
    if b.len() >= 10 && b.starts_with(b"GIF8") {
        let w = u32::from(u16::from_le_bytes([b[6], b[7]]));
        let h = u32::from(u16::from_le_bytes([b[8], b[9]]));
        return Some((w, h));
    }
    None
}

/// How much of a base64 image [`image_size`] decodes at most: a JPEG's size
/// comes after its metadata segments (EXIF, ICC profile, a thumbnail), which
/// rarely take more.
pub(crate) const IMAGE_HEADER_BYTES: usize = 256 * 1024;

/// Width and height of a PNG, GIF, WebP or JPEG image from its first bytes.
pub(crate) fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    image_header_dimensions(b)
        .or_else(|| webp_size(b))
        .or_else(|| jpeg_size(b))
}

fn u24_le(b: &[u8]) -> u32 {
    u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16
}

/// A WebP's canvas size: `VP8X` (extended), `VP8L` (lossless) or `VP8 `
/// (lossy) as the first chunk.
fn webp_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 30 || &b[0..4] != b"RIFF" || &b[8..12] != b"WEBP" {
        return None;
    }
    match &b[12..16] {
        b"VP8X" => Some((u24_le(&b[24..27]) + 1, u24_le(&b[27..30]) + 1)),
        b"VP8L" if b[20] == 0x2f => {
            let bits = u32::from_le_bytes([b[21], b[22], b[23], b[24]]);
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8 " if b[23..26] == [0x9d, 0x01, 0x2a] => {
            let w = u32::from(u16::from_le_bytes([b[26], b[27]]) & 0x3fff);
            let h = u32::from(u16::from_le_bytes([b[28], b[29]]) & 0x3fff);
            Some((w, h))
        }
        _ => None,
    }
}

/// A JPEG's size from its start-of-frame segment, walking the segments
/// before it.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    if !b.starts_with(&[0xff, 0xd8]) {
        return None;
    }
    let mut i = 2;
    loop {
        // Markers are 0xFF then a code; extra 0xFF bytes are fill.
        while *b.get(i)? != 0xff {
            i += 1;
        }
        while *b.get(i)? == 0xff {
            i += 1;
        }
        let code = *b.get(i)?;
        i += 1;
        match code {
            // Markers without a length: TEM, RST0-7, SOI.
            0x01 | 0xd0..=0xd8 => continue,
            // Start of scan or end of image before any frame: no size here.
            0xd9 | 0xda => return None,
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]));
        // SOF0-15 carry the size, except DHT (C4), JPG (C8) and DAC (CC).
        if (0xc0..=0xcf).contains(&code) && !matches!(code, 0xc4 | 0xc8 | 0xcc) {
            let h = u16::from_be_bytes([*b.get(i + 3)?, *b.get(i + 4)?]);
            let w = u16::from_be_bytes([*b.get(i + 5)?, *b.get(i + 6)?]);
            return Some((u32::from(w), u32::from(h)));
        }
        i += len.max(2);
    }
}

/// The page count of a PDF, read from its bytes without parsing it: the
/// `/N` of a linearized file's first dictionary, else the number of page
/// objects (`/Type /Page`, not `/Pages`). `None` when neither is readable,
/// e.g. when the page objects are inside compressed object streams.
pub(crate) fn pdf_pages(b: &[u8]) -> Option<u64> {
    if !b.starts_with(b"%PDF") {
        return None;
    }
    if let Some(n) = linearized_pages(b) {
        return Some(n);
    }
    let mut pages = 0u64;
    let mut i = 0;
    while let Some(at) = find(&b[i..], b"/Type") {
        let mut j = i + at + 5;
        while b.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
            j += 1;
        }
        if b[j..].starts_with(b"/Page") {
            let next = b.get(j + 5).copied().unwrap_or(b' ');
            if !next.is_ascii_alphanumeric() {
                pages += 1;
            }
        }
        i = j;
    }
    (pages > 0).then_some(pages)
}

/// `/N` of the linearization dictionary, which a linearized PDF puts in its
/// first kilobyte.
fn linearized_pages(b: &[u8]) -> Option<u64> {
    let head = &b[..b.len().min(1024)];
    let at = find(head, b"/Linearized")?;
    let dict_end = find(&head[at..], b">>").map_or(head.len(), |e| at + e);
    let dict = &head[at..dict_end];
    let mut i = 0;
    while let Some(n) = find(&dict[i..], b"/N") {
        let mut j = i + n + 2;
        let after = dict.get(j).copied().unwrap_or(b' ');
        if after.is_ascii_whitespace() || after.is_ascii_digit() {
            while dict.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
                j += 1;
            }
            let digits: Vec<u8> = dict[j..]
                .iter()
                .copied()
                .take_while(u8::is_ascii_digit)
                .collect();
            if let Some(v) = std::str::from_utf8(&digits)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|v| *v > 0)
            {
                return Some(v);
            }
        }
        i = i + n + 2;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths_and_prefixes() {
        assert_eq!(base64_decoded_len("AAAA"), 3);
        assert_eq!(base64_decoded_len("AAAAAA=="), 4);
        assert_eq!(base64_decoded_len("AAAA\nAAAA"), 6);
        // "TWFu" is "Man"; whitespace is skipped.
        assert_eq!(base64_prefix("TW\nFu", 8), b"Man");
    }

    #[test]
    fn image_sizes_from_headers() {
        // A JPEG: SOI, an APP0 segment of 16 bytes, then SOF0 with height 300, width 400.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
        jpeg.extend_from_slice(&[0u8; 14]);
        jpeg.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x01, 0x90]);
        assert_eq!(image_size(&jpeg), Some((400, 300)));
        // A lossless WebP of 640 x 480: 14-bit fields hold width-1 and height-1.
        let bits: u32 = 639 | (479 << 14);
        let mut webp = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        webp.extend_from_slice(&bits.to_le_bytes());
        webp.extend_from_slice(&[0u8; 8]);
        assert_eq!(image_size(&webp), Some((640, 480)));
        // An extended WebP: 24-bit fields, minus one.
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        vp8x.extend_from_slice(&[0x7f, 0x07, 0x00, 0x37, 0x04, 0x00]); // 1919 + 1, 1079 + 1
        assert_eq!(image_size(&vp8x), Some((1920, 1080)));
        assert_eq!(image_size(b"not an image at all, just some bytes"), None);
    }

    #[test]
    fn pdf_pages_from_page_objects_or_linearization() {
        let two = b"%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>\n\
            2 0 obj << /Type /Page /Parent 1 0 R >>\n3 0 obj <</Type/Page/Parent 1 0 R>>\n";
        assert_eq!(pdf_pages(two), Some(2));
        let lin = b"%PDF-1.5\n4 0 obj <</Linearized 1/L 7945/O 6/E 4345/N 12/T 7603/H [ 475 139]>>";
        assert_eq!(pdf_pages(lin), Some(12));
        // Page objects hidden in a compressed object stream: unknown.
        assert_eq!(
            pdf_pages(b"%PDF-1.7\n5 0 obj <</Type/ObjStm/N 3>>stream..."),
            None
        );
        assert_eq!(pdf_pages(b"PK\x03\x04 a zip file"), None);
    }
}
