//! Domain types shared by the api and the worker: file formats, task and outbox states, the codes
//! a task fails with, the queue message envelope the relay sends and the consumer reads, and the
//! events applications are told about.

pub mod column_type;
pub mod digest;
pub mod envelope;
pub mod error_code;
pub mod error_record;
pub mod event;
pub mod format;
pub mod hook;
pub mod key_index;
pub mod layout_override;
pub mod metadata;
pub mod on_invalid;
pub mod origin;
pub mod review;
pub mod status;
pub mod task_result;

pub use column_type::{ColumnType, TypeSet};
pub use envelope::{Envelope, MessageEncoding, ParseTaskPayload, PARSE_TASK};
pub use error_code::{AttemptKind, TaskErrorCode};
pub use error_record::ErrorRecord;
pub use event::{EventType, EventView};
pub use format::FileFormat;
pub use on_invalid::OnInvalid;
pub use status::{OutboxStatus, TaskStatus};
