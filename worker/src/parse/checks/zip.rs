//! The cheap checks made on a zip before a parser touches it, and which workbook it holds: its
//! entries' declared sizes against the inflation limits (the `zip` crate refuses to inflate an
//! entry past its declared size, so these numbers bind), password-protected entries, and the
//! shared-strings count an xlsx claims.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use crate::parse::limits::INFLATE_RATIO_FLOOR;
use crate::parse::{ParseFailure, ParseLimits, TaskErrorCode};

/// The workbook kind inside a zip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZipKind {
    Xlsx,
    Xlsb,
    Ods,
}

/// Checks a zip's declared sizes against the limits and tells which workbook it holds.
pub(crate) fn check(path: &Path, limits: &ParseLimits) -> Result<ZipKind, ParseFailure> {
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
