//! What a failed object-store request means for the user.
//!
//! Two questions decide what happens next: is this a setup mistake only the user can fix (a
//! bucket that does not exist, rejected credentials, the wrong region, no access), which must
//! stop the command at once with exit code 2, the bucket and endpoint named and the fix; and
//! did the endpoint simply not answer (a timeout), which marks the store silent. Everything
//! else is an ordinary failure, counted by [`FailureLog`] so that an outage is one warning per
//! distinct cause instead of one line per request.

use std::collections::BTreeMap;
use std::sync::Mutex;

use object_store::client::{HttpError, HttpErrorKind};

/// The object-store services a `--store` URL can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// Amazon S3 or an S3-compatible server (`s3://`).
    S3,
    /// Google Cloud Storage (`gs://`).
    Gcs,
    /// Azure Blob Storage (`az://`).
    Azure,
}

/// Where a remote store is, for messages: its URL, bucket and endpoint.
#[derive(Debug, Clone)]
pub struct Place {
    /// `s3://bucket/prefix`.
    pub url: String,
    /// The bucket (or container).
    pub bucket: String,
    /// Which service.
    pub service: Service,
    /// The endpoint requests go to (from the environment; the service's own when unset).
    pub endpoint: String,
}

impl Place {
    /// The place of a store at `url` on `service`, with the endpoint the environment names.
    pub fn new(url: String, bucket: String, service: Service) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let endpoint = match service {
            Service::S3 => var("AWS_ENDPOINT_URL")
                .or_else(|| var("AWS_ENDPOINT"))
                .unwrap_or_else(|| {
                    let region = var("AWS_REGION")
                        .or_else(|| var("AWS_DEFAULT_REGION"))
                        .unwrap_or_else(|| "us-east-1".into());
                    format!("https://s3.{region}.amazonaws.com")
                }),
            Service::Gcs => "https://storage.googleapis.com".into(),
            Service::Azure => var("AZURE_STORAGE_ACCOUNT_NAME")
                .map(|a| format!("https://{a}.blob.core.windows.net"))
                .unwrap_or_else(|| "Azure Blob Storage".into()),
        };
        Self {
            url,
            bucket,
            service,
            endpoint,
        }
    }

    /// `s3://bucket/prefix (endpoint http://…)`.
    pub fn describe(&self) -> String {
        format!("{} (endpoint {})", self.url, self.endpoint)
    }

    fn credentials(&self) -> &'static str {
        match self.service {
            Service::S3 => "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials, which expire)",
            Service::Gcs => "GOOGLE_SERVICE_ACCOUNT (or GOOGLE_APPLICATION_CREDENTIALS)",
            Service::Azure => "AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY",
        }
    }
}

/// The `<Code>…</Code>` of an S3-style error body in `text`, if any.
fn error_code(text: &str) -> Option<&str> {
    let start = text.find("<Code>")? + "<Code>".len();
    let end = text[start..].find("</Code>")? + start;
    Some(&text[start..end])
}

/// The setup mistake `e` reveals, as the message to show (store, bucket, endpoint and the
/// fix), or `None` when `e` is not one.
pub fn misconfiguration(e: &object_store::Error, place: &Place) -> Option<String> {
    let text = e.to_string();
    let code = error_code(&text).unwrap_or_default();
    let (bucket, url, endpoint) = (&place.bucket, &place.url, &place.endpoint);
    let missing_bucket = matches!(code, "NoSuchBucket" | "ContainerNotFound")
        || text.contains("bucket does not exist");
    if missing_bucket {
        return Some(format!(
            "the bucket `{bucket}` does not exist at {endpoint} (store {url}): check the bucket name in --store (a typo?) and the endpoint, or create the bucket first (e.g. `aws s3 mb s3://{bucket}`)"
        ));
    }
    let bad_credentials = matches!(
        code,
        "InvalidAccessKeyId"
            | "SignatureDoesNotMatch"
            | "InvalidToken"
            | "ExpiredToken"
            | "InvalidClientTokenId"
            | "AuthenticationFailed"
    ) || matches!(e, object_store::Error::Unauthenticated { .. });
    if bad_credentials {
        return Some(format!(
            "{endpoint} rejected the credentials for {url}{}: check {} in the environment",
            shown(code),
            place.credentials()
        ));
    }
    let region = matches!(
        code,
        "PermanentRedirect" | "AuthorizationHeaderMalformed" | "IllegalLocationConstraintException"
    ) || text.contains("incorrectly configured region")
        || text.contains("301 Moved Permanently");
    if region {
        let said = between(&text, "<Region>", "</Region>")
            .map(|r| format!(" (the server says it is in `{r}`)"))
            .unwrap_or_default();
        return Some(format!(
            "the bucket `{bucket}` is not in the region this client uses{said} (store {url}, endpoint {endpoint}{}): set AWS_REGION to the bucket's region, or AWS_ENDPOINT_URL to its regional endpoint",
            match code.is_empty() {
                true => String::new(),
                false => format!(", {code}"),
            }
        ));
    }
    let denied = matches!(
        code,
        "AccessDenied" | "AllAccessDisabled" | "AuthorizationFailure"
    ) || matches!(e, object_store::Error::PermissionDenied { .. });
    if denied {
        return Some(format!(
            "access denied to {url} at {endpoint}{}: the credentials in the environment may not use this bucket or prefix; ask for read, write, delete and list permission on it (S3: s3:GetObject, s3:PutObject, s3:DeleteObject, s3:ListBucket), or use a prefix you may write",
            shown(code)
        ));
    }
    None
}

fn shown(code: &str) -> String {
    match code.is_empty() {
        true => String::new(),
        false => format!(" ({code})"),
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// Whether `e` says a request timed out (the endpoint took too long to answer).
pub fn timed_out(e: &object_store::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(http) = s.downcast_ref::<HttpError>() {
            return http.kind() == HttpErrorKind::Timeout;
        }
        source = s.source();
    }
    false
}

/// A short name for the kind of failure `e` is, for counting: an S3 error code, an HTTP
/// error class, or the transport error's kind.
pub fn cause(e: &object_store::Error) -> String {
    let text = e.to_string();
    if let Some(code) = error_code(&text) {
        return code.to_string();
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(http) = s.downcast_ref::<HttpError>() {
            return format!("transport error ({:?})", http.kind());
        }
        source = s.source();
    }
    if let Some(rest) = text.split("status code: ").nth(1) {
        return format!("HTTP {}", rest.split(':').next().unwrap_or(rest).trim());
    }
    text.chars().take(80).collect()
}

/// Failures of one store by cause: the first of each cause is a warning, the rest are counted
/// (debug), and [`FailureLog::summary`] gives one line per cause with its count.
#[derive(Debug, Default)]
pub struct FailureLog {
    counts: Mutex<BTreeMap<String, u64>>,
}

impl FailureLog {
    /// Counts a failure of `cause` (described by `message`); warns only on a cause's first.
    pub fn note(&self, store: &str, cause: &str, message: &str) {
        let first = match self.counts.lock() {
            Ok(mut counts) => {
                let n = counts.entry(cause.to_string()).or_insert(0);
                *n += 1;
                *n == 1
            }
            Err(_) => true,
        };
        if first {
            tracing::warn!("{store}: {message} (further failures like this are counted, not logged; PREFFLOW_LOG=debug shows each)");
        } else {
            tracing::debug!("{store}: {message}");
        }
    }

    /// One line per cause that failed more than once: `N × cause`.
    pub fn summary(&self) -> Vec<String> {
        self.counts
            .lock()
            .map(|c| {
                c.iter()
                    .filter(|(_, &n)| n > 1)
                    .map(|(cause, n)| format!("{n} × {cause}"))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Place {
        Place {
            url: "s3://typo/p".into(),
            bucket: "typo".into(),
            service: Service::S3,
            endpoint: "http://127.0.0.1:9".into(),
        }
    }

    fn generic(body: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: format!("Server returned non-2xx status code: 400 Bad Request: {body}").into(),
        }
    }

    #[test]
    fn setup_mistakes_name_the_bucket_endpoint_and_fix() {
        let nf = object_store::Error::NotFound {
            path: "p/leases/x.json".into(),
            source: "404 Not Found: <Error><Code>NoSuchBucket</Code></Error>".into(),
        };
        let m = misconfiguration(&nf, &place()).expect("missing bucket");
        assert!(
            m.contains("`typo` does not exist at http://127.0.0.1:9") && m.contains("aws s3 mb"),
            "{m}"
        );
        let key = object_store::Error::NotFound {
            path: "p/x".into(),
            source: "<Code>NoSuchKey</Code>".into(),
        };
        assert_eq!(misconfiguration(&key, &place()), None);
        let creds = generic("<Error><Code>InvalidAccessKeyId</Code></Error>");
        let m = misconfiguration(&creds, &place()).expect("credentials");
        assert!(
            m.contains("rejected the credentials") && m.contains("AWS_SECRET_ACCESS_KEY"),
            "{m}"
        );
        let region = generic(
            "<Error><Code>AuthorizationHeaderMalformed</Code><Region>eu-west-1</Region></Error>",
        );
        let m = misconfiguration(&region, &place()).expect("region");
        assert!(m.contains("`eu-west-1`") && m.contains("AWS_REGION"), "{m}");
        let denied = object_store::Error::PermissionDenied {
            path: "p/x".into(),
            source: "<Code>AccessDenied</Code>".into(),
        };
        let m = misconfiguration(&denied, &place()).expect("denied");
        assert!(
            m.contains("access denied to s3://typo/p") && m.contains("s3:PutObject"),
            "{m}"
        );
        assert_eq!(cause(&denied), "AccessDenied");
    }

    #[test]
    fn failures_are_counted_by_cause() {
        let log = FailureLog::default();
        for _ in 0..3 {
            log.note("s3://b", "SlowDown", "slow down");
        }
        log.note("s3://b", "HTTP 500", "boom");
        assert_eq!(log.summary(), vec!["3 × SlowDown".to_string()]);
    }
}
