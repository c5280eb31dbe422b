//! TLS (`rediss://`) against a redis-server that speaks only TLS, with a CA and
//! certificates the test makes: a private CA, mutual TLS, and the refusals.

#![cfg(feature = "tls")]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use safegate_queue::{Job, Queue, QueueError, Tls, Worker};

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files in a
/// temporary directory (removed when dropped).
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn make(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sgq-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // Distinct names: OpenSSL takes a leaf whose subject is its issuer for self-signed.
        ca.distinguished_name.push(DnType::CommonName, "safegate test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let leaf = |names: Vec<String>, usage: Vec<ExtendedKeyUsagePurpose>, name: &str| {
            let mut p = CertificateParams::new(names).unwrap();
            p.extended_key_usages = usage;
            p.distinguished_name.push(DnType::CommonName, name);
            let key = KeyPair::generate().unwrap();
            let cert: Certificate = p.signed_by(&key, &ca_cert, &ca_key).unwrap();
            std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
            std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
        };
        // Cluster nodes present their server certificate as clients on the cluster bus.
        let server = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        leaf(vec!["127.0.0.1".into(), "localhost".into()], server, "server");
        leaf(vec!["worker".into()], vec![ExtendedKeyUsagePurpose::ClientAuth], "client");
        std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
        Self { dir }
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }

    fn server(&self, auth_clients: bool) -> common::Redis {
        common::Redis::start_tls(&self.path("server.pem"), &self.path("server.key"), &self.path("ca.pem"), auth_clients)
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ca_only(pki: &Pki) -> Tls {
    Tls::from_files(Some(&pki.path("ca.pem")), None, None).unwrap()
}

/// Enqueue `n` jobs and work them on `q`; the books balance.
async fn round_trip(q: &Queue, n: u32) {
    let p = q.producer::<u32>();
    for i in 0..n {
        assert!(p.enqueue(&i).await.unwrap().is_admitted());
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let w = tokio::spawn(Worker::new(q).lanes(2).run(|_: Job<u32>| async { Ok(()) }, async move {
        let _ = stopped.await;
    }));
    let t0 = Instant::now();
    while q.stats().await.unwrap().completed < u64::from(n) {
        assert!(t0.elapsed() < Duration::from_secs(20), "{n} jobs not done over TLS within 20 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(()).unwrap();
    assert_eq!(w.await.unwrap().unwrap().completed, u64::from(n));
    let s = q.stats().await.unwrap();
    assert!(s.balanced(), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_ca_carries_jobs_and_the_others_are_refused_by_name() {
    let pki = Pki::make("ca");
    let r = pki.server(false);
    let url = r.url();
    assert!(url.starts_with("rediss://"), "{url}");

    let q = Queue::connect_tls(&url, "secure", &ca_only(&pki)).await.unwrap();
    round_trip(&q, 50).await;

    // The system's roots do not know the test's CA: refused, within the connect timeout.
    let t0 = Instant::now();
    let e = Queue::connect(&url, "secure").await.unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(10), "refusal took {:?}", t0.elapsed());
    assert!(matches!(e, QueueError::Redis { .. }), "{e}");
    let msg = format!("{e} {:?}", std::error::Error::source(&e));
    assert!(msg.to_lowercase().contains("certificate") || msg.contains("UnknownIssuer"), "{msg}");

    // Plain TCP to a TLS-only port: an error, not a hang.
    let plain = url.replace("rediss://", "redis://");
    let t0 = Instant::now();
    assert!(Queue::connect(&plain, "secure").await.is_err());
    assert!(t0.elapsed() < Duration::from_secs(10), "plain connect took {:?}", t0.elapsed());

    // TLS settings with a redis:// URL: refused before any connection.
    let e = Queue::connect_tls(&plain, "secure", &ca_only(&pki)).await.unwrap_err();
    assert!(e.to_string().contains("rediss://"), "{e}");

    // A CA file that is not PEM: an error, not a panic.
    let junk = pki.path("junk.pem");
    std::fs::write(&junk, b"not a certificate").unwrap();
    let e = Queue::connect_tls(&url, "secure", &Tls::new().ca_pem(std::fs::read(&junk).unwrap())).await;
    assert!(e.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::make("mtls");
    let r = pki.server(true);
    let url = r.url();
    // Without a client certificate the server ends the handshake.
    assert!(Queue::connect_tls(&url, "mutual", &ca_only(&pki)).await.is_err());
    let tls = Tls::from_files(Some(&pki.path("ca.pem")), Some(&pki.path("client.pem")), Some(&pki.path("client.key")))
        .unwrap();
    let q = Queue::connect_tls(&url, "mutual", &tls).await.unwrap();
    round_trip(&q, 20).await;
    // The Debug form never shows the key.
    assert!(!format!("{tls:?}").contains("PRIVATE KEY"));
}

#[test]
fn half_a_client_pair_and_missing_files_are_named() {
    let e = Tls::from_files(None, Some(Path::new("/tmp/c.pem")), None).unwrap_err();
    assert!(e.to_string().contains("/tmp/c.pem") && e.to_string().contains("key"), "{e}");
    let e = Tls::from_files(Some(Path::new("/no/such/ca.pem")), None, None).unwrap_err();
    assert!(e.to_string().contains("/no/such/ca.pem") && e.to_string().contains("no such file"), "{e}");
}

#[test]
fn a_tls_cluster_carries_jobs() {
    let pki = Pki::make("cluster");
    let cluster =
        common::Cluster::start_tls(3, (&pki.path("server.pem"), &pki.path("server.key"), &pki.path("ca.pem")));
    let urls = cluster.urls();
    assert!(urls.iter().all(|u| u.starts_with("rediss://")), "{urls:?}");
    let entry: Vec<&str> = urls.iter().take(1).map(String::as_str).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        for name in ["mail", "images", "billing"] {
            let q = Queue::connect_cluster_tls(&entry, name, &ca_only(&pki)).await.unwrap();
            round_trip(&q, 20).await;
        }
        let e = Queue::connect_cluster_tls(&["redis://127.0.0.1:1/"], "mail", &ca_only(&pki)).await.unwrap_err();
        assert!(e.to_string().contains("rediss://"), "{e}");
    });
}
