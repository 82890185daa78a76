//! The tus 1.0 vocabulary: the headers a request brings (`Upload-Length`, `Upload-Offset`,
//! `Upload-Metadata`, `Upload-Checksum`) read into values or the contract's JSON errors, the
//! headers every answer carries (`Tus-Resumable`), and the refusals with tus's own statuses.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use chrono::{DateTime, Utc};

use crate::error::{ApiError, ApiErrorCode};

/// The only protocol version served.
pub const VERSION: &str = "1.0.0";
/// The extensions served, as `OPTIONS` announces them.
pub const EXTENSIONS: &str = "creation,termination,checksum,expiration";
/// The one checksum algorithm (`Tus-Checksum-Algorithm`).
pub const CHECKSUM_ALGORITHM: &str = "sha256";
/// The media type of a `PATCH` body.
pub const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";
/// Where the resumable uploads live; the prefix of every tus path.
pub const ROOT: &str = "/api/v1/uploads";

pub static TUS_RESUMABLE: HeaderName = HeaderName::from_static("tus-resumable");
pub static TUS_VERSION: HeaderName = HeaderName::from_static("tus-version");
pub static TUS_EXTENSION: HeaderName = HeaderName::from_static("tus-extension");
pub static TUS_MAX_SIZE: HeaderName = HeaderName::from_static("tus-max-size");
pub static TUS_CHECKSUM_ALGORITHM: HeaderName = HeaderName::from_static("tus-checksum-algorithm");
pub static UPLOAD_OFFSET: HeaderName = HeaderName::from_static("upload-offset");
pub static UPLOAD_LENGTH: HeaderName = HeaderName::from_static("upload-length");
pub static UPLOAD_METADATA: HeaderName = HeaderName::from_static("upload-metadata");
pub static UPLOAD_CHECKSUM: HeaderName = HeaderName::from_static("upload-checksum");
pub static UPLOAD_EXPIRES: HeaderName = HeaderName::from_static("upload-expires");

/// The headers a browser client must be allowed to send and to read (see `crate::edge::cors`).
pub const REQUEST_HEADERS: [&str; 6] = [
    "tus-resumable",
    "upload-length",
    "upload-offset",
    "upload-metadata",
    "upload-checksum",
    "idempotency-key",
];
pub const RESPONSE_HEADERS: [&str; 9] = [
    "location",
    "tus-resumable",
    "tus-version",
    "tus-extension",
    "tus-max-size",
    "tus-checksum-algorithm",
    "upload-offset",
    "upload-length",
    "upload-expires",
];

/// For every request under [`ROOT`], whoever answers it (authentication, the router's
/// fallbacks): `Tus-Resumable` on the answer.
pub async fn tus_resumable(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let ours = path == ROOT || path.starts_with("/api/v1/uploads/");
    let mut response = next.run(req).await;
    if ours {
        response
            .headers_mut()
            .insert(&TUS_RESUMABLE, HeaderValue::from_static(VERSION));
    }
    response
}

/// Behind authentication, on the tus routes: `412` for a tus request (not `OPTIONS`, nor the
/// `GET` of the result, which is not part of tus) that does not speak version 1.0.0.
pub async fn require_version(req: Request, next: Next) -> Response {
    let checked = !matches!(*req.method(), Method::OPTIONS | Method::GET);
    if checked
        && req
            .headers()
            .get(&TUS_RESUMABLE)
            .is_none_or(|v| v != VERSION)
    {
        let mut refused = ApiError::Refused {
            status: StatusCode::PRECONDITION_FAILED,
            code: ApiErrorCode::TusVersionUnsupported,
            message: format!("this server speaks tus {VERSION}: send `Tus-Resumable: {VERSION}`"),
        }
        .into_response();
        refused
            .headers_mut()
            .insert(&TUS_VERSION, HeaderValue::from_static(VERSION));
        return refused;
    }
    next.run(req).await
}

/// A header holding a non-negative integer: `None` when absent, `400` when not a number.
pub fn number(headers: &HeaderMap, name: &HeaderName) -> Result<Option<u64>, ApiError> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                ApiErrorCode::InvalidParameter,
                format!("{name} must be a non-negative integer"),
            )
        })
}

/// Like [`number`], for a header the request must have.
pub fn required_number(headers: &HeaderMap, name: &HeaderName) -> Result<u64, ApiError> {
    number(headers, name)?.ok_or_else(|| {
        ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!("the {name} header is required"),
        )
    })
}

/// What `Upload-Metadata` may say: the file's name, and the fields of a multipart upload
/// (`template`, `on_invalid`, and `metadata`: the upload metadata's JSON text). Other keys are
/// ignored.
#[derive(Debug, Default, PartialEq)]
pub struct Metadata {
    pub filename: Option<String>,
    pub template: Option<String>,
    pub on_invalid: Option<String>,
    pub metadata: Option<String>,
}

/// Reads `Upload-Metadata`: comma-separated `key base64(value)` pairs (a key alone has an empty
/// value). A pair that is not that, or a value that is not base64 of UTF-8, is a `400`.
pub fn metadata(headers: &HeaderMap) -> Result<Metadata, ApiError> {
    let invalid = |why: &str| {
        ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!("Upload-Metadata: {why}"),
        )
    };
    let mut metadata = Metadata::default();
    let Some(value) = headers.get(&UPLOAD_METADATA) else {
        return Ok(metadata);
    };
    let text = value.to_str().map_err(|_| invalid("not ASCII"))?;
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut words = pair.split(' ').filter(|w| !w.is_empty());
        let key = words.next().unwrap_or_default();
        let encoded = words.next().unwrap_or_default();
        if words.next().is_some() {
            return Err(invalid("a pair is `key base64value`"));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| invalid("a value is not base64"))?;
        let decoded = String::from_utf8(decoded).map_err(|_| invalid("a value is not UTF-8"))?;
        match key {
            "filename" => metadata.filename = Some(decoded),
            "template" => metadata.template = Some(decoded),
            "on_invalid" => metadata.on_invalid = Some(decoded),
            "metadata" => metadata.metadata = Some(decoded),
            _ => {}
        }
    }
    Ok(metadata)
}

/// Reads `Upload-Checksum: sha256 <base64 digest>`; another algorithm is a `400`.
pub fn checksum(headers: &HeaderMap) -> Result<Option<[u8; 32]>, ApiError> {
    let Some(value) = headers.get(&UPLOAD_CHECKSUM) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    let (algorithm, digest) = text.split_once(' ').unwrap_or((text, ""));
    if algorithm != CHECKSUM_ALGORITHM {
        return Err(ApiError::bad_request(
            ApiErrorCode::UnsupportedChecksumAlgorithm,
            format!("Upload-Checksum: only {CHECKSUM_ALGORITHM} is supported"),
        ));
    }
    base64::engine::general_purpose::STANDARD
        .decode(digest.trim())
        .ok()
        .and_then(|d| <[u8; 32]>::try_from(d).ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                ApiErrorCode::InvalidParameter,
                "Upload-Checksum: the digest is not base64 of 32 bytes",
            )
        })
}

/// `PATCH` bodies must be `application/offset+octet-stream`: else `415`.
pub fn require_offset_octet_stream(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if content_type.split(';').next().map(str::trim) == Some(OFFSET_OCTET_STREAM) {
        return Ok(());
    }
    Err(ApiError::Refused {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        code: ApiErrorCode::WrongContentType,
        message: format!("a PATCH body must be {OFFSET_OCTET_STREAM}"),
    })
}

/// An HTTP date (RFC 9110's IMF-fixdate), as `Upload-Expires` needs.
pub fn http_date(at: DateTime<Utc>) -> HeaderValue {
    let text = at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static(""))
}

/// `409 offset_mismatch`: the request's `Upload-Offset` is not where the upload stands (or
/// another request moved it while this one was sending).
pub fn offset_mismatch(expected: i64, given: u64) -> ApiError {
    ApiError::Conflict {
        code: ApiErrorCode::OffsetMismatch,
        message: format!(
            "Upload-Offset {given} is not the upload's offset {expected}: HEAD the upload and resume from its offset"
        ),
    }
}

/// `413 upload_length_exceeded`: more bytes than the upload's `Upload-Length`.
pub fn length_exceeded(length: i64) -> ApiError {
    ApiError::Refused {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        code: ApiErrorCode::UploadLengthExceeded,
        message: format!("the body goes past the upload's length of {length} bytes"),
    }
}

/// `460 checksum_mismatch` (tus's status): the body's SHA-256 is not `Upload-Checksum`; none of
/// it counts.
pub fn checksum_mismatch() -> ApiError {
    ApiError::Refused {
        status: StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST),
        code: ApiErrorCode::ChecksumMismatch,
        message: "the body's SHA-256 is not the Upload-Checksum; none of it was kept".into(),
    }
}

/// `410 upload_expired`: an unfinished upload past its `Upload-Expires`.
pub fn expired() -> ApiError {
    ApiError::Refused {
        status: StatusCode::GONE,
        code: ApiErrorCode::UploadExpired,
        message: "the upload expired before it was complete; start a new one".into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    fn headers(name: &HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn metadata_pairs_are_decoded_and_unknown_keys_ignored() {
        let h = headers(
            &UPLOAD_METADATA,
            "filename cGVvcGxlLmNzdg==,template cGVvcGxl, is_confidential,filetype dGV4dC9jc3Y=,metadata eyJrIjoxfQ==",
        );
        assert_eq!(
            metadata(&h).unwrap(),
            Metadata {
                filename: Some("people.csv".into()),
                template: Some("people".into()),
                on_invalid: None,
                metadata: Some(r#"{"k":1}"#.into()),
            }
        );
        assert!(metadata(&headers(&UPLOAD_METADATA, "filename ***")).is_err());
        assert!(metadata(&headers(&UPLOAD_METADATA, "filename YQ== YQ==")).is_err());
    }

    #[test]
    fn only_sha256_checksums_of_32_bytes_are_read() {
        let digest = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let ok = headers(&UPLOAD_CHECKSUM, &format!("sha256 {digest}"));
        assert_eq!(checksum(&ok).unwrap(), Some([7u8; 32]));
        assert!(checksum(&headers(&UPLOAD_CHECKSUM, &format!("md5 {digest}"))).is_err());
        assert!(checksum(&headers(&UPLOAD_CHECKSUM, "sha256 YQ==")).is_err());
    }

    #[test]
    fn http_dates_are_imf_fixdates() {
        let at = DateTime::parse_from_rfc3339("2026-11-26T08:05:09Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(http_date(at), "Thu, 26 Nov 2026 08:05:09 GMT");
    }
}
