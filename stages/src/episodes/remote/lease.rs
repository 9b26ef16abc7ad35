//! Which device an episode runs on. The engine's resource pool (`resources: { devices: N }`)
//! bounds how many items run at once; this process-wide table decides *which* URL each running
//! item gets, so two items never share an emulator even when the pool is larger than the URL
//! list or two stages list the same URLs. A lease also remembers the suite each device was last
//! switched to, so the (slow, emulator-restarting) switch happens once per device, not per task,
//! and how many items in a row gave up on it, so a retried item goes to a device that works.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};

use tokio::sync::Notify;

/// A suite as query parameters (`target_family`, `user_log_source`, …).
pub type Suite = BTreeMap<String, String>;

#[derive(Default)]
struct Device {
    busy: bool,
    served: u64,
    failures: u32,
    suite: Option<Suite>,
}

struct Table {
    devices: Mutex<HashMap<String, Device>>,
    freed: Notify,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table {
        devices: Mutex::new(HashMap::new()),
        freed: Notify::new(),
    })
}

fn lock(t: &Table) -> MutexGuard<'_, HashMap<String, Device>> {
    t.devices.lock().unwrap_or_else(|e| e.into_inner())
}

/// Exclusive use of one device URL until dropped.
#[derive(Debug)]
pub struct Lease {
    url: String,
}

/// Waits (asleep on the async runtime) until one of `urls` is free and leases it. Among free devices, those with the fewest
/// consecutive give-ups win, then those that served the fewest leases, so work spreads over every
/// device and avoids a dead one while others are free. `urls` must not be empty.
pub async fn acquire(urls: &[String]) -> Lease {
    let t = table();
    loop {
        // Listening before looking, so a lease dropped in between is not missed.
        let mut freed = std::pin::pin!(t.freed.notified());
        freed.as_mut().enable();
        if let Some(lease) = try_acquire(t, urls) {
            return lease;
        }
        freed.await;
    }
}

/// The best free device of `urls`, leased, if one is free.
fn try_acquire(t: &Table, urls: &[String]) -> Option<Lease> {
    let mut devices = lock(t);
    let url = urls
        .iter()
        .filter(|u| !devices.get(*u).is_some_and(|d| d.busy))
        .min_by_key(|u| devices.get(*u).map_or((0, 0), |d| (d.failures, d.served)))?
        .clone();
    devices.entry(url.clone()).or_default().busy = true;
    Some(Lease { url })
}

impl Lease {
    /// The leased device's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The suite this device was last switched to by this process.
    pub fn suite(&self) -> Option<Suite> {
        lock(table()).get(&self.url).and_then(|d| d.suite.clone())
    }

    /// Records whether the item using this lease finished (resets the give-up count) or gave up
    /// on the device.
    pub fn record(&self, worked: bool) {
        if let Some(d) = lock(table()).get_mut(&self.url) {
            d.failures = if worked { 0 } else { d.failures + 1 };
        }
    }

    /// Records a successful suite switch.
    pub fn set_suite(&self, suite: Option<Suite>) {
        if let Some(d) = lock(table()).get_mut(&self.url) {
            d.suite = suite;
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let t = table();
        if let Some(d) = lock(t).get_mut(&self.url) {
            d.busy = false;
            d.served += 1;
        }
        t.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn acquire(urls: &[String]) -> Lease {
        crate::tasks::testkit::block_on(super::acquire(urls))
    }

    #[test]
    fn leases_are_exclusive_and_spread_over_devices() {
        let urls: Vec<String> = vec!["http://lease-test-a".into(), "http://lease-test-b".into()];
        let a = acquire(&urls);
        let b = acquire(&urls);
        assert_ne!(a.url(), b.url(), "two live leases share a device");
        drop(a);
        drop(b);
        // Both served once; the next two leases still cover both devices.
        let c = acquire(&urls);
        let d = acquire(&urls);
        assert_ne!(c.url(), d.url());
    }

    #[test]
    fn a_third_holder_waits_until_a_device_is_freed() {
        let urls: Vec<String> = vec!["http://lease-test-c".into(), "http://lease-test-d".into()];
        let in_use: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let peak = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (urls, in_use, peak) = (urls.clone(), in_use.clone(), peak.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let lease = acquire(&urls);
                        {
                            let mut m = in_use.lock().unwrap();
                            let n = m.entry(lease.url().to_string()).or_default();
                            *n += 1;
                            peak.fetch_max(*n, Ordering::SeqCst);
                        }
                        std::thread::yield_now();
                        *in_use.lock().unwrap().get_mut(lease.url()).unwrap() -= 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(
            peak.load(Ordering::SeqCst),
            1,
            "a device was leased twice at once"
        );
    }

    #[test]
    fn a_device_that_was_given_up_on_is_leased_last() {
        let urls: Vec<String> = vec!["http://lease-test-f".into(), "http://lease-test-g".into()];
        let first = acquire(&urls);
        let dead = first.url().to_string();
        first.record(false);
        drop(first);
        for _ in 0..3 {
            let l = acquire(&urls);
            assert_ne!(l.url(), dead, "the failed device was preferred");
            l.record(true);
        }
        let (a, b) = (acquire(&urls), acquire(&urls));
        assert_eq!(b.url(), dead, "still used when it is the only free one");
        a.record(true);
        b.record(true);
        drop((a, b));
        // Recovered: its lower use count makes it first again.
        assert_eq!(acquire(&urls).url(), dead);
    }

    #[test]
    fn the_suite_is_remembered_per_device() {
        let urls: Vec<String> = vec!["http://lease-test-e".into()];
        let lease = acquire(&urls);
        assert_eq!(lease.suite(), None);
        let s: Suite = [("target_family".to_string(), "knowu_bench".to_string())].into();
        lease.set_suite(Some(s.clone()));
        drop(lease);
        assert_eq!(acquire(&urls).suite(), Some(s));
    }
}
