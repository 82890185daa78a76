//! The HTTP edge against clients that are slow, malformed or hostile: they are cut off or
//! refused with the contract's JSON body, and nothing they send is kept.

use std::time::{Duration, Instant};

use harness::app::{TestApp, UploadRows};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

const CSV: &[u8] = b"id,name\n1,Alice\n";

async fn json_error(resp: reqwest::Response) -> (StatusCode, String) {
    let status = resp.status();
    assert_eq!(
        resp.headers()["content-type"].to_str().expect("ascii"),
        "application/json",
        "{status}"
    );
    let body: Value = resp.json().await.expect("a JSON error body");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn host_port(app: &TestApp) -> String {
    app.base_url.trim_start_matches("http://").to_owned()
}

/// Reads until the server closes the connection; what it sent.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_client_trickling_its_headers_is_disconnected_while_others_are_served() {
    let app = TestApp::spawn_with(|cfg| cfg.http.header_timeout = Duration::from_secs(1)).await;
    let mut slow = TcpStream::connect(host_port(&app)).await.expect("connect");
    let started = Instant::now();
    let trickle = async {
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if slow.write_all(&[*byte]).await.is_err() {
                return; // the server closed the connection
            }
            // The client's own pace (1 byte per 100 ms), not a synchronisation.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let served = async {
        // Normal requests keep flowing meanwhile.
        for _ in 0..5 {
            let (status, _) = app.get_json("/api/v1/files").await;
            assert_eq!(status, StatusCode::OK);
        }
    };
    tokio::join!(trickle, served);
    let closed_after = started.elapsed();
    let rest = tokio::time::timeout(Duration::from_secs(10), read_to_close(&mut slow))
        .await
        .expect("the server closes the connection");
    assert!(
        closed_after < Duration::from_secs(5),
        "the trickling client was cut off after {closed_after:?}, with the whole header taking 9 s"
    );
    assert!(
        !rest.contains("200 OK"),
        "the request was never served: {rest:?}"
    );
}

#[tokio::test]
async fn a_stalled_upload_body_is_cut_off_and_nothing_is_kept() {
    let app = TestApp::spawn_with(|cfg| cfg.http.body_idle_timeout = Duration::from_secs(1)).await;
    let mut stream = TcpStream::connect(host_port(&app)).await.expect("connect");
    let body_start = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\nid,name\n1,";
    let head = format!(
        "POST /api/v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n{body_start}",
        app.key
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    // ...and then nothing more.
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = vec![0u8; 4096];
        let n = stream.read(&mut buf).await.expect("read");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    })
    .await
    .expect("the server answers the stalled upload");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"body_timeout\""), "{answer}");
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
    assert!(app.blob_names().await.is_empty());
}

#[tokio::test]
async fn oversized_part_headers_and_duplicate_file_parts_are_refused_with_json() {
    let app = TestApp::spawn().await;
    let huge_header = format!(
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\nX-Pad: {}\r\n\r\nid\n1\n\r\n--B--\r\n",
        "p".repeat(1024 * 1024)
    );
    let resp = app
        .client
        .post(app.url("/api/v1/files"))
        .header("content-type", "multipart/form-data; boundary=B")
        .body(huge_header)
        .send()
        .await
        .expect("post");
    assert_eq!(
        json_error(resp).await,
        (StatusCode::BAD_REQUEST, "part_header_too_large".into())
    );

    let two = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("a.csv"),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("b.csv"),
        );
    let resp = app
        .client
        .post(app.url("/api/v1/files"))
        .multipart(two)
        .send()
        .await
        .expect("post");
    assert_eq!(
        json_error(resp).await,
        (StatusCode::BAD_REQUEST, "multiple_file_parts".into())
    );
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
    assert!(
        app.blob_names().await.is_empty(),
        "the first part's blob is deleted"
    );
}

#[tokio::test]
async fn every_error_the_server_produces_has_a_json_body() {
    let app = TestApp::spawn().await;
    let cases: Vec<(reqwest::RequestBuilder, StatusCode, &str)> = vec![
        (
            app.client.get(app.url("/api/v1/files/not-a-uuid")),
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
        ),
        (
            app.client.get(app.url("/api/v1/tasks/42")),
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
        ),
        (
            app.client.get(app.url("/api/v1/files?limit=0")),
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
        ),
        (
            app.client.get(app.url("/api/v1/files?after=x")),
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
        ),
        (
            app.client.get(app.url("/nowhere")),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            app.client.put(app.url("/api/v1/files")),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            app.client.delete(app.url("/healthz")),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            app.client
                .get(app.url(&format!("/api/v1/files?x={}", "a".repeat(9000)))),
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
        ),
        (
            app.client
                .get(app.url("/healthz"))
                .header("x-big", "b".repeat(40 * 1024)),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
        ),
    ];
    for (req, status, code) in cases {
        let resp = req.send().await.expect("request");
        // Refusals at the outermost layer (414, 431) carry these too.
        let h = resp.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{code}");
        assert_eq!(h["cache-control"], "no-store", "{code}");
        assert!(h.contains_key("x-request-id"), "{code}");
        assert_eq!(json_error(resp).await, (status, code.to_owned()));
    }
    // Many headers, each small.
    let mut req = app.client.get(app.url("/healthz"));
    for i in 0..150 {
        req = req.header(format!("x-h{i}"), "v");
    }
    let resp = req.send().await.expect("request");
    assert_eq!(
        json_error(resp).await,
        (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large".into()
        )
    );
}

#[tokio::test]
async fn answers_carry_security_headers_and_only_plain_request_ids() {
    let app = TestApp::spawn().await;
    let resp = app
        .client
        .get(app.url("/api/v1/files"))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .expect("get");
    let h = resp.headers();
    assert_eq!(h["x-request-id"], "abc-123");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["cache-control"], "no-store");
    assert!(h["content-security-policy"]
        .to_str()
        .expect("ascii")
        .contains("default-src 'none'"));

    for hostile in ["<script>alert(1)</script>".to_owned(), "x".repeat(5000)] {
        let resp = app
            .client
            .get(app.url("/healthz"))
            .header("x-request-id", &hostile)
            .send()
            .await
            .expect("get");
        let echoed = resp.headers()["x-request-id"].to_str().expect("ascii");
        assert_ne!(echoed, hostile);
        assert!(
            uuid::Uuid::parse_str(echoed).is_ok(),
            "replaced by a fresh id: {echoed}"
        );
    }
}

#[tokio::test]
async fn invented_methods_do_not_grow_the_metrics() {
    let app = TestApp::spawn().await;
    let before = api::metrics::handle().render();
    for i in 0..50 {
        let method =
            reqwest::Method::from_bytes(format!("INVENTED{i}").as_bytes()).expect("method");
        let resp = app
            .client
            .request(method, app.url("/api/v1/files"))
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
    let after = api::metrics::handle().render();
    assert!(
        !after.contains("INVENTED"),
        "no invented method became a label"
    );
    assert!(after.contains("method=\"other\""));
    // The values the `method` label takes: `other` at most is new, not fifty. (Counted as label
    // values, not as series: the recorder is the test process's, and tests running beside this
    // one add series of their own routes, never methods of their own.)
    let methods = |text: &str| -> std::collections::BTreeSet<String> {
        text.split("method=\"")
            .skip(1)
            .filter_map(|rest| rest.split_once('"').map(|(value, _)| value.to_owned()))
            .collect()
    };
    let new: Vec<String> = methods(&after)
        .difference(&methods(&before))
        .cloned()
        .collect();
    assert!(
        new.is_empty() || new == ["other"],
        "new method labels: {new:?}"
    );
}

#[tokio::test]
async fn metrics_are_served_on_their_own_listener_not_the_public_port() {
    let app = TestApp::spawn().await;
    let resp = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(api::serve_metrics(listener, shutdown.clone()));
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("get")
        .text()
        .await
        .expect("text");
    assert!(text.contains("sheetrelay_http_requests_total"), "{text}");
    shutdown.cancel();
}

#[tokio::test]
async fn a_refused_large_upload_leaves_no_staged_blocks() {
    // Past one 4 MiB block, so blocks are staged before the limit is hit.
    let limit = 5 * 1024 * 1024;
    let app = TestApp::spawn_with(|cfg| cfg.max_upload_bytes = limit).await;
    let resp = app
        .upload("big.csv", vec![b'a'; limit as usize + 1], None)
        .await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        app.blobs
            .list_names_with_uncommitted()
            .await
            .expect("list")
            .is_empty(),
        "no blob, committed or not"
    );
}

#[tokio::test]
async fn cleartext_http2_is_not_spoken_so_no_connection_escapes_the_header_timeout() {
    let app = TestApp::spawn_with(|cfg| cfg.http.header_timeout = Duration::from_secs(1)).await;
    let mut conn = TcpStream::connect(host_port(&app)).await.expect("connect");
    // The HTTP/2 connection preface (prior knowledge): an HTTP/2 server would answer with a
    // SETTINGS frame and wait, with no header-read timeout, for a request that never comes.
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .expect("send the preface");
    let answer = tokio::time::timeout(Duration::from_secs(10), read_to_close(&mut conn))
        .await
        .expect("the server closes the connection");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 "),
        "answered as HTTP/1.1 or not at all: {answer:?}"
    );
}

#[tokio::test]
async fn an_export_whose_client_stops_reading_gives_its_database_connection_back() {
    // One database connection: while the stalled export holds it, nothing else can run.
    let app = TestApp::spawn_with(|cfg| {
        cfg.max_upload_bytes = 64 * 1024 * 1024;
        cfg.database.max_connections = 1;
        cfg.database.acquire_timeout = Duration::from_secs(20);
        cfg.http.body_idle_timeout = Duration::from_secs(1);
    })
    .await;
    // About 16 MB of CSV: more than the export's channel and both sockets' buffers hold.
    let csv: String = std::iter::once("id,text\n".to_owned())
        .chain((0..160_000).map(|i| format!("{i},{:0>90}\n", i)))
        .collect();
    let resp = app.upload("wide.csv", csv.into_bytes(), None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    app.run_worker_until_completed(upload["task"]["id"].as_str().expect("task id"))
        .await;
    let id = upload["source_file"]["id"].as_str().expect("id");

    // A client with a small receive buffer asks for the export, reads its first bytes (the
    // export is streaming, so it holds the connection), then reads nothing more.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("small buffer");
    let mut stalled = socket
        .connect(host_port(&app).parse().expect("socket address"))
        .await
        .expect("connect");
    let request = format!(
        "GET /api/v1/files/{id}/rows/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n",
        app.key
    );
    stalled
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    let mut first = [0u8; 1024];
    let n = stalled.read(&mut first).await.expect("read");
    assert!(
        String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&first[..n])
    );

    // Needs the one connection. Before the export gave up on its client, this waited out the
    // pool's acquire timeout and answered 503.
    let started = Instant::now();
    let (status, _) = app.get_json("/api/v1/files").await;
    assert_eq!(status, StatusCode::OK, "after {:?}", started.elapsed());
    drop(stalled);
}

#[tokio::test]
async fn an_upload_whose_client_goes_away_mid_body_leaves_no_staged_blocks() {
    let app = TestApp::spawn_with(|cfg| cfg.max_upload_bytes = 64 * 1024 * 1024).await;
    let boundary = "sheetrelay-abort";
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n\
         Content-Type: text/csv\r\n\r\n"
    );
    let declared = head.len() + 10 * 1024 * 1024;
    let mut conn = TcpStream::connect(host_port(&app)).await.expect("connect");
    let request = format!(
        "POST /api/v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {declared}\r\n\r\n{head}",
        app.key
    );
    conn.write_all(request.as_bytes()).await.expect("headers");
    // Past one 4 MiB block, so one is staged in Blob Storage before the client goes away.
    conn.write_all(&vec![b'a'; 6 * 1024 * 1024])
        .await
        .expect("part of the body");
    harness::worker::eventually(Duration::from_secs(20), "a staged block", || async {
        !app.blobs
            .list_names_with_uncommitted()
            .await
            .expect("list")
            .is_empty()
    })
    .await;
    drop(conn);
    harness::worker::eventually(
        Duration::from_secs(20),
        "the staged blocks discarded",
        || async {
            app.blobs
                .list_names_with_uncommitted()
                .await
                .expect("list")
                .is_empty()
        },
    )
    .await;
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
}
