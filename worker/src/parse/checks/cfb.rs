//! Whether an OLE compound file is an encrypted Office document. calamine refuses an encrypted
//! xlsx (a compound file without a workbook stream) as it refuses a broken xls, so when it does,
//! this tells the two apart by the file's directory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::parse::ParseFailure;

/// Whether a compound file is an encrypted Office document: its directory holds an
/// `EncryptionInfo` or `EncryptedPackage` stream (MS-OFFCRYPTO). Directory entries are
/// 128-byte aligned records starting with the UTF-16LE name and its byte length at offset 64.
pub(crate) fn is_encrypted(path: &Path) -> Result<bool, ParseFailure> {
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
