//! KEDA's `ScaledJob` rule, default scaling strategy, as a pure function. Each trigger reports a
//! length (queue messages, outbox backlog) and has a target per job (`queueLength`,
//! `targetQueryValue`); with several triggers KEDA's default `multipleScalersCalculation: max`
//! takes the one reporting the longest length. The scaler is active when any length is above its
//! activation value (0). It then wants `maxScale = ceil(min(maxReplicaCount, length / target))`
//! jobs and starts `min(ceil(length), maxScale − running)`: target − running, capped by the
//! maximum number of executions (KEDA's `scale_jobs.go`; the examples of its ScaledJob
//! reference are the unit tests).

/// One trigger's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    /// What it measured: queue messages (visible and invisible), or claimable outbox rows.
    pub length: u64,
    /// How much of it one job is meant to take (at least 1).
    pub target: u64,
}

/// How many jobs to start now, with `running` jobs still running and at most `max_executions`
/// at once.
pub fn jobs_to_start(triggers: &[Trigger], running: usize, max_executions: usize) -> usize {
    if !triggers.iter().any(|t| t.length > 0) {
        return 0;
    }
    // `max`: the trigger with the longest length (the first of equals) decides.
    let Some(decisive) =
        triggers
            .iter()
            .copied()
            .reduce(|best, t| if t.length > best.length { t } else { best })
    else {
        return 0;
    };
    let wanted = decisive.length.div_ceil(decisive.target.max(1));
    let max_scale = usize::try_from(wanted)
        .unwrap_or(usize::MAX)
        .min(max_executions);
    let scale_to = usize::try_from(decisive.length).unwrap_or(usize::MAX);
    max_scale.saturating_sub(running).min(scale_to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(length: u64, target: u64) -> Trigger {
        Trigger { length, target }
    }

    #[test]
    fn the_examples_of_kedas_scaledjob_reference() {
        // queue length, max replicas, target per job, running → jobs created
        for (length, max, target, running, created) in [
            (10, 3, 1, 0, 3),
            (10, 3, 2, 0, 3),
            (10, 3, 1, 1, 2),
            (10, 100, 1, 0, 10),
            (4, 3, 5, 0, 1),
        ] {
            assert_eq!(
                jobs_to_start(&[queue(length, target)], running, max),
                created,
                "length {length}, max {max}, target {target}, running {running}"
            );
        }
    }

    #[test]
    fn target_minus_running_and_nothing_when_idle() {
        // 3 messages then 6 (one per job), 3 jobs still running: 3 more.
        assert_eq!(jobs_to_start(&[queue(6, 1)], 3, 10), 3);
        assert_eq!(jobs_to_start(&[queue(6, 1)], 8, 10), 0);
        assert_eq!(jobs_to_start(&[queue(0, 5), queue(0, 5)], 0, 10), 0);
    }

    #[test]
    fn with_two_triggers_the_longest_decides() {
        // 12 queued (5 per job → 3 jobs) against a backlog of 4 (1 per job → 4 jobs): the queue
        // is longer, so 3.
        assert_eq!(jobs_to_start(&[queue(12, 5), queue(4, 1)], 0, 20), 3);
        // An empty queue and a backlog: the backlog starts jobs.
        assert_eq!(jobs_to_start(&[queue(0, 5), queue(7, 5)], 0, 20), 2);
    }
}
