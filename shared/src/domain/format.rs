//! The spreadsheet formats we accept, and how an upload's format is decided from its first bytes
//! (magic numbers) together with its file name. Content wins where the two disagree on the family
//! (a CSV named `.xlsx` is a CSV; a PDF named `.xlsx` is refused); the name only picks between
//! formats that share a container (xlsx/xlsm/xlsb are all zip, csv/tsv are both text).

crate::code_enum! {
    /// A format we can parse. Stored in `source_files.format` as its lowercase name.
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum FileFormat {
        Csv => "csv",
        Tsv => "tsv",
        Xlsx => "xlsx",
        Xlsm => "xlsm",
        Xlsb => "xlsb",
        Xls => "xls",
        Ods => "ods",
    }
}

crate::text_column!(FileFormat);

pub const SNIFF_LEN: usize = 8 * 1024;

pub const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
pub const EMPTY_ZIP_MAGIC: &[u8] = b"PK\x05\x06";
pub const CFB_MAGIC: &[u8] = &[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
const ODS_MIMETYPE: &[u8] = b"mimetypeapplication/vnd.oasis.opendocument.spreadsheet";

impl FileFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            FileFormat::Csv => "text/csv",
            FileFormat::Tsv => "text/tab-separated-values",
            FileFormat::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            FileFormat::Xlsm => "application/vnd.ms-excel.sheet.macroEnabled.12",
            FileFormat::Xlsb => "application/vnd.ms-excel.sheet.binary.macroEnabled.12",
            FileFormat::Xls => "application/vnd.ms-excel",
            FileFormat::Ods => "application/vnd.oasis.opendocument.spreadsheet",
        }
    }

    /// Decides the format from the first bytes of the content (`head`, up to [`SNIFF_LEN`]) and
    /// the client's file name. `None` means "not a format we accept" (→ 415). An empty `head` is
    /// accepted as text by its name: the parse then fails the task with `empty_file`, which is a
    /// clearer answer than refusing the upload.
    pub fn detect(head: &[u8], file_name: &str) -> Option<Self> {
        let ext = extension(file_name);
        if head.starts_with(ZIP_MAGIC) || head.starts_with(EMPTY_ZIP_MAGIC) {
            // ODS stores an uncompressed `mimetype` entry first (its local header is 30 bytes).
            if head.len() >= 30 + ODS_MIMETYPE.len() && head[30..].starts_with(ODS_MIMETYPE) {
                return Some(FileFormat::Ods);
            }
            return Some(match ext.as_deref() {
                Some("xlsm") => FileFormat::Xlsm,
                Some("xlsb") => FileFormat::Xlsb,
                Some("ods") => FileFormat::Ods,
                _ if contains(head, b"xl/workbook.bin") => FileFormat::Xlsb,
                _ => FileFormat::Xlsx,
            });
        }
        if head.starts_with(CFB_MAGIC) {
            // An OLE compound file: BIFF xls, or a password-protected OOXML workbook (which is a
            // CFB container too). The parser tells them apart and reports `encrypted_file`.
            return Some(match ext.as_deref() {
                Some("xlsx") => FileFormat::Xlsx,
                Some("xlsm") => FileFormat::Xlsm,
                Some("xlsb") => FileFormat::Xlsb,
                _ => FileFormat::Xls,
            });
        }
        if looks_like_text(head) {
            return Some(match ext.as_deref() {
                Some("tsv") | Some("tab") => FileFormat::Tsv,
                _ => FileFormat::Csv,
            });
        }
        None
    }
}

fn extension(file_name: &str) -> Option<String> {
    let (_, ext) = file_name.rsplit_once('.')?;
    Some(ext.to_ascii_lowercase())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Text in any encoding we decode (UTF-8, UTF-16 with BOM, Shift_JIS, Windows-1252): no NUL
/// bytes outside UTF-16, and no more than a few C0 control characters, which binary formats
/// (PDF streams, images, executables) are full of.
fn looks_like_text(head: &[u8]) -> bool {
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return true;
    }
    if head.starts_with(b"%PDF") || head.contains(&0) {
        return false;
    }
    few_control_bytes(head)
}

/// Whether at most 1 % of `head` are C0 control bytes other than tab, the line ends, form feed
/// and the DOS end-of-file mark: how text is told from binary data once NUL bytes have been
/// dealt with (the api's detection and the worker's sniffing share this rule).
pub fn few_control_bytes(head: &[u8]) -> bool {
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C | 0x1A))
        .count();
    controls * 100 <= head.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_head(first_entry: &str, data: &[u8]) -> Vec<u8> {
        let mut v = ZIP_MAGIC.to_vec();
        v.extend_from_slice(&[0u8; 22]);
        v.extend_from_slice(&(first_entry.len() as u16).to_le_bytes());
        v.extend_from_slice(&[0u8; 2]);
        v.extend_from_slice(first_entry.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn text_is_csv_unless_named_tsv() {
        assert_eq!(
            FileFormat::detect(b"a,b\n1,2\n", "x.csv"),
            Some(FileFormat::Csv)
        );
        assert_eq!(
            FileFormat::detect(b"a\tb\n", "x.TSV"),
            Some(FileFormat::Tsv)
        );
        assert_eq!(
            FileFormat::detect(b"a,b\n", "report.xlsx"),
            Some(FileFormat::Csv)
        );
        assert_eq!(FileFormat::detect(b"", "empty.csv"), Some(FileFormat::Csv));
    }

    #[test]
    fn utf16_text_with_a_bom_is_text() {
        assert_eq!(
            FileFormat::detect(&[0xFF, 0xFE, b'a', 0, b',', 0], "u.tsv"),
            Some(FileFormat::Tsv)
        );
    }

    #[test]
    fn zip_containers_are_told_apart_by_mimetype_and_name() {
        let ods = zip_head(
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        );
        assert_eq!(FileFormat::detect(&ods, "a.xlsx"), Some(FileFormat::Ods));
        let ooxml = zip_head("[Content_Types].xml", b"<?xml");
        assert_eq!(FileFormat::detect(&ooxml, "a.xlsx"), Some(FileFormat::Xlsx));
        assert_eq!(FileFormat::detect(&ooxml, "a.XLSM"), Some(FileFormat::Xlsm));
        assert_eq!(FileFormat::detect(&ooxml, "a.xlsb"), Some(FileFormat::Xlsb));
        assert_eq!(FileFormat::detect(&ooxml, "noext"), Some(FileFormat::Xlsx));
    }

    #[test]
    fn compound_files_are_xls_unless_named_as_ooxml() {
        assert_eq!(
            FileFormat::detect(CFB_MAGIC, "old.xls"),
            Some(FileFormat::Xls)
        );
        assert_eq!(
            FileFormat::detect(CFB_MAGIC, "locked.xlsx"),
            Some(FileFormat::Xlsx)
        );
    }

    #[test]
    fn binary_content_is_refused_whatever_its_name() {
        assert_eq!(
            FileFormat::detect(b"%PDF-1.7\n%\xE2\xE3", "report.xlsx"),
            None
        );
        assert_eq!(
            FileFormat::detect(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "a.csv"),
            None
        );
    }
}
