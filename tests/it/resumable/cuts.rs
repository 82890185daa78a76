//! Resumable uploads across failures: connections cut at arbitrary points (a raw TCP client
//! that sends part of a `PATCH` and hangs up, in its headers or in the middle of a block), and an
//! api restarted between two requests. The offset `HEAD` reports afterwards is never past what
//! was sent, and the upload resumed from it completes with the file's exact bytes.

use harness::app::TestApp;
use reqwest::StatusCode;
use shared::domain::digest::sha256_hex;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

use super::client::{csv_of, header, Tus};

/// Sends a `PATCH` of `body` at `offset` over a fresh connection, writes only its first `cut`
/// bytes (headers included) and drops the connection.
async fn cut_patch(app: &TestApp, location: &str, offset: u64, body: &[u8], cut: usize) {
    let addr = app.base_url.trim_start_matches("http://");
    let head = format!(
        "PATCH {location} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Tus-Resumable: 1.0.0\r\nUpload-Offset: {offset}\r\n\
         Content-Type: application/offset+octet-stream\r\nContent-Length: {}\r\n\r\n",
        app.key,
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    // The server may answer (and close) before the body is in, e.g. a `409` when a block of
    // the previous cut request counted after the client's HEAD: a broken pipe is that answer.
    let _ = stream.write_all(&request[..cut.min(request.len())]).await;
    let _ = stream.flush().await;
    drop(stream);
}

/// A small deterministic generator: the cut points differ from run to run of the loop, not
/// between test runs.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        usize::try_from((self.0 >> 33) % n as u64).expect("fits")
    }
}

#[tokio::test]
async fn connections_cut_at_random_points_leave_a_consistent_offset_and_the_upload_completes() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(10 * 1024 * 1024);
    let location = tus.create(csv.len() as u64, "cut.csv").await;
    let mut rng = Lcg(29);
    let mut sent_before = 0u64;
    // The furthest byte any request so far carried: a cut request's handler may still be
    // storing what it received after the client has moved on (tus has the server keep as much
    // of it as it can), so the offset after a round may come from an earlier round's request.
    let mut reach = 0u64;
    for round in 0..8 {
        let offset = tus.offset(&location).await;
        assert!(offset >= sent_before, "the offset never goes back");
        let start = usize::try_from(offset).unwrap();
        let body = &csv[start..];
        // Round 0 cuts inside the headers; the others somewhere in the body, often mid-block.
        let cut = if round == 0 {
            40
        } else {
            400 + rng.below(body.len().min(6 << 20))
        };
        cut_patch(&app, &location, offset, body, cut).await;
        reach = reach.max(offset + cut as u64);
        let after = tus.offset(&location).await;
        assert!(
            after <= reach,
            "round {round}: offset {after} is past every byte sent ({reach}; this round {cut} from {offset})"
        );
        sent_before = offset;
    }
    // Resume as a client does: HEAD, PATCH the rest; a 409 means a cut request's last block
    // counted meanwhile, so ask again.
    loop {
        let offset = tus.offset(&location).await;
        if offset == csv.len() as u64 {
            break;
        }
        let start = usize::try_from(offset).unwrap();
        let resp = tus
            .patch(&location, offset, csv[start..].to_vec(), None)
            .await;
        match resp.status() {
            StatusCode::NO_CONTENT => break,
            StatusCode::CONFLICT => continue,
            other => panic!("unexpected {other}: {:?}", resp.text().await),
        }
    }
    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["source_file"]["sha256"], sha256_hex(&csv));
    assert_eq!(body["source_file"]["size_bytes"], csv.len());
}

#[tokio::test]
async fn an_api_restarted_mid_upload_resumes_at_the_recorded_offset() {
    let first = TestApp::spawn().await;
    let csv = csv_of(6 * 1024 * 1024);
    let location = Tus::new(&first).create(csv.len() as u64, "r.csv").await;
    let resp = Tus::new(&first)
        .patch(&location, 0, csv[..4_500_000].to_vec(), None)
        .await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let config = first.config.clone();
    drop(first);

    let second = TestApp::spawn_on(config).await;
    let tus = Tus::new(&second);
    let head = tus.head(&location).await;
    assert_eq!(header(head.headers(), "upload-offset"), "4500000");
    tus.send_rest(&location, &csv, 8 << 20).await;
    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["source_file"]["sha256"], sha256_hex(&csv));
    second
        .run_worker_until_completed(body["task"]["id"].as_str().unwrap())
        .await;
}
