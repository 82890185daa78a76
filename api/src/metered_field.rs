//! Reading the `file` part of an upload as a stream: the first bytes are held back to decide the
//! format before anything is stored, then every chunk is counted, hashed (SHA-256) and checked
//! against the size limit on its way to Blob Storage, so memory stays flat whatever the size. A
//! file small enough to travel in its queue message is also kept whole.

use axum::extract::multipart::{Field, MultipartError};
use bytes::{Bytes, BytesMut};
use futures::Stream;
use sha2::{Digest, Sha256};
use shared::domain::format::SNIFF_LEN;
use shared::domain::ParseTaskPayload;

/// Why the body stream stopped early.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the file is larger than the limit")]
    TooLarge,
    #[error("malformed multipart body: {0}")]
    Multipart(#[from] MultipartError),
}

/// The `file` part being read: its held-back head, running size and hash.
pub struct MeteredField<'a> {
    field: Field<'a>,
    head: Option<Bytes>,
    hasher: Sha256,
    size: u64,
    limit: u64,
    /// Every byte so far, while there are at most `ParseTaskPayload::INLINE_MAX` of them.
    small: Option<BytesMut>,
}

impl<'a> MeteredField<'a> {
    /// Reads up to [`SNIFF_LEN`] bytes (fewer at the end of a short file) and keeps them to be
    /// replayed as the first chunk of [`MeteredField::stream`].
    pub async fn start(mut field: Field<'a>, limit: u64) -> Result<Self, BodyError> {
        let mut head = BytesMut::new();
        while head.len() < SNIFF_LEN {
            match field.chunk().await? {
                Some(chunk) => head.extend_from_slice(&chunk),
                None => break,
            }
        }
        let mut this = Self {
            field,
            head: None,
            hasher: Sha256::new(),
            size: 0,
            limit,
            small: Some(BytesMut::new()),
        };
        let head = head.freeze();
        this.meter(&head)?;
        this.head = Some(head);
        Ok(this)
    }

    /// The first bytes of the file, for format detection.
    pub fn head(&self) -> &[u8] {
        self.head.as_deref().unwrap_or_default()
    }

    fn meter(&mut self, chunk: &Bytes) -> Result<(), BodyError> {
        self.size += chunk.len() as u64;
        if self.size > self.limit {
            return Err(BodyError::TooLarge);
        }
        self.hasher.update(chunk);
        if self.size > ParseTaskPayload::INLINE_MAX as u64 {
            self.small = None;
        } else if let Some(small) = &mut self.small {
            small.extend_from_slice(chunk);
        }
        Ok(())
    }

    async fn next_chunk(&mut self) -> Option<Result<Bytes, BodyError>> {
        if let Some(head) = self.head.take() {
            if !head.is_empty() {
                return Some(Ok(head));
            }
        }
        match self.field.chunk().await {
            Ok(Some(chunk)) => Some(self.meter(&chunk).map(|()| chunk)),
            Ok(None) => None,
            Err(e) => Some(Err(e.into())),
        }
    }

    /// The whole file as a stream of chunks, head first. Borrowing `self` lets the caller read
    /// the size and hash once the stream has been consumed.
    pub fn stream(&mut self) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + use<'_, 'a> {
        futures::stream::unfold(self, |this| async move {
            let next = this.next_chunk().await?;
            Some((next, this))
        })
    }

    /// What was streamed: its size, lowercase hex SHA-256, and the bytes themselves when there
    /// are at most `ParseTaskPayload::INLINE_MAX` of them.
    pub fn finish(self) -> Streamed {
        Streamed {
            size: self.size,
            sha256: format!("{:x}", self.hasher.finalize()),
            small: self.small.map(BytesMut::freeze),
        }
    }
}

/// A file part read to its end.
pub struct Streamed {
    pub size: u64,
    pub sha256: String,
    pub small: Option<Bytes>,
}

/// Keeps the last path segment of a client file name (some browsers send `C:\…\name.csv`),
/// without control characters, at most 255 characters; `upload` when nothing is left.
pub fn clean_file_name(raw: Option<&str>) -> String {
    let last = raw
        .unwrap_or_default()
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(255).collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() {
        "upload".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::clean_file_name;

    #[test]
    fn file_names_lose_their_directories_and_control_characters() {
        assert_eq!(
            clean_file_name(Some(r"C:\Users\me\report.csv")),
            "report.csv"
        );
        assert_eq!(clean_file_name(Some("../../etc/passwd")), "passwd");
        assert_eq!(clean_file_name(Some("a\u{0}b\n.csv")), "ab.csv");
        assert_eq!(clean_file_name(Some("  ")), "upload");
        assert_eq!(clean_file_name(None), "upload");
        assert_eq!(clean_file_name(Some(&"x".repeat(400))).len(), 255);
    }
}
