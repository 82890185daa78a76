//! What one endpoint's batch of answers writes: the attempt log, each delivery's new state
//! (delivered; failed and retried after the schedule's next step, or `Retry-After`; dead after
//! its last; deferred, untried, when the endpoint was found down), the endpoint's health, and
//! the report.

use std::time::Duration;

use shared::db::deliveries::{Attempt, Delivery, Health, Settled};
use uuid::Uuid;

use super::client::{Answer, Outcome};
use super::RetrySchedule;
use crate::claim::Report;

/// What one endpoint's batch writes: the attempt log, each delivery's new state, the endpoint's
/// health, and the report.
pub(super) struct Plan {
    pub(super) attempts: Vec<Attempt>,
    pub(super) settled: Vec<(Uuid, Settled)>,
    pub(super) health: Health,
    pub(super) report: Report,
}

impl Plan {
    pub(super) fn new(
        batch: &[(Delivery, Option<Answer>)],
        schedule: &RetrySchedule,
        disable_after: Duration,
    ) -> Self {
        let mut plan = Plan {
            attempts: Vec::new(),
            settled: Vec::new(),
            health: Health::Unknown,
            report: Report::default(),
        };
        // The retry of the request that found the endpoint down: what its untried siblings wait.
        let mut down: Option<(Duration, String)> = None;
        let mut answered = false;
        let mut gone = false;
        for (d, answer) in batch {
            let Some(a) = answer else { continue };
            plan.attempts.push(Attempt {
                event_id: d.event_id,
                attempt: d.attempts + 1,
                status_code: a.status.map(i32::from),
                outcome: a.outcome.as_str(),
                duration_ms: i32::try_from(a.took.as_millis()).unwrap_or(i32::MAX),
                error: a.error.clone(),
            });
            let error = a.error.clone().unwrap_or_default();
            let settled = match a.outcome {
                Outcome::Delivered => {
                    answered = true;
                    plan.report.sent += 1;
                    Settled::Delivered
                }
                outcome => {
                    gone |= outcome == Outcome::Gone;
                    let failures = d.failures + 1;
                    let step = schedule.after(failures);
                    let retry_in = step
                        .unwrap_or_else(|| schedule.last())
                        .max(a.retry_after.unwrap_or(Duration::ZERO));
                    if a.endpoint_down() && down.is_none() {
                        down = Some((retry_in, error.clone()));
                    }
                    if step.is_some() {
                        plan.report.failed += 1;
                    } else {
                        plan.report.dead += 1;
                    }
                    Settled::Failed {
                        retry_in,
                        dead: step.is_none(),
                        error,
                    }
                }
            };
            plan.settled.push((d.id, settled));
        }
        for (d, answer) in batch {
            if answer.is_none() {
                let (retry_in, error) = down
                    .clone()
                    .unwrap_or_else(|| (schedule.last(), "the endpoint is down".to_owned()));
                plan.report.deferred += 1;
                plan.settled
                    .push((d.id, Settled::Deferred { retry_in, error }));
            }
        }
        plan.health = if gone {
            Health::Gone
        } else if answered {
            Health::Answering
        } else if plan.attempts.is_empty() {
            Health::Unknown
        } else {
            Health::Failing(disable_after)
        };
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn delivery(failures: i32) -> Delivery {
        Delivery {
            id: Uuid::new_v4(),
            event_id: Uuid::new_v4(),
            endpoint_id: Uuid::nil(),
            attempts: failures,
            failures,
            deferrals: 0,
            url: "https://example.com/".into(),
            secret: Vec::new(),
            previous_secret: None,
            event_grid_key: None,
            event_type: shared::domain::event::EventType::TaskCompleted,
            event_data: serde_json::json!({}),
            event_created_at: Utc::now(),
            trace_id: None,
        }
    }

    fn answer(outcome: Outcome, status: Option<u16>, retry_after: Option<u64>) -> Answer {
        Answer {
            outcome,
            status,
            took: Duration::from_millis(5),
            retry_after: retry_after.map(Duration::from_secs),
            error: (outcome != Outcome::Delivered).then(|| "no".to_owned()),
        }
    }

    fn schedule() -> RetrySchedule {
        RetrySchedule::parse("10s,100s").expect("schedule")
    }

    #[test]
    fn a_down_endpoint_defers_its_untried_deliveries_to_the_next_step() {
        let batch = vec![
            (delivery(0), Some(answer(Outcome::Timeout, None, None))),
            (delivery(0), None),
            (delivery(3), None),
        ];
        let plan = Plan::new(&batch, &schedule(), Duration::from_secs(3600));
        assert_eq!(plan.attempts.len(), 1, "only the request made is logged");
        assert_eq!(plan.attempts[0].attempt, 1);
        assert_eq!(plan.attempts[0].outcome, "timeout");
        let Settled::Failed {
            retry_in,
            dead: false,
            ..
        } = &plan.settled[0].1
        else {
            panic!("{:?}", plan.settled[0]);
        };
        for (_, s) in &plan.settled[1..] {
            assert_eq!(
                s,
                &Settled::Deferred {
                    retry_in: *retry_in,
                    error: "no".into()
                }
            );
        }
        assert_eq!(plan.health, Health::Failing(Duration::from_secs(3600)));
        assert_eq!(
            (plan.report.failed, plan.report.deferred, plan.report.dead),
            (1, 2, 0)
        );
    }

    #[test]
    fn retry_after_is_honoured_and_the_last_failure_is_dead() {
        let batch = vec![
            (
                delivery(0),
                Some(answer(Outcome::Failed, Some(503), Some(500))),
            ),
            (delivery(1), Some(answer(Outcome::Failed, Some(400), None))),
            (delivery(2), Some(answer(Outcome::Failed, Some(400), None))),
            (
                delivery(0),
                Some(answer(Outcome::Delivered, Some(204), None)),
            ),
        ];
        let plan = Plan::new(&batch, &schedule(), Duration::from_secs(3600));
        let retry = |i: usize| match &plan.settled[i].1 {
            Settled::Failed { retry_in, dead, .. } => (*retry_in, *dead),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            retry(0),
            (Duration::from_secs(500), false),
            "Retry-After beats 10s"
        );
        assert!(retry(1).0 >= Duration::from_secs(90) && !retry(1).1);
        assert!(retry(2).1, "past the last step: dead");
        assert_eq!(plan.settled[3].1, Settled::Delivered);
        assert_eq!(plan.health, Health::Answering);
        assert_eq!(
            (plan.report.sent, plan.report.failed, plan.report.dead),
            (1, 2, 1)
        );
    }

    #[test]
    fn a_410_makes_the_endpoint_gone() {
        let batch = vec![(delivery(0), Some(answer(Outcome::Gone, Some(410), None)))];
        let plan = Plan::new(&batch, &schedule(), Duration::from_secs(3600));
        assert_eq!(plan.health, Health::Gone);
    }
}
