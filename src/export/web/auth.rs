//! `basic_auth_users`: a request's user name and password checked against the bcrypt hashes,
//! as the exporter-toolkit checks them. bcrypt is slow on purpose, so outcomes are cached (by a
//! SHA-256 of user, hash and password, never the password itself; at most [`CACHED`], as the
//! toolkit keeps) and looked up before any wait, one verification runs at a time, an unknown
//! user costs a bcrypt all the same, and names and outcomes are compared in constant time.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use base64::Engine as _;
use subtle::ConstantTimeEq;

/// How many outcomes are kept.
const CACHED: usize = 100;

/// The outcomes of recent checks, by digest of user, hash and password.
#[derive(Default)]
pub struct Verified {
    outcomes: Mutex<HashMap<[u8; 32], bool>>,
    /// One bcrypt at a time, as the toolkit: a flood of wrong passwords costs one core.
    bcrypt: Mutex<()>,
}

/// The user name and password of a `Basic` `Authorization` header.
pub fn credentials(header: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(header).ok()?;
    let (scheme, encoded) = text.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// A hash nobody's password matches, for an unknown user: the same cost as a known one's.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| bcrypt::hash("reasonix-exporter: no such user", 10).unwrap_or_default())
}

/// The hash `user`'s password is checked against (the decoy for an unknown user), and whether
/// the user is known; names compared in constant time.
fn hash_of<'a>(users: &'a [(String, String)], user: &str) -> (&'a str, bool) {
    let mut hash = None;
    for (name, hashed) in users {
        if bool::from(name.as_bytes().ct_eq(user.as_bytes())) {
            hash = Some(hashed.as_str());
        }
    }
    match hash {
        Some(hash) => (hash, true),
        None => (decoy(), false),
    }
}

impl Verified {
    /// The outcome for `user` with `password` if a check of the same three is cached, without
    /// waiting for bcrypt: credentials already checked are never held up behind a flood of
    /// wrong ones (as the toolkit looks at its cache before its bcrypt lock).
    pub fn cached(&self, users: &[(String, String)], user: &str, password: &str) -> Option<bool> {
        let (hash, known) = hash_of(users, user);
        let key = digest(user, hash, password);
        let matched = self
            .outcomes
            .lock()
            .map(|o| o.get(&key).copied())
            .unwrap_or(None)?;
        Some(bool::from((matched as u8 & known as u8).ct_eq(&1)))
    }

    /// Whether `user` with `password` is one of `users` (blocking: run it off the runtime).
    pub fn check(&self, users: &[(String, String)], user: &str, password: &str) -> bool {
        let (hash, known) = hash_of(users, user);
        let key = digest(user, hash, password);
        let cached = self.outcomes.lock().map(|o| o.get(&key).copied()).unwrap_or(None);
        let matched = match cached {
            Some(matched) => matched,
            None => {
                let _one = self.bcrypt.lock();
                let matched = bcrypt::verify(password, hash).unwrap_or(false);
                if let Ok(mut outcomes) = self.outcomes.lock() {
                    if outcomes.len() >= CACHED {
                        // A tenth goes, whichever the map yields first: no order to game.
                        let gone: Vec<[u8; 32]> = outcomes.keys().take(CACHED / 10).copied().collect();
                        for key in gone {
                            outcomes.remove(&key);
                        }
                    }
                    outcomes.insert(key, matched);
                }
                matched
            }
        };
        bool::from((matched as u8 & known as u8).ct_eq(&1))
    }
}

/// SHA-256 of the three, each with its length, so that no two triples share a digest.
fn digest(user: &str, hash: &str, password: &str) -> [u8; 32] {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [user, hash, password] {
        context.update(&(part.len() as u64).to_be_bytes());
        context.update(part.as_bytes());
    }
    let mut out = [0; 32];
    out.copy_from_slice(context.finish().as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_with_the_password_passes_and_nothing_else_does() {
        let users = vec![("alice".to_string(), bcrypt::hash("s3cret", 4).unwrap())];
        let verified = Verified::default();
        assert!(verified.check(&users, "alice", "s3cret"));
        // Cached, and still right.
        assert!(verified.check(&users, "alice", "s3cret"));
        assert!(!verified.check(&users, "alice", "wrong"));
        assert!(!verified.check(&users, "bob", "s3cret"));
        // A user name made to look like a cache key of another.
        let forged = format!("alice{}", users[0].1);
        assert!(!verified.check(&users, &forged, "s3cret"));
    }

    #[test]
    fn basic_credentials_are_read_and_anything_else_is_none() {
        assert_eq!(
            credentials(b"Basic YWxpY2U6czNjcjp0"),
            Some(("alice".into(), "s3cr:t".into()))
        );
        assert_eq!(credentials(b"Bearer abc"), None);
        assert_eq!(credentials(b"Basic !!!"), None);
    }
}
