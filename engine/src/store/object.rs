//! [`RemoteStore`]: the store in an object store (`s3://bucket/prefix`, `gs://…`, `az://…`)
//! through the `object_store` crate, so runs on many machines can share one store without a
//! shared filesystem.
//!
//! [`Store`] is synchronous; the object-store client is async. The store owns a small tokio
//! runtime of its own and every call is spawned onto it and waited for with a plain channel, so
//! it works from any thread, including the engine's own runtime threads (where
//! `Runtime::block_on` would panic). At most `PREFFLOW_STORE_CONCURRENCY` (default 16) requests
//! are in flight at once; transient failures are retried with exponential backoff by the
//! client's own [`RetryConfig`].
//!
//! Create-if-absent is a conditional PUT (`If-None-Match: *`), compare-and-swap a PUT with
//! `If-Match: <ETag>`; the ETag is the [`Version`]. Content-addressed blobs are kept in a local
//! read-through cache (see [`BlobCache`](self)): verified against their hash on every read, and
//! served only while the remote object still exists, so the cache never makes the store look
//! more complete than it is.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    RetryConfig, UpdateVersion,
};
use tokio::sync::Semaphore;

use super::contract::{check_key, ObjectMeta, Store, Version, QUARANTINE};
use super::deadline::{self, Deadlines};
pub use super::diagnose::Service;
use super::diagnose::{self, FailureLog, Place};
use super::fs::FsStore;
use super::host::{host_name, unix_now, TMP_SUFFIX};
use crate::error::{Error, Result};
use crate::keys::hash_bytes;

/// A parsed object-store URL: service, bucket (or container) and key prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    /// Which service.
    pub service: Service,
    /// The bucket (S3, GCS) or container (Azure).
    pub bucket: String,
    /// Key prefix inside the bucket, without leading or trailing `/` (may be empty).
    pub prefix: String,
    /// The URL's query (`?timeout=90&request_timeout=20`): the store's deadlines, checked
    /// (see [`Deadlines`]). Kept in [`RemoteUrl::to_url`], so cluster workers get them too.
    pub options: Vec<(String, String)>,
}

impl RemoteUrl {
    /// Parses `s3://bucket/prefix` (also `gs://`, `az://`); `None` when `spec` has none of
    /// these schemes. A malformed one is a usage error naming the fix.
    pub fn parse(spec: &str) -> Option<Result<Self>> {
        let (service, rest) = [
            ("s3://", Service::S3),
            ("gs://", Service::Gcs),
            ("az://", Service::Azure),
        ]
        .into_iter()
        .find_map(|(scheme, s)| spec.strip_prefix(scheme).map(|rest| (s, rest)))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let options = match parse_query(spec, query) {
            Ok(o) => o,
            Err(e) => return Some(Err(e)),
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let prefix = prefix.trim_end_matches('/');
        let bad_prefix = !prefix.is_empty() && check_key(prefix).is_err();
        if bucket.is_empty() || bad_prefix {
            return Some(Err(Error::Usage(format!(
                "--store {spec}: not a store URL; write SCHEME://BUCKET or SCHEME://BUCKET/PREFIX \
                 (a prefix of plain `/`-separated names, no `..` or empty parts), e.g. s3://my-bucket/prefflow"
            ))));
        }
        Some(Ok(Self {
            service,
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            options,
        }))
    }

    /// The URL again, normalized (`s3://bucket/prefix?timeout=90`), options included.
    pub fn to_url(&self) -> String {
        let base = self.location();
        match self.options.is_empty() {
            true => base,
            false => {
                let query: Vec<String> = self
                    .options
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                format!("{base}?{}", query.join("&"))
            }
        }
    }

    /// Where the store is, without options (`s3://bucket/prefix`): what messages name.
    pub fn location(&self) -> String {
        let scheme = match self.service {
            Service::S3 => "s3",
            Service::Gcs => "gs",
            Service::Azure => "az",
        };
        match self.prefix.is_empty() {
            true => format!("{scheme}://{}", self.bucket),
            false => format!("{scheme}://{}/{}", self.bucket, self.prefix),
        }
    }
}

/// The `name=value` pairs of a store URL's query, each checked.
fn parse_query(spec: &str, query: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        deadline::check_option(spec, name, value)?;
        out.push((name.to_string(), value.to_string()));
    }
    Ok(out)
}

/// The store's own tokio runtime; shut down without blocking when the store is dropped, which
/// may happen on an async thread, where dropping a runtime normally panics.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for RemoteStore {
    fn drop(&mut self) {
        let summary = self.failures.summary();
        if !summary.is_empty() {
            tracing::warn!(
                "{}: failed operations by cause: {}",
                self.place.describe(),
                summary.join("; ")
            );
        }
    }
}

/// Whether the store went silent (see [`RemoteStore::admit`]).
#[derive(Debug, Default)]
struct Silence {
    /// Since when no operation got an answer (its start, as far as known).
    since: Option<Instant>,
    /// A probe operation is in flight.
    probing: bool,
    /// When the last probe ended.
    last_probe: Option<Instant>,
}

/// What [`RemoteStore::admit`] allows.
enum Admit {
    Normal,
    Probe,
    /// Fail at once: silent for this long.
    Refuse(Duration),
}

/// Ends a probe when dropped, whatever its outcome.
struct ProbeDone<'a>(&'a RemoteStore);

impl Drop for ProbeDone<'_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.silent.lock() {
            s.probing = false;
            s.last_probe = Some(Instant::now());
        }
    }
}

/// A store in an object store. See the module documentation.
pub struct RemoteStore {
    url: String,
    place: Place,
    inner: Arc<dyn ObjectStore>,
    prefix: String,
    runtime: OwnRuntime,
    permits: Arc<Semaphore>,
    cache: Option<FsStore>,
    offset: OnceLock<f64>,
    deadlines: Deadlines,
    /// Set when an operation outlived its deadline; cleared by the next answer.
    silent: Mutex<Silence>,
    failures: FailureLog,
    /// Whether the bucket exists, asked once on the first "not found" of a HEAD (which has
    /// no body to tell a missing key from a missing bucket): `Some(message)` when it does not.
    bucket_problem: OnceLock<Option<String>>,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore")
            .field("url", &self.url)
            .finish()
    }
}

static PROBE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many requests may be in flight at once (`PREFFLOW_STORE_CONCURRENCY`, default 16).
fn concurrency() -> usize {
    std::env::var("PREFFLOW_STORE_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(16)
}

/// Retries of a failed request (`PREFFLOW_STORE_RETRIES`, default 6), with exponential backoff
/// from 100 ms to 5 s, for at most the operation's deadline.
fn retry_config(deadlines: &Deadlines) -> RetryConfig {
    let max_retries = std::env::var("PREFFLOW_STORE_RETRIES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(6);
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries,
        retry_timeout: deadlines.operation,
    }
}

/// Where blobs read from a remote store are cached: `PREFFLOW_CACHE_DIR` (empty: no cache),
/// else `$XDG_CACHE_HOME/prefflow`, else `~/.cache/prefflow`.
pub fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("PREFFLOW_CACHE_DIR") {
        Some(d) if d.is_empty() => return None,
        Some(d) => return Some(PathBuf::from(d)),
        None => {}
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("prefflow"))
}

/// Whether `key` names a content-addressed blob (`blobs/ab/<hash>.parquet`), the only objects
/// the local cache holds: immutable, so a cached copy can never be stale.
fn blob_hash(key: &str) -> Option<&str> {
    key.strip_prefix("blobs/")?
        .split_once('/')?
        .1
        .strip_suffix(".parquet")
}

/// A write the store refused for lack of access: the store is read-only for these
/// credentials ([`Error::NotWritable`]), so commands that only read still work.
fn refused_write(e: Error) -> Error {
    match e {
        Error::StoreSetup(m) if m.starts_with("access denied") => Error::NotWritable(m),
        e => e,
    }
}

/// Whether `e` says the object is absent (not the bucket: a missing bucket is a setup error).
fn is_absent(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::NotFound { .. }) && !e.to_string().contains("NoSuchBucket")
}

fn is_conflict(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }
    )
}

impl RemoteStore {
    /// Connects to the store `url` names. Credentials and endpoint come from the environment
    /// only (`AWS_*` for S3, `GOOGLE_*` for GCS, `AZURE_*` for Azure; see docs/store.md), so
    /// they never appear in keys, logs or artifacts. Nothing is requested yet.
    pub fn open(url: &RemoteUrl) -> Result<Self> {
        Self::open_with_endpoint(url, None)
    }

    /// Like [`RemoteStore::open`], but an S3 store talks to the S3-compatible server at
    /// `endpoint` instead of `AWS_ENDPOINT_URL`: one process reaching one bucket through two
    /// endpoints (tests put a proxy in front of their server this way). Ignored for GCS and Azure.
    pub fn open_with_endpoint(url: &RemoteUrl, endpoint: Option<&str>) -> Result<Self> {
        let deadlines = Deadlines::resolve(&url.options)?;
        let inner = build(url, &deadlines, endpoint).map_err(|e| {
            Error::Usage(format!(
                "--store {}: cannot set up the object store client: {e}; check the {} environment variables (docs/store.md)",
                url.to_url(),
                match url.service {
                    Service::S3 => "AWS_*",
                    Service::Gcs => "GOOGLE_*",
                    Service::Azure => "AZURE_*",
                }
            ))
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("prefflow-store")
            .enable_all()
            .build()
            .map_err(|e| Error::RunFailed(format!("cannot start the store's runtime: {e}")))?;
        Ok(Self {
            url: url.location(),
            place: Place::new(url.location(), url.bucket.clone(), url.service),
            inner,
            prefix: url.prefix.clone(),
            runtime: OwnRuntime(Some(runtime)),
            permits: Arc::new(Semaphore::new(concurrency())),
            cache: cache_dir().map(|d| FsStore::new(d.join("blobs-cache"))),
            offset: OnceLock::new(),
            deadlines,
            silent: Mutex::new(Silence::default()),
            failures: FailureLog::default(),
            bucket_problem: OnceLock::new(),
        })
    }

    /// The deadlines this store works with.
    pub fn deadlines(&self) -> Deadlines {
        self.deadlines
    }

    /// The same store with its blob cache in `dir` (`None`: no cache), for tests and tools.
    pub fn with_cache(mut self, dir: Option<PathBuf>) -> Self {
        self.cache = dir.map(FsStore::new);
        self
    }

    /// The object path of a store key.
    fn loc(&self, key: &str) -> Result<ObjectPath> {
        check_key(key)?;
        let full = match self.prefix.is_empty() {
            true => key.to_string(),
            false => format!("{}/{key}", self.prefix),
        };
        ObjectPath::parse(&full).map_err(|e| Error::Usage(format!("store key `{key}`: {e}")))
    }

    /// Runs `fut` on the store's runtime and waits for it, from whatever thread calls, for at
    /// most the operation's deadline (its wait for a connection slot included): a store that
    /// does not answer fails the operation instead of holding the caller forever.
    fn block<T, F>(&self, key: &str, fut: F) -> Result<T>
    where
        F: Future<Output = object_store::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let rt = self.runtime.0.as_ref().ok_or_else(|| self.stopped(key))?;
        let permits = self.permits.clone();
        let (limit, probe) = match self.admit() {
            Admit::Normal => (self.deadlines.operation, false),
            Admit::Probe => (
                self.deadlines.after_silence.min(self.deadlines.operation),
                true,
            ),
            Admit::Refuse(silent_for) => return Err(self.silent_error(key, silent_for)),
        };
        let _probe = probe.then(|| ProbeDone(self));
        let started = Instant::now();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let op = async move {
                let _permit = permits.acquire_owned().await;
                fut.await
            };
            let _ = tx.send(tokio::time::timeout(limit, op).await);
        });
        match rx.recv() {
            Ok(Ok(Ok(value))) => {
                self.answered();
                Ok(value)
            }
            Ok(Ok(Err(e))) => Err(self.failed(key, e, started)),
            Ok(Err(_elapsed)) => Err(self.silence(key, started)),
            Err(_) => Err(self.stopped(key)),
        }
    }

    /// The error for a request that failed with `e`: a setup mistake (exit 2), silence (a
    /// timeout), or a plain remote error; counted by cause either way.
    fn failed(&self, key: &str, e: object_store::Error, started: Instant) -> Error {
        if let Some(message) = diagnose::misconfiguration(&e, &self.place) {
            return Error::StoreSetup(message);
        }
        if diagnose::timed_out(&e) {
            return self.silence(key, started);
        }
        // Any answer, even an error, shows the endpoint is there.
        self.answered();
        let err = self.remote(key, e);
        if let Error::Remote { source, .. } = &err {
            self.failures
                .note(&self.url, &diagnose::cause(source), &err.to_string());
        }
        err
    }

    /// The error for an operation started at `started` that got no answer; marks the store
    /// silent since then (or since earlier, when it already was).
    fn silence(&self, key: &str, started: Instant) -> Error {
        let silent_for = match self.silent.lock() {
            Ok(mut s) => *s.since.get_or_insert(started),
            Err(_) => started,
        }
        .elapsed();
        self.silent_error(key, silent_for)
    }

    /// The error for an operation on a store that has not answered for `silent_for`.
    fn silent_error(&self, key: &str, silent_for: Duration) -> Error {
        let err = Error::Silent {
            store: self.place.describe(),
            key: key.to_string(),
            secs: silent_for.as_secs_f64(),
        };
        self.failures
            .note(&self.url, "no answer (a hung endpoint)", &err.to_string());
        err
    }

    /// Whether an operation may go to the store now. While the store is silent, operations
    /// fail at once, except one probe at a time (every `after_silence` at most), so a loop
    /// over many keys fails fast instead of waiting for each, and an answer ends the silence.
    fn admit(&self) -> Admit {
        let Ok(mut s) = self.silent.lock() else {
            return Admit::Normal;
        };
        let Some(since) = s.since else {
            return Admit::Normal;
        };
        let rested = s
            .last_probe
            .is_none_or(|t| t.elapsed() >= self.deadlines.after_silence);
        if s.probing || !rested {
            return Admit::Refuse(since.elapsed());
        }
        s.probing = true;
        Admit::Probe
    }

    /// The store answered: it is not silent (any more).
    fn answered(&self) {
        if let Ok(mut s) = self.silent.lock() {
            if s.since.take().is_some() {
                tracing::info!("{}: answers again", self.place.describe());
            }
        }
    }

    fn remote(&self, key: &str, source: object_store::Error) -> Error {
        Error::Remote {
            store: self.url.clone(),
            key: key.to_string(),
            source: Box::new(source),
        }
    }

    /// Whether the bucket exists, asked once (a listing of the prefix's top level): a HEAD
    /// answers a missing bucket like a missing key, without a body that would say which.
    fn check_bucket(&self) -> Result<()> {
        let problem = self.bucket_problem.get_or_init(|| {
            let inner = self.inner.clone();
            let at = ObjectPath::parse(&self.prefix).ok();
            let listed = self.block("", async move {
                inner.list_with_delimiter(at.as_ref()).await.map(|_| ())
            });
            match listed {
                Err(Error::StoreSetup(message)) => Some(message),
                _ => None,
            }
        });
        match problem {
            Some(message) => Err(Error::StoreSetup(message.clone())),
            None => Ok(()),
        }
    }

    fn stopped(&self, key: &str) -> Error {
        self.remote(
            key,
            object_store::Error::Generic {
                store: "prefflow",
                source: "the store's runtime stopped".into(),
            },
        )
    }

    /// A PUT with `mode`: `Ok(false)` when its condition failed (another writer was first).
    fn put_mode(&self, key: &str, bytes: &[u8], mode: PutMode) -> Result<bool> {
        let (inner, loc) = (self.inner.clone(), self.loc(key)?);
        let payload = PutPayload::from(bytes.to_vec());
        let opts = PutOptions {
            mode,
            ..Default::default()
        };
        let put = self
            .block(key, async move {
                match inner.put_opts(&loc, payload, opts).await {
                    Ok(_) => Ok(true),
                    Err(e) if is_conflict(&e) || is_absent(&e) => Ok(false),
                    Err(e) => Err(e),
                }
            })
            .map_err(refused_write)?;
        if put {
            self.remember(key, bytes);
        }
        Ok(put)
    }

    /// The bytes and ETag of `key` from the remote, bypassing the cache.
    fn fetch(&self, key: &str) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let (inner, loc) = (self.inner.clone(), self.loc(key)?);
        self.block(key, async move {
            match inner.get_opts(&loc, GetOptions::default()).await {
                Ok(got) => {
                    let e_tag = got.meta.e_tag.clone();
                    Ok(Some((got.bytes().await?.to_vec(), e_tag)))
                }
                Err(e) if is_absent(&e) => Ok(None),
                Err(e) => Err(e),
            }
        })
    }

    fn head(&self, key: &str) -> Result<Option<object_store::ObjectMeta>> {
        let (inner, loc) = (self.inner.clone(), self.loc(key)?);
        let meta = self.block(key, async move {
            match inner.head(&loc).await {
                Ok(meta) => Ok(Some(meta)),
                Err(e) if is_absent(&e) => Ok(None),
                Err(e) => Err(e),
            }
        })?;
        if meta.is_none() {
            self.check_bucket()?;
        }
        Ok(meta)
    }

    /// A blob from the local cache: intact (its hash checked) and still present in the
    /// remote. `None` when the cache cannot answer; `Some(None)` when the remote has no such
    /// object any more (the cached copy is dropped).
    fn cached(&self, key: &str) -> Result<Option<Option<Vec<u8>>>> {
        let (Some(cache), Some(hash)) = (&self.cache, blob_hash(key)) else {
            return Ok(None);
        };
        let Ok(Some(bytes)) = cache.get(key) else {
            return Ok(None);
        };
        if hash_bytes(&bytes) != hash {
            tracing::warn!("dropping damaged cached copy of {key}");
            let _ = cache.delete(key);
            return Ok(None);
        }
        if self.head(key)?.is_none() {
            let _ = cache.delete(key);
            return Ok(Some(None));
        }
        Ok(Some(Some(bytes)))
    }

    /// Keeps an intact blob in the local cache (a failure to cache is not an error).
    fn remember(&self, key: &str, bytes: &[u8]) {
        if let (Some(cache), Some(hash)) = (&self.cache, blob_hash(key)) {
            if hash_bytes(bytes) == hash {
                if let Err(e) = cache.put(key, bytes) {
                    tracing::debug!("cannot cache {key}: {e}");
                }
            }
        }
    }

    fn forget(&self, key: &str) {
        if let (Some(cache), Some(_)) = (&self.cache, blob_hash(key)) {
            let _ = cache.delete(key);
        }
    }

    /// The store's clock minus this machine's, measured by writing a probe object and reading
    /// its modification time (the store's clock; second resolution).
    fn measure_offset(&self) -> Result<f64> {
        let n = PROBE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let key = format!(
            "tmp/.clock.{}-{}-{n}{TMP_SUFFIX}",
            host_name(),
            std::process::id()
        );
        let before = unix_now();
        self.put(&key, b"clock probe")?;
        let meta = self.head(&key)?;
        let after = unix_now();
        self.delete(&key)?;
        let modified = meta.map_or(before, |m| m.last_modified.timestamp_millis() as f64 / 1e3);
        // Second resolution: the store stamped somewhere in [modified, modified + 1).
        Ok(modified + 0.5 - (before + after) / 2.0)
    }
}

/// The object-store client for `url`, configured from the environment, with `deadlines` (and,
/// for S3, `endpoint` in place of the environment's when given).
fn build(
    url: &RemoteUrl,
    deadlines: &Deadlines,
    endpoint: Option<&str>,
) -> object_store::Result<Arc<dyn ObjectStore>> {
    use object_store::aws::AmazonS3Builder;
    use object_store::aws::AmazonS3ConfigKey as S3Key;
    use object_store::azure::AzureConfigKey as AzKey;
    use object_store::azure::MicrosoftAzureBuilder;
    use object_store::gcp::GoogleCloudStorageBuilder;
    use object_store::gcp::GoogleConfigKey as GsKey;
    use object_store::ClientConfigKey::{ConnectTimeout, Timeout};
    // Set one by one: the builders keep the other client options they read from the
    // environment (AWS_ALLOW_HTTP and the like).
    let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
    let (connect, request) = (ms(deadlines.connect), ms(deadlines.request));
    let retry = retry_config(deadlines);
    Ok(match url.service {
        Service::S3 => Arc::new(
            endpoint
                .into_iter()
                .fold(AmazonS3Builder::from_env(), |b, e| b.with_endpoint(e))
                .with_bucket_name(&url.bucket)
                .with_config(S3Key::Client(ConnectTimeout), connect)
                .with_config(S3Key::Client(Timeout), request)
                .with_retry(retry)
                .build()?,
        ),
        Service::Gcs => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(&url.bucket)
                .with_config(GsKey::Client(ConnectTimeout), connect)
                .with_config(GsKey::Client(Timeout), request)
                .with_retry(retry)
                .build()?,
        ),
        Service::Azure => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_container_name(&url.bucket)
                .with_config(AzKey::Client(ConnectTimeout), connect)
                .with_config(AzKey::Client(Timeout), request)
                .with_retry(retry)
                .build()?,
        ),
    })
}

impl Store for RemoteStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        if let Some(answer) = self.cached(key)? {
            return Ok(answer);
        }
        let got = self.fetch(key)?.map(|(bytes, _)| bytes);
        if let Some(bytes) = &got {
            self.remember(key, bytes);
        }
        Ok(got)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.put_mode(key, bytes, PutMode::Overwrite).map(|_| ())
    }

    fn put_content(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.put(key, bytes)
    }

    fn put_new(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        self.put_mode(key, bytes, PutMode::Create)
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        match self.fetch(key)? {
            None => Ok(None),
            Some((bytes, Some(e_tag))) => Ok(Some((bytes, Version(e_tag)))),
            Some((_, None)) => Err(self.remote(
                key,
                object_store::Error::NotSupported {
                    source: "the object store returned no ETag, so compare-and-swap is impossible"
                        .into(),
                },
            )),
        }
    }

    fn put_if(&self, key: &str, bytes: &[u8], expected: Option<&Version>) -> Result<bool> {
        let mode = match expected {
            None => PutMode::Create,
            Some(v) => PutMode::Update(UpdateVersion {
                e_tag: Some(v.0.clone()),
                version: None,
            }),
        };
        self.put_mode(key, bytes, mode)
    }

    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.head(key)?.is_some())
    }

    fn list_meta(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let prefix = prefix.trim_end_matches('/');
        let at = match (prefix.is_empty(), self.prefix.is_empty()) {
            (true, true) => None,
            (true, false) => Some(
                ObjectPath::parse(&self.prefix)
                    .map_err(|e| Error::Usage(format!("store prefix `{}`: {e}", self.prefix)))?,
            ),
            (false, _) => Some(self.loc(prefix)?),
        };
        let inner = self.inner.clone();
        let listed: Vec<object_store::ObjectMeta> = self.block(prefix, async move {
            inner.list(at.as_ref()).try_collect().await
        })?;
        let strip = match self.prefix.is_empty() {
            true => String::new(),
            false => format!("{}/", self.prefix),
        };
        let mut out: Vec<ObjectMeta> = listed
            .into_iter()
            .filter_map(|m| {
                let key = m.location.as_ref().strip_prefix(&strip)?.to_string();
                Some(ObjectMeta {
                    key,
                    size: m.size,
                    modified: m.last_modified.timestamp_millis() as f64 / 1e3,
                })
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.forget(key);
        let (inner, loc) = (self.inner.clone(), self.loc(key)?);
        self.block(key, async move {
            match inner.delete(&loc).await {
                Err(e) if !is_absent(&e) => Err(e),
                _ => Ok(()),
            }
        })
        .map_err(refused_write)
    }

    fn stat(&self, key: &str) -> Result<Option<ObjectMeta>> {
        Ok(self.head(key)?.map(|m| ObjectMeta {
            key: key.to_string(),
            size: m.size,
            modified: m.last_modified.timestamp_millis() as f64 / 1e3,
        }))
    }

    fn size(&self, key: &str) -> Result<u64> {
        Ok(self.head(key)?.map_or(0, |m| m.size))
    }

    fn local_path(&self, _key: &str) -> Option<PathBuf> {
        None
    }

    fn describe(&self) -> String {
        self.url.clone()
    }

    fn quarantine(&self, key: &str) -> Result<()> {
        self.forget(key);
        if let Some((bytes, _)) = self.fetch(key)? {
            self.put(&format!("{}/{key}", QUARANTINE), &bytes)?;
        }
        self.delete(key)
    }

    fn clock_offset(&self) -> Option<f64> {
        let offset = self.offset.get_or_init(|| {
            self.measure_offset().unwrap_or_else(|e| {
                tracing::warn!(
                    "cannot read the clock of {}: {e}; assuming it agrees with this machine's",
                    self.url
                );
                0.0
            })
        });
        Some(*offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_service_bucket_and_prefix() {
        let u = RemoteUrl::parse("s3://bkt/a/b/").expect("s3").expect("ok");
        assert_eq!(
            (u.service, u.bucket.as_str(), u.prefix.as_str()),
            (Service::S3, "bkt", "a/b")
        );
        assert_eq!(u.to_url(), "s3://bkt/a/b");
        let g = RemoteUrl::parse("gs://b").expect("gs").expect("ok");
        assert_eq!((g.service, g.prefix.as_str()), (Service::Gcs, ""));
        assert_eq!(g.to_url(), "gs://b");
        assert!(RemoteUrl::parse(".prefflow").is_none());
        assert!(RemoteUrl::parse("/tmp/x").is_none());
        for bad in ["s3://", "s3:///x", "s3://b/../x", "s3://b/a//c"] {
            let err = RemoteUrl::parse(bad).expect("scheme").expect_err(bad);
            assert!(err.is_user_error() && err.to_string().contains("SCHEME://BUCKET"));
        }
    }

    #[test]
    fn only_content_addressed_blobs_are_cached() {
        assert_eq!(blob_hash("blobs/ab/abcd.parquet"), Some("abcd"));
        assert_eq!(blob_hash("items/ab/abcd.json"), None);
        assert_eq!(blob_hash("runs/p/latest.json"), None);
        assert_eq!(blob_hash("blobs/abcd.parquet"), None);
    }

    /// A store whose endpoint refuses connections: every call fails with a typed error after
    /// its retries, from a plain thread and from inside another tokio runtime alike (where a
    /// careless `block_on` would panic).
    #[test]
    fn calls_work_from_runtime_threads_and_fail_typed() {
        let url = RemoteUrl::parse("s3://nobucket/p")
            .expect("s3")
            .expect("ok");
        let builder = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("nobucket")
            .with_region("us-east-1")
            .with_endpoint("http://127.0.0.1:9")
            .with_allow_http(true)
            .with_access_key_id("x")
            .with_secret_access_key("y")
            .with_retry(RetryConfig {
                max_retries: 0,
                ..Default::default()
            });
        let mut store = RemoteStore::open(&url).expect("open");
        store.inner = Arc::new(builder.build().expect("build"));
        let store = Arc::new(store.with_cache(None));
        let err = store.get("runs/p/latest.json").expect_err("refused");
        assert!(matches!(err, Error::Remote { .. }), "{err}");
        assert!(err.to_string().contains("s3://nobucket/p"), "{err}");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("rt");
        let inside = store.clone();
        let from_async = rt.block_on(async move {
            tokio::spawn(async move { inside.exists("leases/x.json").is_err() })
                .await
                .expect("no panic")
        });
        assert!(from_async);
        // Dropping the last handle on a runtime thread must not panic either.
        rt.block_on(async move { drop(store) });
    }
}
