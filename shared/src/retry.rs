//! Asking again when a server answers a read with 429 (too many requests) or a 5xx (failing for
//! now): after a pause that doubles from [`FIRST_PAUSE`] up to [`MAX_PAUSE`], jittered so that many
//! clients do not come back in step, or after the server's `Retry-After` when it is longer; and
//! never past the caller's deadline, so that a server that keeps failing costs the command its
//! timeout and no more, and the last answer is what the caller reports. Writes are not retried
//! here: only the caller knows whether asking twice does something twice.
//!
//! [`Backoff`] is the one pacing of every loop that asks again until a deadline: the provider's
//! GETs ([`crate::provider`]) and the kube client's reads ([`KubeReads`], a layer of its request
//! stack), the watches between their failures ([`WatchRetries`]), a push refused because the
//! branch moved (`publish`), an API server still busy with a
//! new CRD (`cluster::retry_busy`), and the questions to a forge that has no watch (is the pull
//! request merged yet, mergeable yet, can GitLab take auto-merge yet). The wait for the cluster
//! has watches instead (`crate::wait`).

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

/// The pause before the first retry.
pub const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// The longest pause we choose ourselves (a server's `Retry-After` may ask for more).
pub const MAX_PAUSE: Duration = Duration::from_secs(5);

/// Whether an HTTP status says "ask again later": rate limited (429), or the server or a proxy
/// in front of it failing for now (500, 502, 503, 504). Other statuses are answers.
pub fn is_transient(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
}

/// A `Retry-After` value in seconds (the form API servers and forges send); an HTTP date or
/// anything else reads as absent, and the backoff decides.
pub fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The pauses between the attempts of one loop, within its deadline.
#[derive(Debug, Clone)]
pub struct Backoff {
    deadline: Instant,
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// Pauses for a read that must be done by `deadline`: from [`FIRST_PAUSE`] to [`MAX_PAUSE`].
    pub fn until(deadline: Instant) -> Backoff {
        Backoff::between(FIRST_PAUSE, MAX_PAUSE, deadline)
    }

    /// Pauses that double from `first` up to `max`, until `deadline`.
    pub fn between(first: Duration, max: Duration, deadline: Instant) -> Backoff {
        Backoff { deadline, next: first, max }
    }

    /// Pauses that double from `first` up to `max`, with no deadline: a loop that retries for as
    /// long as it runs, or counts its tries itself.
    pub fn without_deadline(first: Duration, max: Duration) -> Backoff {
        Backoff::between(first, max, Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600))
    }

    /// Pauses of about `interval` each (jittered down to half of it), until `deadline`: polling.
    pub fn every(interval: Duration, deadline: Instant) -> Backoff {
        Backoff::between(interval, interval, deadline)
    }

    /// How long to wait before the next attempt, given the server's `Retry-After`; `None` when the
    /// deadline would pass first (give up with the answer in hand).
    pub fn pause(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        // "Equal jitter": half the pause fixed, half random.
        let half = self.next / 2;
        let jittered = half + half.mul_f64(unit_random());
        self.next = (self.next * 2).min(self.max);
        let pause = retry_after.map_or(jittered, |asked| asked.max(jittered));
        (Instant::now() + pause < self.deadline).then_some(pause)
    }

    /// Sleeps the next pause and says `true`; says `false` at once when the deadline would pass
    /// first.
    pub async fn wait(&mut self) -> bool {
        match self.pause(None) {
            Some(pause) => {
                tokio::time::sleep(pause).await;
                true
            }
            None => false,
        }
    }

    /// The time left until the deadline (zero once it passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The pauses of a watch between its failures, for kube's watcher (its `StreamBackoff`): from
/// [`FIRST_PAUSE`] doubling to [`MAX_PAUSE`], from the start again once an event arrives. kube's
/// default pauses up to 30 s, which `--wait`, `--watch` and the UI would show as a stall after
/// one failed call.
#[derive(Debug, Clone)]
pub struct WatchRetries(Backoff);

impl Default for WatchRetries {
    fn default() -> WatchRetries {
        WatchRetries(Backoff::without_deadline(FIRST_PAUSE, MAX_PAUSE))
    }
}

impl Iterator for WatchRetries {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.0.pause(None).unwrap_or(MAX_PAUSE))
    }
}

impl kube::runtime::utils::Backoff for WatchRetries {
    fn reset(&mut self) {
        *self = WatchRetries::default();
    }
}

/// A number in [0, 1) that differs between calls and processes (std's per-hasher random keys; no
/// generator is needed for jitter).
fn unit_random() -> f64 {
    let bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// The kube client's reads (GET: get, list, the start of a watch) retried on 429 and 5xx within
/// `budget` from the first transient answer, as a tower retry policy; other verbs pass through.
#[derive(Debug, Clone)]
pub struct KubeReads {
    budget: Duration,
    backoff: Option<Backoff>,
}

impl KubeReads {
    /// Reads retried for at most `budget` (the request timeout).
    pub fn within(budget: Duration) -> tower::retry::RetryLayer<KubeReads> {
        tower::retry::RetryLayer::new(KubeReads { budget, backoff: None })
    }
}

impl<B> tower::retry::Policy<http::Request<kube::client::Body>, http::Response<B>, tower::BoxError> for KubeReads {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        request: &mut http::Request<kube::client::Body>,
        result: &mut Result<http::Response<B>, tower::BoxError>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        if request.method() != http::Method::GET || !is_transient(response.status().as_u16()) {
            return None;
        }
        let asked = response.headers().get(http::header::RETRY_AFTER).and_then(|value| value.to_str().ok());
        let budget = self.budget;
        let backoff = self.backoff.get_or_insert_with(|| Backoff::until(Instant::now() + budget));
        backoff.pause(asked.and_then(retry_after)).map(tokio::time::sleep)
    }

    fn clone_request(
        &mut self,
        request: &http::Request<kube::client::Body>,
    ) -> Option<http::Request<kube::client::Body>> {
        if request.method() != http::Method::GET {
            return None;
        }
        let mut copy = http::Request::new(request.body().try_clone()?);
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rate_limits_and_passing_server_failures_are_retried() {
        for status in [429, 500, 502, 503, 504] {
            assert!(is_transient(status), "{status}");
        }
        for status in [200, 201, 301, 400, 401, 403, 404, 409, 422, 501, 505] {
            assert!(!is_transient(status), "{status}");
        }
        assert_eq!(retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn pauses_double_with_jitter_up_to_the_cap_and_stop_before_the_deadline() {
        let mut backoff = Backoff::until(Instant::now() + Duration::from_secs(3600));
        let mut nominal = FIRST_PAUSE;
        for _ in 0..8 {
            let pause = backoff.pause(None).unwrap();
            assert!(pause >= nominal / 2 && pause <= nominal, "{pause:?} for {nominal:?}");
            nominal = (nominal * 2).min(MAX_PAUSE);
        }
        assert!(backoff.pause(Some(Duration::from_secs(60))).unwrap() >= Duration::from_secs(60), "Retry-After");
        assert_eq!(backoff.pause(Some(Duration::from_secs(7200))), None, "past the deadline");
        let mut short = Backoff::until(Instant::now() + Duration::from_millis(50));
        assert_eq!(short.pause(None), None, "no time for a pause and another attempt");
    }

    #[test]
    fn watch_retries_double_to_the_cap_and_start_again_after_a_success() {
        use kube::runtime::utils::Backoff as _;
        let mut retries = WatchRetries::default();
        let pauses: Vec<Duration> = retries.by_ref().take(8).collect();
        assert!(pauses[0] <= FIRST_PAUSE, "{pauses:?}");
        assert!(pauses.iter().all(|pause| *pause <= MAX_PAUSE), "{pauses:?}");
        assert!(pauses[7] >= MAX_PAUSE / 2, "{pauses:?}");
        retries.reset();
        assert!(retries.next().unwrap() <= FIRST_PAUSE);
    }

    #[tokio::test]
    async fn kube_reads_answered_503_are_asked_again_and_writes_are_not() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tower::{Layer, Service, ServiceExt};
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let server = tower::service_fn(move |_: http::Request<kube::client::Body>| {
            let status = if counted.fetch_add(1, Ordering::SeqCst) % 3 < 2 { 503 } else { 200 };
            async move { Ok::<_, tower::BoxError>(http::Response::builder().status(status).body(()).unwrap()) }
        });
        let mut client = KubeReads::within(Duration::from_secs(10)).layer(server);
        let request = |method: &str| {
            http::Request::builder().method(method).uri("/api/v1/namespaces").body(kube::client::Body::from(Vec::new()))
        };
        let read = client.ready().await.unwrap().call(request("GET").unwrap()).await.unwrap();
        assert_eq!((read.status().as_u16(), calls.load(Ordering::SeqCst)), (200, 3), "two 503s, then the answer");
        let write = client.ready().await.unwrap().call(request("POST").unwrap()).await.unwrap();
        assert_eq!((write.status().as_u16(), calls.load(Ordering::SeqCst)), (503, 4), "a write is asked once");
    }
}
