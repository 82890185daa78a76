//! The upload web page: `GET /` and `GET /assets/{name}`. Plain HTML, CSS and ES modules from
//! `api/web/`, built into the binary so the page works offline and needs no other server. These
//! routes are public: the page holds no data, and every call it makes carries the user's key.
//!
//! Every answer has a strict Content-Security-Policy (this origin only, no inline script or
//! style), and an ETag with `Cache-Control: no-cache`, so a browser revalidates each load
//! and gets `304` until the binary serving it changes.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;

/// This origin only; `blob:` images and downloads come from the page's own object URLs.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const INDEX: Asset = Asset {
    name: "index.html",
    content_type: "text/html; charset=utf-8",
    body: include_bytes!("../../web/index.html"),
};

/// The embeddable importer (contract v1.3), for other origins' pages: `/embed/importer.js`. A
/// classic script, so it is served in a closure of its own with the tus client's core
/// (`tus.js`, which the page's `resumable.js` module is served after too: one copy of it) and
/// the error report's grid (`grid.js`, which the page's `report.js` module is served after).
const IMPORTER: Asset = Asset {
    name: "importer.js",
    content_type: "text/javascript; charset=utf-8",
    body: concat!(
        "(() => {\n'use strict';\n\n",
        include_str!("../../web/tus.js"),
        "\n",
        include_str!("../../web/grid.js"),
        "\n",
        include_str!("../../web/embed/importer.js"),
        "})();\n"
    )
    .as_bytes(),
};

/// What `/assets/{name}` serves; anything else is `404`.
const ASSETS: &[Asset] = &[
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/app.js"),
    },
    Asset {
        name: "api.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/api.js"),
    },
    Asset {
        name: "events.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/events.js"),
    },
    Asset {
        name: "layout.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/layout.js"),
    },
    Asset {
        name: "preview.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/preview.js"),
    },
    Asset {
        name: "report.js",
        content_type: "text/javascript; charset=utf-8",
        body: concat!(
            include_str!("../../web/grid.js"),
            "\n",
            include_str!("../../web/report.js")
        )
        .as_bytes(),
    },
    Asset {
        name: "resumable.js",
        content_type: "text/javascript; charset=utf-8",
        body: concat!(
            include_str!("../../web/tus.js"),
            "\n",
            include_str!("../../web/resumable.js")
        )
        .as_bytes(),
    },
    Asset {
        name: "review.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/review.js"),
    },
    Asset {
        name: "templates.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/templates.js"),
    },
    Asset {
        name: "uploads.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/uploads.js"),
    },
    Asset {
        name: "util.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../web/util.js"),
    },
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../web/style.css"),
    },
    Asset {
        name: "favicon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../../web/favicon.svg"),
    },
];

/// A strong ETag per asset, the start of its SHA-256, computed once.
static ETAGS: LazyLock<Vec<(&'static str, HeaderValue)>> = LazyLock::new(|| {
    [&INDEX, &IMPORTER]
        .into_iter()
        .chain(ASSETS)
        .map(|a| {
            let digest = Sha256::digest(a.body);
            let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
            let tag = HeaderValue::from_str(&format!("\"{hex}\""))
                .unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
            (a.name, tag)
        })
        .collect()
});

fn etag(name: &str) -> HeaderValue {
    ETAGS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or_else(|| HeaderValue::from_static("\"0\""), |(_, t)| t.clone())
}

fn serve(asset: &'static Asset, request: &HeaderMap) -> Response {
    let tag = etag(asset.name);
    let fresh = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|candidate| {
            let candidate = candidate.trim();
            candidate == "*" || candidate.trim_start_matches("W/").as_bytes() == tag.as_bytes()
        });
    let headers = [
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::ETAG, tag),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (
        headers,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        )],
        asset.body,
    )
        .into_response()
}

/// The page itself.
pub async fn index(request: HeaderMap) -> Response {
    serve(&INDEX, &request)
}

/// The embeddable importer's script: public, like the page, and loaded by a plain `<script src>`
/// from another origin (a classic script needs no CORS answer).
pub async fn importer(request: HeaderMap) -> Response {
    serve(&IMPORTER, &request)
}

/// The page's scripts, styles and icon.
pub async fn asset(Path(name): Path<String>, request: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(asset) => serve(asset, &request),
        None => ApiError::NotFound(format!("no asset {name}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_of(response: &Response, name: header::HeaderName) -> String {
        response.headers()[name].to_str().unwrap().to_owned()
    }

    /// The names in `"/assets/NAME"` and `'./NAME'` references of a text.
    fn references(text: &str) -> Vec<String> {
        let mut names = Vec::new();
        for (open, close) in [("\"/assets/", '"'), ("'./", '\'')] {
            for piece in text.split(open).skip(1) {
                names.push(piece[..piece.find(close).unwrap()].to_owned());
            }
        }
        names
    }

    #[tokio::test]
    async fn every_file_the_page_references_is_served_with_its_type() {
        let mut wanted = references(std::str::from_utf8(INDEX.body).unwrap());
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            wanted.extend(references(std::str::from_utf8(asset.body).unwrap()));
        }
        assert!(wanted.iter().any(|n| n == "app.js") && wanted.iter().any(|n| n == "util.js"));
        for name in &wanted {
            let response = super::asset(Path(name.clone()), HeaderMap::new()).await;
            assert_eq!(response.status(), StatusCode::OK, "{name}");
        }
        for asset in ASSETS {
            assert!(
                wanted.contains(&asset.name.to_owned()),
                "{} is unused",
                asset.name
            );
            let response = super::asset(Path(asset.name.to_owned()), HeaderMap::new()).await;
            assert_eq!(
                header_of(&response, header::CONTENT_TYPE),
                asset.content_type
            );
        }
    }

    #[tokio::test]
    async fn the_page_has_no_inline_script_and_a_strict_policy() {
        let html = std::str::from_utf8(INDEX.body).unwrap();
        // Every <script> element loads a file: CSP forbids inline code.
        for tag in html.split("<script").skip(1) {
            let open = &tag[..tag.find('>').unwrap()];
            assert!(open.contains("src="), "inline <script{open}>");
        }
        assert!(!html.contains(" style="), "inline style attribute");
        let response = index(HeaderMap::new()).await;
        let csp = header_of(&response, header::CONTENT_SECURITY_POLICY);
        assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
        assert!(!csp.contains("unsafe"));
        assert_eq!(header_of(&response, header::CACHE_CONTROL), "no-cache");
    }

    #[tokio::test]
    async fn a_matching_etag_answers_not_modified_and_an_unknown_asset_is_not_found() {
        let first = index(HeaderMap::new()).await;
        let mut request = HeaderMap::new();
        request.insert(header::IF_NONE_MATCH, first.headers()[header::ETAG].clone());
        assert_eq!(index(request).await.status(), StatusCode::NOT_MODIFIED);

        let mut stale = HeaderMap::new();
        stale.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"old\""));
        assert_eq!(index(stale).await.status(), StatusCode::OK);

        let missing = asset(Path("../Cargo.toml".to_owned()), HeaderMap::new()).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }
}
