//! Priority classes: which class a request belongs to (0 is the most important).
//!
//! DAGOR (Zhou et al., "Overload Control for Scaling WeChat Microservices", SoCC 2018,
//! §4.2) sheds by a business priority and, within it, a user priority taken from a hash of
//! the user id, so that one user's requests are consistently in or out during overload
//! rather than failing at random. [`HeaderClass`] reads the business class from a header;
//! [`UserHashClass`] hashes a user header into classes. Any `Fn(&Req) -> u8` is a
//! classifier too.

/// Assigns a request its priority class, `0..classes` (0 is the most important; lower
/// classes, i.e. larger numbers, are shed first). Values at or above the layer's class
/// count are treated as its lowest class.
pub trait Classify<Req> {
    /// The request's class.
    fn class(&self, req: &Req) -> u8;
}

/// Every request in class 0 (the default: no priorities).
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleClass;

impl<Req> Classify<Req> for SingleClass {
    #[inline]
    fn class(&self, _req: &Req) -> u8 {
        0
    }
}

impl<Req, F: Fn(&Req) -> u8> Classify<Req> for F {
    #[inline]
    fn class(&self, req: &Req) -> u8 {
        self(req)
    }
}

/// The class from a request header holding a decimal number (`x-priority: 2`); a missing
/// or unparsable header gives `default`.
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub struct HeaderClass {
    name: http::HeaderName,
    default: u8,
}

#[cfg(feature = "http")]
impl HeaderClass {
    /// Read the class from header `name`, `default` when absent or not a number.
    pub fn new(name: http::HeaderName, default: u8) -> Self {
        Self { name, default }
    }
}

#[cfg(feature = "http")]
impl<B> Classify<http::Request<B>> for HeaderClass {
    fn class(&self, req: &http::Request<B>) -> u8 {
        req.headers()
            .get(&self.name)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.trim().parse::<u8>().ok())
            .unwrap_or(self.default)
    }
}

/// DAGOR's user priority: a hash of a user-identifying header (`x-user-id`) into
/// `classes` classes, so that a user is consistently in one class; requests without the
/// header go to the lowest class. The hash is FNV-1a (Fowler, Noll, Vo; public domain),
/// salted so operators can rotate which users are shed first.
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub struct UserHashClass {
    name: http::HeaderName,
    classes: u8,
    salt: u64,
}

#[cfg(feature = "http")]
impl UserHashClass {
    /// Hash header `name` into `classes` classes (at least 1) with `salt`.
    pub fn new(name: http::HeaderName, classes: u8, salt: u64) -> Self {
        Self { name, classes: classes.max(1), salt }
    }
}

/// FNV-1a over `bytes`, starting from the offset basis xor `salt`.
pub(crate) fn fnv1a(bytes: &[u8], salt: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ salt;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(feature = "http")]
impl<B> Classify<http::Request<B>> for UserHashClass {
    fn class(&self, req: &http::Request<B>) -> u8 {
        match req.headers().get(&self.name) {
            Some(v) => (fnv1a(v.as_bytes(), self.salt) % u64::from(self.classes)) as u8,
            None => self.classes - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closures_classify() {
        let c = |r: &u32| (*r % 3) as u8;
        assert_eq!(Classify::class(&c, &5), 2);
        assert_eq!(Classify::<u32>::class(&SingleClass, &5), 0);
    }

    #[cfg(feature = "http")]
    #[test]
    fn header_and_user_hash() {
        let h = HeaderClass::new(http::HeaderName::from_static("x-priority"), 3);
        let req = http::Request::builder().header("x-priority", " 1 ").body(()).unwrap();
        assert_eq!(h.class(&req), 1);
        let req = http::Request::builder().header("x-priority", "high").body(()).unwrap();
        assert_eq!(h.class(&req), 3);
        let u = UserHashClass::new(http::HeaderName::from_static("x-user-id"), 4, 7);
        let a = http::Request::builder().header("x-user-id", "alice").body(()).unwrap();
        let a2 = http::Request::builder().header("x-user-id", "alice").body(()).unwrap();
        assert_eq!(u.class(&a), u.class(&a2));
        assert!(u.class(&a) < 4);
        assert_eq!(u.class(&http::Request::new(())), 3);
        // The hash spreads users over the classes.
        let mut seen = [0u32; 4];
        for i in 0..400 {
            let r = http::Request::builder().header("x-user-id", format!("user-{i}")).body(()).unwrap();
            seen[u.class(&r) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 60), "{seen:?}");
    }
}
