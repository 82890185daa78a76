//! What a file really is, decided by its bytes (never by its name), and the cheap checks made
//! before a parser touches it: a zip's declared entry sizes against the inflation limits (the
//! `zip` crate refuses to inflate an entry past its declared size, so these numbers bind), the
//! shared-strings count a workbook claims, and the encryption markers of Office files.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use shared::domain::format::{CFB_MAGIC, EMPTY_ZIP_MAGIC, ZIP_MAGIC};

use super::limits::INFLATE_RATIO_FLOOR;
use super::{ParseFailure, ParseLimits, TaskErrorCode};

/// The container family found in a file's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Content {
    /// Anything else that looks like text: parsed as CSV/TSV.
    Text,
    Zip,
    /// An OLE compound file: BIFF8 xls, or an encrypted OOXML workbook.
    Cfb,
}

/// The workbook kind inside a zip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZipKind {
    Xlsx,
    Xlsb,
    Ods,
}

/// Reads the first bytes of `path` and classifies them.
pub(crate) fn sniff(path: &Path) -> Result<Content, ParseFailure> {
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
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C | 0x1A))
        .count();
    controls * 100 <= head.len()
}

/// Checks a zip's declared sizes against the limits and tells which workbook it holds.
pub(crate) fn check_zip(path: &Path, limits: &ParseLimits) -> Result<ZipKind, ParseFailure> {
    let file = File::open(path)
        .map_err(|e| ParseFailure::corrupt(format!("cannot read the file: {e}")))?;
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(0).max(1);
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| {
        ParseFailure::corrupt(format!(
            "not a readable zip archive (truncated or damaged): {e}"
        ))
    })?;

    let mut total: u64 = 0;
    let mut kind = None;
    let mut shared_strings = None;
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| ParseFailure::corrupt(format!("zip entry {i} is unreadable: {e}")))?;
        let name = entry.name().map(|n| n.into_owned()).unwrap_or_default();
        if entry.encrypted() {
            return Err(ParseFailure::new(
                TaskErrorCode::EncryptedFile,
                format!("zip entry '{name}' is password protected"),
            ));
        }
        total = total.saturating_add(entry.size());
        match name.as_str() {
            "xl/workbook.xml" => kind = Some(ZipKind::Xlsx),
            "xl/workbook.bin" => kind = Some(ZipKind::Xlsb),
            "content.xml" if kind.is_none() => kind = Some(ZipKind::Ods),
            "xl/sharedStrings.xml" => shared_strings = Some((i, entry.size())),
            _ => {}
        }
    }
    if total > limits.max_inflated_bytes {
        return Err(ParseFailure::new(
            TaskErrorCode::DecompressionLimit,
            format!(
                "the archive inflates to {total} bytes, more than the limit of {} bytes",
                limits.max_inflated_bytes
            ),
        ));
    }
    if total > INFLATE_RATIO_FLOOR && total / file_len > limits.max_inflate_ratio {
        return Err(ParseFailure::new(
            TaskErrorCode::DecompressionLimit,
            format!(
                "the archive inflates {}× ({total} bytes from {file_len}), more than the limit of {}×",
                total / file_len,
                limits.max_inflate_ratio
            ),
        ));
    }
    let kind = kind.ok_or_else(|| {
        ParseFailure::new(
            TaskErrorCode::UnsupportedFormat,
            "a zip archive that holds no Excel or OpenDocument workbook",
        )
    })?;
    if let Some((index, size)) = shared_strings {
        check_shared_strings(&mut zip, index, size)?;
    }
    Ok(kind)
}

/// calamine reserves room for the `uniqueCount` a sharedStrings part declares before reading
/// it, so a 2 KB file claiming trillions of strings aborts the process. Each `<si>` takes at
/// least 8 bytes of XML, which bounds an honest count by the part's (binding) declared size.
fn check_shared_strings<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    index: usize,
    size: u64,
) -> Result<(), ParseFailure> {
    let mut head = Vec::with_capacity(2048);
    zip.by_index(index)
        .and_then(|e| Ok(e.take(2048).read_to_end(&mut head)?))
        .map_err(|e| ParseFailure::corrupt(format!("xl/sharedStrings.xml is unreadable: {e}")))?;
    let text = String::from_utf8_lossy(&head);
    // Only `uniqueCount` is reserved; `count` counts references and may exceed any bound.
    let attr = "uniqueCount=\"";
    if let Some(start) = text.find(attr) {
        let digits: String = text[start + attr.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let declared: u64 = digits.parse().unwrap_or(u64::MAX);
        if declared > size / 8 + 1 {
            return Err(ParseFailure::corrupt(format!(
                "xl/sharedStrings.xml declares {digits} unique strings but holds only {size} bytes"
            )));
        }
    }
    Ok(())
}

/// Whether a compound file is an encrypted Office document: its directory holds an
/// `EncryptionInfo` or `EncryptedPackage` stream (MS-OFFCRYPTO). Directory entries are
/// 128-byte aligned records starting with the UTF-16LE name and its byte length at offset 64.
pub(crate) fn cfb_is_encrypted(path: &Path) -> Result<bool, ParseFailure> {
    let mut file = File::open(path)
        .map_err(|e| ParseFailure::corrupt(format!("cannot read the file: {e}")))?;
    let mut bytes = Vec::new();
    // Directory sectors of real files sit anywhere; scanning a few hundred MB at memchr speed
    // is cheap next to parsing them.
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| ParseFailure::corrupt(format!("cannot read the file: {e}")))?;
    Ok(["EncryptionInfo", "EncryptedPackage"]
        .iter()
        .any(|name| has_directory_entry(&bytes, name)))
}

fn has_directory_entry(bytes: &[u8], name: &str) -> bool {
    let needle: Vec<u8> = name
        .encode_utf16()
        .chain([0])
        .flat_map(u16::to_le_bytes)
        .collect();
    let len_field = (needle.len() as u16).to_le_bytes();
    memchr::memmem::find_iter(bytes, &needle)
        .any(|p| p % 128 == 0 && bytes.get(p + 64..p + 66) == Some(&len_field[..]))
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

    #[test]
    fn directory_entries_are_found_only_where_entries_start() {
        let mut dir = vec![0u8; 256];
        let name: Vec<u8> = "EncryptionInfo\0"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        dir[128..128 + name.len()].copy_from_slice(&name);
        dir[128 + 64..128 + 66].copy_from_slice(&(name.len() as u16).to_le_bytes());
        assert!(has_directory_entry(&dir, "EncryptionInfo"));
        let mut shifted = vec![0u8; 2];
        shifted.extend_from_slice(&dir);
        assert!(!has_directory_entry(&shifted, "EncryptionInfo"));
    }
}
