//! Waiting out transient failures, one way for every loop: a delay that doubles from a floor to a
//! ceiling and starts over after a success ([`Backoff`]), and the jittered per-attempt delay of
//! a failed outbox send ([`jittered`]). What counts as "away, try later" is
//! [`shared::failure`]'s to say. Waits end early at shutdown ([`sleep_or_stop`]).

use std::time::Duration;

use rand::Rng as _;
use tokio_util::sync::CancellationToken;

/// A delay that doubles after each failure, from `min` up to `max`, and is `min` again after a
/// success. It counts the failures since the last success, so that a loop logs an outage when
/// it starts and when it ends rather than at every try.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
    failures: u32,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max,
            next: min,
            failures: 0,
        }
    }

    /// The delay to wait after this failure; the next one is twice as long, up to `max`.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = doubled(delay, self.max, 1);
        self.failures = self.failures.saturating_add(1);
        delay
    }

    /// How many failures were waited out since the last success (0: none, the next failure
    /// starts an outage).
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// After a success: the next failure waits `min` again.
    pub fn reset(&mut self) {
        self.next = self.min;
        self.failures = 0;
    }

    /// Waits the next delay, or until `stop` fires if that is sooner.
    pub async fn wait(&mut self, stop: &CancellationToken) {
        sleep_or_stop(stop, self.next_delay()).await;
    }
}

/// `base · 2^exponent`, at most `cap` (saturating, however large the exponent).
pub fn doubled(base: Duration, cap: Duration, exponent: u32) -> Duration {
    base.saturating_mul(2u32.saturating_pow(exponent.min(30)))
        .min(cap)
}

/// The delay before retrying after `attempts` failed attempts: [`doubled`], then a random point
/// in its upper half, so that messages that failed together do not come due together.
pub fn jittered(base: Duration, cap: Duration, attempts: i32) -> Duration {
    let full = doubled(base, cap, u32::try_from(attempts).unwrap_or(0));
    let half = full / 2;
    half + half.mul_f64(rand::rng().random_range(0.0..=1.0))
}

/// Sleeps for `d`, or until `stop` fires if that is sooner.
pub async fn sleep_or_stop(stop: &CancellationToken, d: Duration) {
    tokio::select! {
        () = stop.cancelled() => {}
        () = tokio::time::sleep(d) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_ceiling_and_starts_over_after_a_success() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::new(ms(100), ms(500));
        let delays: Vec<Duration> = (0..5).map(|_| backoff.next_delay()).collect();
        assert_eq!(delays, [ms(100), ms(200), ms(400), ms(500), ms(500)]);
        assert_eq!(backoff.failures(), 5);
        backoff.reset();
        assert_eq!(backoff.failures(), 0);
        assert_eq!(backoff.next_delay(), ms(100));
    }

    #[test]
    fn jittered_doubles_within_its_upper_half_and_stops_at_the_cap() {
        let base = Duration::from_secs(1);
        let cap = Duration::from_secs(60);
        for attempts in 0..10 {
            let full = (base * 2u32.pow(attempts as u32)).min(cap);
            let d = jittered(base, cap, attempts);
            assert!(
                d >= full / 2 && d <= full,
                "{attempts}: {d:?} not in [{:?}, {full:?}]",
                full / 2
            );
        }
        assert!(jittered(base, cap, i32::MAX) <= cap);
    }

    #[test]
    fn doubling_saturates() {
        let cap = Duration::from_secs(300);
        assert_eq!(
            doubled(Duration::from_secs(5), cap, 0),
            Duration::from_secs(5)
        );
        assert_eq!(
            doubled(Duration::from_secs(5), cap, 3),
            Duration::from_secs(40)
        );
        assert_eq!(doubled(Duration::from_secs(5), cap, u32::MAX), cap);
        assert_eq!(doubled(Duration::MAX, Duration::MAX, 5), Duration::MAX);
    }
}
