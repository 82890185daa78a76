//! Recording an upload, whichever way its bytes came: the tenant limits it passes ([`limits`]),
//! the source file, task and outbox message it becomes ([`record`]), and the end of a resumable
//! upload whose blob was written over many requests ([`finish`]). No HTTP here: the multipart
//! route (`routes::upload`) and the tus routes (`routes::resumable`) call these the same way,
//! so every upload is limited, recorded, replayed, logged and counted alike.

pub(crate) mod finish;
pub(crate) mod limits;
pub(crate) mod record;
