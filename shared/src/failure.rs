//! What a failed call to a dependency means, one rule per seam, so that every loop and handler
//! answers the same failure the same way. A [`Failure`] is one of three things: the dependency is
//! down ([`Failure::Outage`]: wait and try again, nothing is anyone's fault), it refuses *us*
//! ([`Failure::Refused`]: our credentials, role or configuration are wrong; no message is to
//! blame, and an operator must act), or the request itself is bad ([`Failure::Fault`]: the
//! message, file or query is at fault, and it alone pays, with an attempt or a failed task).
//!
//! The seams: Postgres ([`db`]), Azure Storage's blobs and queues ([`storage`]: one rule for
//! both), and a webhook receiver's HTTP answer ([`http`]). [`of`] finds the first Postgres or
//! Storage error in an error's chain, for loops that see `anyhow` errors.
//!
//! How callers act on it: the relay and the consumer never charge a message for an `Outage` or a
//! `Refused` (the relay defers without spending an attempt, the consumer requeues without
//! counting the delivery); start-up and the consumer's receive wait out an `Outage` but stop the
//! process on `Refused` (it can do nothing until an operator fixes it, and exiting non-zero is
//! the alert); the claim loops back off on a Postgres `Outage` and end with an error on anything
//! else; the API answers 503 to a Postgres `Outage`.

use crate::storage::StorageError;

/// What a failure means for the work that met it (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The dependency is unreachable, overloaded or timing out: try again later.
    Outage,
    /// The dependency refuses us (authentication, authorisation, a missing resource we are
    /// configured to use): not the message's fault; an operator must fix it.
    Refused,
    /// The request itself is bad: the message, file or query is at fault.
    Fault,
}

impl Failure {
    /// True for an `Outage` or a `Refused`: nothing the message did, so it must not pay for it.
    pub fn spares_the_message(self) -> bool {
        self != Failure::Fault
    }
}

/// Postgres. `Outage`: the connection broke or could not be had (I/O, TLS, pool timeout or
/// closed), the server is shutting down or restarting (SQLSTATE class `57P`), the connection
/// failed (class `08`), it has too many connections (`53300`), or the statement lost a race
/// with another transaction that it wins when tried again (a deadlock `40P01`, a serialization
/// failure `40001`, a lock not available `55P03`): these pass by themselves. A lost race is
/// never the statement's fault: a tenant's ordinary calls (a webhook replay beside deliveries
/// being recorded) can cause one, and a loop that ended on it would let that tenant stop every
/// tenant's work.
/// `Refused`: the server rejects our login (class `28`: a wrong password or role), our role
/// lacks a privilege (`42501`), or the database does not exist (`3D000`): configuration, which
/// waiting does not fix. Everything else (a constraint, a bad query, a decode error) is a
/// `Fault` of the statement.
pub fn db(err: &sqlx::Error) -> Failure {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_) => Failure::Outage,
        sqlx::Error::Database(e) => match e.code() {
            Some(c)
                if c.starts_with("57P")
                    || c.starts_with("08")
                    || matches!(&*c, "53300" | "40P01" | "40001" | "55P03") =>
            {
                Failure::Outage
            }
            Some(c) if c.starts_with("28") || c == "42501" || c == "3D000" => Failure::Refused,
            _ => Failure::Fault,
        },
        _ => Failure::Fault,
    }
}

/// Azure Storage, blobs and queues alike. `Outage`: the service could not be reached, timed out
/// (408), throttled us (429) or failed (5xx) ([`StorageError::is_transient`]). `Refused`: no
/// token could be had, the identity lacks a role (401/403) or the queue we are configured to
/// use does not exist ([`StorageError::is_access_refused`]). A 403 means our credentials are
/// wrong, never that a message is bad: were it the message's fault, a missing role assignment
/// would turn every pending outbox message `DEAD` and make every task's message count
/// deliveries until it is poisoned, for an operator's mistake. Everything else (400, 404 of a
/// blob, 413) is the request's `Fault`.
pub fn storage(err: &StorageError) -> Failure {
    if err.is_transient() {
        Failure::Outage
    } else if err.is_access_refused() {
        Failure::Refused
    } else {
        Failure::Fault
    }
}

/// A webhook receiver's answer to a request that was not a 2xx, `status` being `None` when there
/// was no answer (a timeout, no connection, an address we refuse to call). `Outage`: no answer,
/// 429 or 5xx: the endpoint is down, its other deliveries wait. `Refused`: 410 Gone: the
/// receiver wants nothing more from us (the endpoint is disabled). Any other status, a 401 or
/// 403 included, is that delivery's `Fault`: a receiver's authentication is the signature of
/// this very request, and the retry schedule (then `WEBHOOK_DISABLE_AFTER`) already bounds what
/// a receiver that keeps refusing costs.
pub fn http(status: Option<u16>) -> Failure {
    match status {
        None | Some(429 | 500..) => Failure::Outage,
        Some(410) => Failure::Refused,
        Some(_) => Failure::Fault,
    }
}

/// The failure of the first Postgres or Storage error in `err`'s chain; a `Fault` when there is
/// none (an error of ours, e.g. a local file that could not be written).
pub fn of(err: &(dyn std::error::Error + 'static)) -> Failure {
    causes(err)
        .find_map(|c| {
            c.downcast_ref::<sqlx::Error>()
                .map(db)
                .or_else(|| c.downcast_ref::<StorageError>().map(storage))
        })
        .unwrap_or(Failure::Fault)
}

/// The failure of the first Postgres error in `err`'s chain, if there is one: whether Postgres
/// itself is down, for loops that pause all work while it is.
pub fn of_db(err: &(dyn std::error::Error + 'static)) -> Option<Failure> {
    causes(err).find_map(|c| c.downcast_ref::<sqlx::Error>().map(db))
}

fn causes<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |e| e.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(status: u16, code: Option<&str>) -> StorageError {
        StorageError::Service {
            status,
            code: code.map(str::to_owned),
        }
    }

    #[test]
    fn storage_tells_an_outage_from_a_refusal_from_a_bad_request() {
        for status in [408, 429, 500, 503] {
            assert_eq!(storage(&service(status, None)), Failure::Outage, "{status}");
        }
        assert_eq!(
            storage(&StorageError::Transport("reset".into())),
            Failure::Outage
        );
        for (status, code) in [(401, None), (403, None), (404, Some("QueueNotFound"))] {
            assert_eq!(
                storage(&service(status, code)),
                Failure::Refused,
                "{status}"
            );
        }
        assert_eq!(
            storage(&StorageError::Credential("no token".into())),
            Failure::Refused
        );
        for (status, code) in [(400, None), (404, Some("BlobNotFound")), (413, None)] {
            assert_eq!(storage(&service(status, code)), Failure::Fault, "{status}");
        }
    }

    #[test]
    fn postgres_outages_are_told_from_bad_statements() {
        assert_eq!(db(&sqlx::Error::PoolTimedOut), Failure::Outage);
        assert_eq!(
            db(&sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into())),
            Failure::Outage
        );
        assert_eq!(db(&sqlx::Error::RowNotFound), Failure::Fault);
    }

    #[test]
    fn an_http_answer_is_an_outage_a_refusal_or_the_deliverys_fault() {
        for status in [None, Some(429), Some(500), Some(503)] {
            assert_eq!(http(status), Failure::Outage, "{status:?}");
        }
        assert_eq!(http(Some(410)), Failure::Refused);
        for status in [400, 401, 403, 404, 408, 422] {
            assert_eq!(http(Some(status)), Failure::Fault, "{status}");
        }
    }

    #[test]
    fn the_first_typed_cause_in_a_chain_decides() {
        let wrapped = anyhow::Error::new(service(403, None)).context("downloading");
        assert_eq!(of(&*wrapped), Failure::Refused);
        assert_eq!(of_db(&*wrapped), None);
        let db_down = anyhow::Error::new(sqlx::Error::PoolClosed).context("reading");
        assert_eq!(of(&*db_down), Failure::Outage);
        assert_eq!(of_db(&*db_down), Some(Failure::Outage));
        assert_eq!(of(&*anyhow::anyhow!("anything else")), Failure::Fault);
    }
}
