//! How parsed rows are written out: JSON text without a serializer in the hot path ([`json`]),
//! and a buffered writer whose full buffers a thread of its own writes, so that the parse thread
//! only parses ([`background`]).

pub(super) mod background;
pub(super) mod json;
