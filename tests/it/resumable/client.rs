//! A minimal tus 1.0 client over reqwest for the resumable-upload tests, and the fixtures they
//! share: a CSV of a chosen size, and the parsed rows of a file.

use base64::Engine as _;
use harness::app::TestApp;
use reqwest::header::HeaderMap;
use reqwest::{Response, StatusCode};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

pub const TUS: (&str, &str) = ("Tus-Resumable", "1.0.0");
pub const OCTETS: &str = "application/offset+octet-stream";

/// `key base64(value)` pairs for `Upload-Metadata`.
pub fn metadata(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{k} {}",
                base64::engine::general_purpose::STANDARD.encode(v)
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `sha256 <base64 digest>` of `bytes`.
pub fn checksum(bytes: &[u8]) -> String {
    format!(
        "sha256 {}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes))
    )
}

/// A CSV of at least `size` bytes: a header and numbered rows.
pub fn csv_of(size: usize) -> Vec<u8> {
    let mut csv = b"id,name,amount\n".to_vec();
    let mut i = 0u64;
    while csv.len() < size {
        csv.extend_from_slice(format!("{i},name {i},{}.5\n", i % 1000).as_bytes());
        i += 1;
    }
    csv
}

/// A tus client of one tenant against `app`.
pub struct Tus<'a> {
    pub app: &'a TestApp,
    pub client: reqwest::Client,
}

impl<'a> Tus<'a> {
    pub fn new(app: &'a TestApp) -> Self {
        Self {
            app,
            client: app.client.clone(),
        }
    }

    /// `POST /api/v1/uploads` for `length` bytes named `file_name`, with more metadata pairs.
    pub async fn create_with(
        &self,
        length: u64,
        file_name: &str,
        more: &[(&str, &str)],
    ) -> Response {
        let mut pairs = vec![("filename", file_name)];
        pairs.extend_from_slice(more);
        self.client
            .post(self.app.url("/api/v1/uploads"))
            .header(TUS.0, TUS.1)
            .header("Upload-Length", length)
            .header("Upload-Metadata", metadata(&pairs))
            .send()
            .await
            .expect("POST completes")
    }

    /// Creates an upload and returns its path (the `Location`).
    pub async fn create(&self, length: u64, file_name: &str) -> String {
        let resp = self.create_with(length, file_name, &[]).await;
        assert_eq!(resp.status(), StatusCode::CREATED);
        header(resp.headers(), "location")
    }

    pub async fn head(&self, location: &str) -> Response {
        self.client
            .head(self.app.url(location))
            .header(TUS.0, TUS.1)
            .send()
            .await
            .expect("HEAD completes")
    }

    /// The upload's `Upload-Offset`, as `HEAD` says.
    pub async fn offset(&self, location: &str) -> u64 {
        let resp = self.head(location).await;
        assert_eq!(resp.status(), StatusCode::OK);
        header(resp.headers(), "upload-offset")
            .parse()
            .expect("a number")
    }

    /// `PATCH` `bytes` at `offset`, with an `Upload-Checksum` when given.
    pub async fn patch(
        &self,
        location: &str,
        offset: u64,
        bytes: Vec<u8>,
        checksum: Option<String>,
    ) -> Response {
        let mut req = self
            .client
            .patch(self.app.url(location))
            .header(TUS.0, TUS.1)
            .header("Upload-Offset", offset)
            .header("Content-Type", OCTETS);
        if let Some(c) = checksum {
            req = req.header("Upload-Checksum", c);
        }
        req.body(bytes).send().await.expect("PATCH completes")
    }

    /// Sends `bytes` from the upload's offset in pieces of `piece` bytes, each answered `204`.
    pub async fn send_rest(&self, location: &str, bytes: &[u8], piece: usize) {
        let mut offset = self.offset(location).await;
        while offset < bytes.len() as u64 {
            let start = usize::try_from(offset).expect("offset fits");
            let end = (start + piece).min(bytes.len());
            let resp = self
                .patch(location, offset, bytes[start..end].to_vec(), None)
                .await;
            assert_eq!(
                resp.status(),
                StatusCode::NO_CONTENT,
                "{:?}",
                resp.text().await
            );
            offset = header(resp.headers(), "upload-offset")
                .parse()
                .expect("a number");
            assert_eq!(offset, end as u64);
        }
    }

    /// `GET` the upload's result → status and JSON body.
    pub async fn result(&self, location: &str) -> (StatusCode, Value) {
        let resp = self
            .client
            .get(self.app.url(location))
            .send()
            .await
            .expect("GET completes");
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

pub fn header(headers: &HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("a {name} header in {headers:?}"))
        .to_str()
        .expect("ASCII")
        .to_owned()
}

/// The error code of an error answer (which must carry a message too).
pub async fn error_code(resp: Response) -> (StatusCode, String) {
    let status = resp.status();
    let body: Value = resp.json().await.expect("error body is JSON");
    assert!(
        !body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{body}"
    );
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Every parsed row of sheet 0 of `file_id`, page by page.
pub async fn rows_of(app: &TestApp, file_id: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut after = None;
    loop {
        let path = match after {
            None => format!("/api/v1/files/{file_id}/rows?sheet=0&limit=1000"),
            Some(a) => format!("/api/v1/files/{file_id}/rows?sheet=0&limit=1000&after={a}"),
        };
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        rows.extend(page["rows"].as_array().expect("rows").iter().cloned());
        match page["next_after"].as_i64() {
            Some(next) => after = Some(next),
            None => return rows,
        }
    }
}

/// The upload row's offset and number of counted blocks, straight from Postgres.
pub async fn stored_state(app: &TestApp, location: &str) -> (i64, i64) {
    let id: uuid::Uuid = location
        .rsplit('/')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("an id");
    sqlx::query_as(
        "SELECT upload_offset, cardinality(block_ids)::bigint FROM resumable_uploads WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.db)
    .await
    .expect("the upload row")
}
