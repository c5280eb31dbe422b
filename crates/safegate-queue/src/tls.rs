//! TLS for `rediss://` URLs (feature `tls`): which certificate authority to trust and, for
//! mutual TLS, the client's certificate and key.

use std::path::Path;

use crate::QueueError;

/// TLS settings for [`Queue::connect_tls`](crate::Queue::connect_tls) and
/// [`Queue::connect_cluster_tls`](crate::Queue::connect_cluster_tls). The default trusts the
/// system's root certificates and presents no client certificate; a plain `rediss://` URL
/// given to [`Queue::connect`](crate::Queue::connect) uses the default.
///
/// ```
/// # fn main() -> Result<(), safegate_queue::QueueError> {
/// # let dir = std::env::temp_dir().join(format!("sgq-tls-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # let ca = dir.join("ca.pem");
/// # std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n").unwrap();
/// use safegate_queue::Tls;
/// // A private CA, no client certificate (the server does not ask for one).
/// let tls = Tls::from_files(Some(&ca), None, None)?;
/// # let _ = tls;
/// // A missing file is an error naming it.
/// assert!(Tls::from_files(Some(std::path::Path::new("/no/such/ca.pem")), None, None)
///     .unwrap_err()
///     .to_string()
///     .contains("/no/such/ca.pem"));
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct Tls {
    pub(crate) ca: Option<Vec<u8>>,
    pub(crate) client: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never shown.
        f.debug_struct("Tls").field("ca", &self.ca.is_some()).field("client", &self.client.is_some()).finish()
    }
}

impl Tls {
    /// The system's roots, no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trust this certificate authority (PEM) instead of the system's roots.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(pem.into());
        self
    }

    /// Present this certificate and private key (PEM each) for mutual TLS
    /// (`tls-auth-clients yes` on the server).
    pub fn client_pem(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.client = Some((cert.into(), key.into()));
        self
    }

    /// Read the files: `ca` (the authority to trust), and `cert` with `key` (mutual TLS;
    /// both or neither). An unreadable file is an error naming it.
    pub fn from_files(ca: Option<&Path>, cert: Option<&Path>, key: Option<&Path>) -> Result<Self, QueueError> {
        let read = |what: &'static str, p: &Path| {
            std::fs::read(p).map_err(|e| QueueError::setting(what, p.display(), io_rule(&e)))
        };
        let mut tls = Self::new();
        if let Some(p) = ca {
            tls = tls.ca_pem(read("TLS CA file", p)?);
        }
        match (cert, key) {
            (Some(c), Some(k)) => tls = tls.client_pem(read("TLS certificate file", c)?, read("TLS key file", k)?),
            (Some(c), None) => {
                return Err(QueueError::setting("TLS certificate file", c.display(), "needs its key file too"))
            }
            (None, Some(k)) => {
                return Err(QueueError::setting("TLS key file", k.display(), "needs its certificate file too"))
            }
            (None, None) => {}
        }
        Ok(tls)
    }

    pub(crate) fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(c, k)| redis::ClientTlsConfig { client_cert: c.clone(), client_key: k.clone() }),
            root_cert: self.ca.clone(),
        }
    }
}

fn io_rule(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file",
        std::io::ErrorKind::PermissionDenied => "not readable (permission denied)",
        _ => "not readable",
    }
}
