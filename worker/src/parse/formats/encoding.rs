//! Text encoding of CSV/TSV uploads, decided from the content alone: a BOM (UTF-8, UTF-16 LE/BE),
//! else UTF-16 without BOM recognised by its NUL bytes, else UTF-8 when the sample is valid UTF-8,
//! else whatever `chardetng` finds most likely (Shift_JIS/CP932, Windows-1252, …). Non-UTF-8 input
//! is transcoded to UTF-8 incrementally by [`decoding_reader`], so the file is never loaded whole;
//! malformed bytes become U+FFFD instead of errors.

use std::io::Read;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8};
use encoding_rs_io::{DecodeReaderBytes, DecodeReaderBytesBuilder};

/// How many leading bytes the detectors look at.
pub(crate) const SAMPLE_LEN: usize = 256 * 1024;

/// The detected encoding and the length of its BOM (to skip).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Detected {
    pub encoding: &'static Encoding,
    pub bom_len: usize,
}

/// Detects the encoding of a file from its first bytes. `complete` says the sample is the whole
/// file (so a multi-byte sequence cut at its end is really malformed, not truncated).
pub(crate) fn detect(sample: &[u8], complete: bool) -> Detected {
    if let Some((encoding, bom_len)) = Encoding::for_bom(sample) {
        return Detected { encoding, bom_len };
    }
    if let Some(encoding) = utf16_without_bom(sample) {
        return Detected {
            encoding,
            bom_len: 0,
        };
    }
    let utf8 = match std::str::from_utf8(sample) {
        Ok(_) => true,
        // A sequence cut by the end of the sample is fine when more of the file follows.
        Err(e) => e.error_len().is_none() && !complete,
    };
    if utf8 {
        return Detected {
            encoding: UTF_8,
            bom_len: 0,
        };
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    let (text, last) = detector_text(sample, complete);
    detector.feed(text, last);
    Detected {
        encoding: detector.guess(None, chardetng::Utf8Detection::Deny),
        bom_len: 0,
    }
}

/// At most this many bytes are given to `chardetng`: it costs about 500 instructions a byte
/// (0.05 s of CPU for the whole sample), and far less text than this settles its guess.
const DETECTOR_LEN: usize = 64 * 1024;

/// The part of the sample `chardetng` sees, and whether it ends the file: [`DETECTOR_LEN`]
/// bytes from the start of the first line that is not ASCII. Only non-ASCII bytes tell one
/// legacy encoding from another, so a long ASCII prelude (a wide English header, ids) would
/// otherwise use up the budget; a whole line of context is kept before the first of them.
fn detector_text(sample: &[u8], complete: bool) -> (&[u8], bool) {
    let first = sample
        .iter()
        .position(|b| !b.is_ascii())
        .unwrap_or(sample.len());
    let start = memchr::memrchr(b'\n', &sample[..first]).map_or(0, |i| i + 1);
    let end = sample.len().min(start + DETECTOR_LEN);
    (&sample[start..end], complete && end == sample.len())
}

/// UTF-16 text without a BOM has a NUL in every other byte while it is ASCII.
fn utf16_without_bom(sample: &[u8]) -> Option<&'static Encoding> {
    let head = &sample[..sample.len().min(4096) & !1];
    if head.len() < 4 {
        return None;
    }
    let pairs = head.len() / 2;
    let even_nul = head.iter().step_by(2).filter(|&&b| b == 0).count();
    let odd_nul = head.iter().skip(1).step_by(2).filter(|&&b| b == 0).count();
    if odd_nul * 10 >= pairs * 7 && even_nul * 10 <= pairs {
        Some(UTF_16LE)
    } else if even_nul * 10 >= pairs * 7 && odd_nul * 10 <= pairs {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// Decodes `inner`, which must start after the BOM (if any), from `encoding` into UTF-8 bytes,
/// chunk by chunk (`encoding_rs_io`); malformed bytes become U+FFFD.
pub(crate) fn decoding_reader<R: Read>(
    inner: R,
    encoding: &'static Encoding,
) -> DecodeReaderBytes<R, Vec<u8>> {
    DecodeReaderBytesBuilder::new()
        .encoding(Some(encoding))
        .build(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(bytes: &[u8]) -> String {
        let d = detect(bytes, true);
        let mut out = String::new();
        let r = decoding_reader(&bytes[d.bom_len..], d.encoding).read_to_string(&mut out);
        assert!(r.is_ok());
        out
    }

    #[test]
    fn boms_decide_the_encoding() {
        assert_eq!(detect(b"\xEF\xBB\xBFa,b", true).encoding, UTF_8);
        assert_eq!(detect(b"\xEF\xBB\xBFa,b", true).bom_len, 3);
        assert_eq!(detect(b"\xFF\xFEa\0", true).encoding, UTF_16LE);
        assert_eq!(detect(b"\xFE\xFF\0a", true).encoding, UTF_16BE);
    }

    #[test]
    fn utf16_without_bom_is_recognised() {
        let le: Vec<u8> = "id,name\n1,x\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(detect(&le, true).encoding, UTF_16LE);
        assert_eq!(decode_all(&le), "id,name\n1,x\n");
    }

    #[test]
    fn the_detector_sees_non_ascii_text_after_a_long_ascii_prelude() {
        let prelude = "id,name,city\n".repeat(15_000);
        let (japanese, _, _) = encoding_rs::SHIFT_JIS.encode("1,山田太郎,東京都千代田区\n");
        let mut bytes = prelude.into_bytes();
        bytes.extend_from_slice(&japanese.repeat(10));
        let sample = &bytes[..bytes.len().min(SAMPLE_LEN)];
        let (text, last) = detector_text(sample, true);
        assert!(text.len() < sample.len() && text.starts_with(b"1,"));
        assert!(last);
        assert_eq!(detect(sample, true).encoding, encoding_rs::SHIFT_JIS);
        // More than the detector's share of non-ASCII text: it sees the first part only.
        let long = japanese.repeat(DETECTOR_LEN / japanese.len() + 10);
        let (text, last) = detector_text(&long, true);
        assert_eq!((text.len(), last), (DETECTOR_LEN, false));
        assert_eq!(detect(&long, true).encoding, encoding_rs::SHIFT_JIS);
    }

    #[test]
    fn shift_jis_is_detected_and_decoded() {
        let text = "氏名,住所\n山田太郎,東京都千代田区\n鈴木花子,大阪府大阪市\n";
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(text);
        assert_eq!(detect(&bytes, true).encoding, encoding_rs::SHIFT_JIS);
        assert_eq!(decode_all(&bytes), text);
    }

    #[test]
    fn a_utf8_sequence_cut_by_the_sample_end_is_still_utf8() {
        let bytes = "名前".as_bytes();
        assert_eq!(detect(&bytes[..4], false).encoding, UTF_8);
    }

    #[test]
    fn windows_1252_is_the_fallback_and_decodes_through_small_reads() {
        let bytes = b"name,city\nJos\xE9,Z\xFCrich\n";
        assert_eq!(detect(bytes, true).encoding, encoding_rs::WINDOWS_1252);
        let mut r = decoding_reader(&bytes[..], encoding_rs::WINDOWS_1252);
        let mut out = Vec::new();
        let mut buf = [0u8; 3];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(
            String::from_utf8(out).ok().as_deref(),
            Some("name,city\nJosé,Zürich\n")
        );
    }
}
