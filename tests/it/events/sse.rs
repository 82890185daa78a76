//! A minimal Server-Sent Events reader over a `reqwest` response, for the stream tests: frames
//! (`id`, `event`, `data`) and comment lines, as a browser's EventSource parses them.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Event {
        id: String,
        event: String,
        data: Value,
    },
    Comment(String),
}

pub struct SseReader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            body: resp.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// The next frame or comment, failing the test after `within`; `None` when the stream ended.
    pub async fn next(&mut self, within: Duration) -> Option<Item> {
        tokio::time::timeout(within, self.next_item())
            .await
            .unwrap_or_else(|_| panic!("nothing on the stream within {within:?}"))
    }

    /// The next event, skipping comments.
    pub async fn next_event(&mut self, within: Duration) -> (String, String, Value) {
        loop {
            match self.next(within).await {
                Some(Item::Event { id, event, data }) => return (id, event, data),
                Some(Item::Comment(_)) => {}
                None => panic!("the stream ended"),
            }
        }
    }

    async fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                if let Some(item) = parse(&block) {
                    return Some(item);
                }
                continue;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self
                    .buf
                    .push_str(std::str::from_utf8(&chunk).expect("utf-8 stream")),
                Some(Err(e)) => panic!("stream error: {e}"),
                None => return None,
            }
        }
    }
}

fn parse(block: &str) -> Option<Item> {
    let (mut id, mut event, mut data) = (None, None, Vec::new());
    for line in block.lines() {
        if let Some(comment) = line.strip_prefix(':') {
            return Some(Item::Comment(comment.trim().to_owned()));
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => id = Some(value.to_owned()),
            "event" => event = Some(value.to_owned()),
            "data" => data.push(value.to_owned()),
            _ => {}
        }
    }
    Some(Item::Event {
        id: id?,
        event: event?,
        data: serde_json::from_str(&data.join("\n")).expect("data is JSON"),
    })
}
