//! When a failed webhook delivery is tried again: the steps of `WEBHOOK_RETRY_SCHEDULE` (the delay
//! after the first failure, after the second, …; dead after the last), each with jitter so that
//! deliveries that failed together do not come due together, and never sooner than a 429's or
//! 503's `Retry-After` asks.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::Rng as _;

/// The longest `Retry-After` honoured: a receiver cannot park a delivery for longer than a day.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// `WEBHOOK_RETRY_SCHEDULE`: comma-separated durations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(Vec<Duration>);

impl RetrySchedule {
    /// Parses `5s,5m,30m`: at least one step, each a duration.
    pub fn parse(s: &str) -> Result<Self, String> {
        let steps = s
            .split(',')
            .map(|step| shared::config::parse_duration(step.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if steps.is_empty() || steps.iter().any(|d| d.is_zero()) {
            return Err("a retry schedule is one or more durations above zero".into());
        }
        Ok(Self(steps))
    }

    /// The whole span from the first attempt to the last.
    pub fn span(&self) -> Duration {
        self.0.iter().sum()
    }

    /// After the `failures`-th failed attempt (1 for the first): the delay before the next one,
    /// with jitter, or `None` when the schedule is used up.
    pub fn after(&self, failures: i32) -> Option<Duration> {
        let step = usize::try_from(failures).ok()?.checked_sub(1)?;
        self.0
            .get(step)
            .map(|d| d.mul_f64(rand::rng().random_range(0.9..=1.1)))
    }

    /// The last step: how long deliveries wait behind one that is dead.
    pub fn last(&self) -> Duration {
        self.0.last().copied().unwrap_or(Duration::from_secs(60))
    }
}

/// A `Retry-After` value: seconds, or an HTTP date; capped at a day.
pub fn retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at = DateTime::parse_from_rfc2822(value)
                .ok()?
                .with_timezone(&Utc);
            (at - now).to_std().unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_spans_more_than_a_day() {
        let schedule = RetrySchedule::parse("5s,5m,30m,2h,5h,10h,10h").expect("parses");
        assert!(
            schedule.span() >= Duration::from_secs(24 * 3600),
            "{:?}",
            schedule.span()
        );
    }

    #[test]
    fn each_failure_takes_its_step_with_jitter_until_the_schedule_is_used_up() {
        let schedule = RetrySchedule::parse("10s, 1m").expect("parses");
        let first = schedule.after(1).expect("a first step");
        assert!(
            first >= Duration::from_secs(9) && first <= Duration::from_secs(11),
            "{first:?}"
        );
        let second = schedule.after(2).expect("a second step");
        assert!(second >= Duration::from_secs(54) && second <= Duration::from_secs(66));
        assert_eq!(schedule.after(3), None);
        assert_eq!(schedule.after(0), None);
        assert!(RetrySchedule::parse("").is_err());
        assert!(RetrySchedule::parse("5s,,1m").is_err());
        assert!(RetrySchedule::parse("0s").is_err());
    }

    #[test]
    fn retry_after_is_seconds_or_a_date_and_at_most_a_day() {
        let now = Utc::now();
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        let later = (now + chrono::Duration::seconds(90)).to_rfc2822();
        let got = retry_after(&later, now).expect("a date");
        assert!(
            got > Duration::from_secs(88) && got <= Duration::from_secs(90),
            "{got:?}"
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("999999999", now), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after("soon", now), None);
    }
}
