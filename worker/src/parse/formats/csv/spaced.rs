//! Text written `a, b, "c, d"`: a space after every delimiter, which is no part of the next
//! field (and would otherwise keep `"c, d"` from being read as a quoted field). The spaces are
//! dropped from the stream before records are split, outside quotes only.

use std::io::{self, Read};

use crate::parse::formats::delimiter::Quoting;

/// Drops the spaces that follow a delimiter outside quotes.
pub(super) struct SpacesAfterDelimiters<R> {
    inner: R,
    delimiter: u8,
    quoting: Quoting,
    in_quotes: bool,
    escaped: bool,
    after_delimiter: bool,
}

impl<R> SpacesAfterDelimiters<R> {
    pub fn new(inner: R, delimiter: u8, quoting: Quoting) -> Self {
        Self {
            inner,
            delimiter,
            quoting,
            in_quotes: false,
            escaped: false,
            after_delimiter: false,
        }
    }
}

impl<R: Read> Read for SpacesAfterDelimiters<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            let mut kept = 0;
            for i in 0..n {
                let b = buf[i];
                if self.after_delimiter && b == b' ' {
                    continue;
                }
                self.after_delimiter = false;
                if self.escaped {
                    self.escaped = false;
                } else if self.in_quotes && Some(b) == self.quoting.escape {
                    self.escaped = true;
                } else if b == self.quoting.quote {
                    self.in_quotes = !self.in_quotes;
                } else if b == self.delimiter && !self.in_quotes {
                    self.after_delimiter = true;
                }
                buf[kept] = b;
                kept += 1;
            }
            // A read of nothing but dropped spaces is no end of input: read on.
            if kept > 0 {
                return Ok(kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_after_delimiters_go_and_quoted_ones_stay() {
        let text = &b"a,  b, \"c, d\", ' x'\n1, 2"[..];
        let mut out = String::new();
        let read =
            SpacesAfterDelimiters::new(text, b',', Quoting::RFC4180).read_to_string(&mut out);
        assert!(read.is_ok());
        assert_eq!(out, "a,b,\"c, d\",' x'\n1,2");
    }
}
