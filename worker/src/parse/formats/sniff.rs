//! What a file really is, decided by its first bytes (never by its name): text (parsed as
//! CSV/TSV), a zip (xlsx, xlsm, xlsb, ods) or an OLE compound file (xls, or an encrypted OOXML
//! workbook). Formats we cannot read (a PDF, BIFF2–4, binary junk) are refused here, before any
//! parser sees them.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use shared::domain::format::{few_control_bytes, CFB_MAGIC, EMPTY_ZIP_MAGIC, ZIP_MAGIC};

use crate::parse::{ParseFailure, TaskErrorCode};

/// The container family found in a file's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Content {
    /// Anything else that looks like text: parsed as CSV/TSV.
    Text,
    Zip,
    /// An OLE compound file: BIFF8 xls, or an encrypted OOXML workbook.
    Cfb,
}

/// Reads the first bytes of `path` and classifies them.
pub(crate) fn content(path: &Path) -> Result<Content, ParseFailure> {
    let mut head = Vec::with_capacity(4096);
    File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|e| ParseFailure::corrupt(format!("cannot read the file: {e}")))?;
    classify(&head)
}

pub(crate) fn classify(head: &[u8]) -> Result<Content, ParseFailure> {
    if head.is_empty() {
        return Err(ParseFailure::new(
            TaskErrorCode::EmptyFile,
            "the file is empty",
        ));
    }
    if head.starts_with(ZIP_MAGIC) || head.starts_with(EMPTY_ZIP_MAGIC) {
        return Ok(Content::Zip);
    }
    if head.starts_with(CFB_MAGIC) {
        return Ok(Content::Cfb);
    }
    // BIFF2–4 worksheets and BIFF5 workbooks stored without a compound file: a BOF record
    // (0x0009, 0x0209, 0x0409 or 0x0809) at offset 0. calamine reads none of them.
    if head.len() >= 4 && matches!(head[0], 0x09) && matches!(head[1], 0x00 | 0x02 | 0x04 | 0x08) {
        return Err(ParseFailure::new(
            TaskErrorCode::UnsupportedFormat,
            "an Excel 2.x–4.x (BIFF2–4) file: re-save it as .xlsx",
        ));
    }
    if head.starts_with(b"%PDF") {
        return Err(ParseFailure::new(
            TaskErrorCode::UnsupportedFormat,
            "the file is a PDF document, not a spreadsheet",
        ));
    }
    if looks_like_text(head) {
        return Ok(Content::Text);
    }
    Err(ParseFailure::new(
        TaskErrorCode::UnsupportedFormat,
        "the file is neither text nor a spreadsheet format we read",
    ))
}

/// Text in an encoding we decode: no NUL bytes outside UTF-16, few C0 control characters.
fn looks_like_text(head: &[u8]) -> bool {
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    let nuls = head.iter().filter(|&&b| b == 0).count();
    if nuls > 0 {
        // UTF-16 without a BOM: NULs in about half the bytes, all on one parity.
        let even = head.iter().step_by(2).filter(|&&b| b == 0).count();
        return nuls * 10 >= head.len() * 4 && (even == 0 || even == nuls);
    }
    few_control_bytes(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_classified_by_magic_bytes() {
        assert_eq!(classify(b"a,b\n1,2\n").ok(), Some(Content::Text));
        assert_eq!(classify(b"PK\x03\x04rest").ok(), Some(Content::Zip));
        assert_eq!(classify(CFB_MAGIC).ok(), Some(Content::Cfb));
        let code = |h: &[u8]| classify(h).err().map(|e| e.code);
        assert_eq!(code(b""), Some(TaskErrorCode::EmptyFile));
        assert_eq!(code(b"%PDF-1.7\n"), Some(TaskErrorCode::UnsupportedFormat));
        assert_eq!(
            code(&[0x09, 0x04, 0x06, 0x00, 0, 0, 0x10, 0]),
            Some(TaskErrorCode::UnsupportedFormat)
        );
        assert_eq!(
            code(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some(TaskErrorCode::UnsupportedFormat)
        );
    }
}
